package eventual_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/patterns/table"
)

func countReq(reqs []reqView, method, part string) int {
	n := 0
	for _, r := range reqs {
		if r.Method == method && strings.Contains(r.URL, part) {
			n++
		}
	}
	return n
}

type reqView struct{ Method, URL string }

func TestEnqueueAndCommitRoundTrips(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()

	// Direct: the order exists; the intent alone is 1 round trip.
	if _, err := r.orders.Insert(ctx, order{Customer: "c1", ID: "o1", Email: "a@x", Total: 10}); err != nil {
		t.Fatal(err)
	}
	r.qft.Reset()
	if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
		t.Fatal(err)
	}
	if n := r.qft.Count(); n != 1 {
		t.Fatalf("Enqueue: %d round trips, want 1", n)
	}

	// With a primary write: reserve, commit, release = 3.
	r.qft.Reset()
	r.tft.Reset()
	res, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c2", ID: "o2", Email: "b@x", Total: 20})}, indexKind.New(indexOrder{"c2", "o2", "b@x"}))
	if err != nil || !res.Released || len(res.Intents) != 1 || res.Batch.Ops[0].ETag == "" {
		t.Fatalf("Commit: %+v, %v", res, err)
	}
	if q, tb := r.qft.Count(), r.tft.Count(); q != 2 || tb != 1 {
		t.Fatalf("Commit: %d queue + %d table round trips, want 2 + 1", q, tb)
	}
	if got := func() int { p, _ := table.Collect(r.orders.Query(ctx, nil)); return len(p) }(); got != 2 {
		t.Fatalf("a typed query of the orders sees %d rows, want the 2 orders (the commit record is reserved)", got)
	}
	pending, err := table.Collect(r.q.Pending(ctx, nil))
	if err != nil || len(pending) != 1 || pending[0].ID != res.Intents[0].ID || pending[0].PartitionKey != "c2" || pending[0].Poisoned {
		t.Fatalf("Pending before the worker: %+v, %v", pending, err)
	}

	w := r.worker(t, nil)
	r.qft.Reset()
	r.tft.Reset()
	stop := start(t, w)
	drain(t, w)
	stop()
	// Per intent: the handler's 2 table requests, plus 2 for the committed
	// one (its commit record read before the handler, to check that this
	// message owns it, and removed after); 1 message delete each.
	var tv, qv []reqView
	for _, x := range r.tft.Requests() {
		tv = append(tv, reqView{x.Method, x.URL})
	}
	for _, x := range r.qft.Requests() {
		qv = append(qv, reqView{x.Method, x.URL})
	}
	if n := len(tv); n != 6 {
		t.Fatalf("worker: %d table requests, want 6 (2 handlers x 2 + 1 record read + 1 record removal): %v", n, tv)
	}
	if n := countReq(qv, http.MethodDelete, "/messages/"); n != 2 {
		t.Fatalf("worker: %d message deletes, want 2", n)
	}
	if n := countReq(qv, http.MethodPut, "/messages/"); n != 0 {
		t.Fatalf("worker: %d message updates, want none (no renewals or failures)", n)
	}
	if got, want := r.indexRows(t), r.wantIndex(t); len(got) != 2 || got["a@x/c1_o1"] != 10 || got["b@x/c2_o2"] != 20 {
		t.Fatalf("index %v, want %v", got, want)
	}
	if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
		t.Fatalf("%d commit records and %d messages left", recs, msgs)
	}
}

// An intent whose release was lost costs the worker one read of its commit
// record; one whose batch never applied, the read and the aborted record's
// insert, and no handler run.
func TestUnreleasedRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		crash         string
		reads, writes int
	}{{"release", 1, 0}, {"commit", 1, 1}} {
		t.Run(c.crash, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			r.crashAt(c.crash, 1)
			d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
			_, err := r.q.Commit(context.Background(), r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x"})}, d)
			if !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
			r.tft.Reset()
			w := r.worker(t, nil)
			stop := start(t, w)
			drain(t, w)
			stop()
			reads, writes := 0, 0
			for _, q := range r.tft.Requests() {
				switch {
				case q.Method == http.MethodGet && strings.Contains(q.URL, "intent~"+d.ID()):
					reads++
				case q.Method == http.MethodPost && strings.Contains(string(q.Body), "intent~"+d.ID()):
					writes++
				}
			}
			if reads != c.reads || writes != c.writes {
				t.Fatalf("record reads %d, inserts %d; want %d, %d", reads, writes, c.reads, c.writes)
			}
			if runs := r.runsOf(d.ID()); (runs == 1) != (c.crash == "release") {
				t.Fatalf("the handler ran %d times", runs)
			}
		})
	}
}
