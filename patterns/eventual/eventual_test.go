package eventual_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/patterns/eventual"

	"github.com/tablekit/tablekit/internal/testrig"
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
	r.Faults.Reset()
	if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
		t.Fatal(err)
	}
	if n := r.Faults.Count(); n != 1 {
		t.Fatalf("Enqueue: %d round trips, want 1", n)
	}

	// With a primary write: reserve, commit, release = 3.
	r.Faults.Reset()
	res, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c2", ID: "o2", Email: "b@x", Total: 20})}, indexKind.New(indexOrder{"c2", "o2", "b@x"}))
	if err != nil || !res.Released || len(res.Intents) != 1 || res.Batch.Ops[0].ETag == "" {
		t.Fatalf("Commit: %+v, %v", res, err)
	}
	if q, tb := len(r.requests(r.isQueue)), len(r.requests(r.isTable)); q != 2 || tb != 1 || r.Faults.Count() != 3 {
		t.Fatalf("Commit: %d queue + %d table round trips, want 2 + 1", q, tb)
	}
	if got := func() int { p, _ := table.Collect(r.orders.Query(ctx, nil)); return len(p) }(); got != 2 {
		t.Fatalf("a typed query of the orders sees %d rows, want the 2 orders (the commit record is reserved)", got)
	}
	pending, err := table.Collect(r.q.Pending(ctx, nil))
	if err != nil || len(pending) != 1 || pending[0].ID != res.Intents[0].ID || pending[0].PartitionKey != "c2" || pending[0].Poisoned {
		t.Fatalf("Pending before the worker: %+v, %v", pending, err)
	}

	// A lease no loaded machine outlasts: a lease lost while a handler
	// runs redelivers its message, with requests of its own.
	w := r.worker(t, longLease())
	r.Faults.Reset()
	stop := start(t, w)
	drain(t, w)
	stop()
	// Per intent: the handler's 3 table requests (read, write, read again
	// to check the order did not change meanwhile), plus 2 for the committed
	// one (its commit record read before the handler, to check that this
	// message owns it, and removed after); 1 message delete each.
	var tv, qv []reqView
	for _, x := range r.requests(r.isTable) {
		tv = append(tv, reqView{x.Method, x.URL})
	}
	for _, x := range r.requests(r.isQueue) {
		qv = append(qv, reqView{x.Method, x.URL})
	}
	if n := len(tv); n != 8 {
		t.Fatalf("worker: %d table requests, want 8 (2 handlers x 3 + 1 record read + 1 record removal): %v", n, tv)
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
			r.crash.At(c.crash, 1)
			d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
			_, err := r.q.Commit(context.Background(), r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x"})}, d)
			if !errors.Is(err, testrig.ErrCrash) {
				t.Fatal(err)
			}
			r.Faults.Reset()
			w := r.worker(t, nil)
			stop := start(t, w)
			drain(t, w)
			stop()
			reads, writes := 0, 0
			for _, q := range r.requests(r.isTable) {
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

// New needs the queue and the poison queue; nil Options are defaults (a
// Queue for Enqueue alone), and NewWorker's nil options too.
func TestNewWithNilOptions(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	q, err := eventual.New(r.queue, r.poison, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := eventual.NewKind[string]("plain")
	var ran atomic.Int32
	w, err := eventual.NewWorker(q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error {
		ran.Add(1)
		return nil
	})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, k.New("x")); err != nil {
		t.Fatal(err)
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	if ran.Load() != 1 {
		t.Fatalf("the intent ran %d times, want once", ran.Load())
	}
	// Without Options.Tables, Commit refuses every table.
	_, err = q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c", ID: "1"})}, k.New("y"))
	if !errors.Is(err, eventual.ErrInvalid) {
		t.Fatalf("Commit without Options.Tables: %v", err)
	}
}

// Every validation error of the package matches its ErrInvalid and
// table.ErrInvalid (key errors table.ErrInvalidKey too), is one line that
// starts with the package name, and nothing is sent.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	h := indexKind.Handle(r.handle)
	newErr := func(q, poison *azqueue.QueueClient, o *eventual.Options) error {
		_, err := eventual.New(q, poison, o)
		return err
	}
	workerErr := func(q *eventual.Queue, o *eventual.WorkerOptions, hs ...eventual.Handler) error {
		_, err := eventual.NewWorker(q, hs, o)
		return err
	}
	pendingErr := func(o *eventual.PendingOptions) error {
		for _, err := range r.q.Pending(ctx, o) {
			return err
		}
		return nil
	}
	_, commitKeyErr := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "a/b", ID: "1"})}, indexKind.New(indexOrder{}))
	_, sweepErr := r.q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: time.Millisecond})
	_, sweepNegErr := r.q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: -time.Hour})
	_, sweepTableErr := r.q.Sweep(ctx, r.index.Client(), nil)
	_, poisonedErr := r.q.Poisoned(ctx, 0)
	for what, c := range map[string]struct {
		err error
		key bool
	}{
		"New without a queue":                    {err: newErr(nil, r.poison, nil)},
		"New without a poison queue":             {err: newErr(r.queue, nil, nil)},
		"New, the poison queue is q":             {err: newErr(r.queue, r.queue, nil)},
		"New, a CommitWindow of 1.5 s":           {err: newErr(r.queue, r.poison, &eventual.Options{CommitWindow: 1500 * time.Millisecond})},
		"New, a nil table client":                {err: newErr(r.queue, r.poison, &eventual.Options{Tables: []*aztables.Client{nil}})},
		"New, a table twice":                     {err: newErr(r.queue, r.poison, &eventual.Options{Tables: []*aztables.Client{r.orders.Client(), r.orders.Client()}})},
		"New, a client with no name":             {err: newErr(r.queue, r.poison, &eventual.Options{Tables: []*aztables.Client{r.SDKClient(r.orders.Name())}})},
		"NewWorker without a Queue":              {err: workerErr(nil, nil, h)},
		"NewWorker without handlers":             {err: workerErr(r.q, nil)},
		"NewWorker, a zero Handler":              {err: workerErr(r.q, nil, eventual.Handler{})},
		"NewWorker, two handlers":                {err: workerErr(r.q, nil, h, h)},
		"NewWorker, a bad kind":                  {err: workerErr(r.q, nil, eventual.NewKind[int]("").Handle(nil))},
		"NewWorker, Concurrency -1":              {err: workerErr(r.q, &eventual.WorkerOptions{Concurrency: -1}, h)},
		"NewWorker, a 0.5 s lease":               {err: workerErr(r.q, &eventual.WorkerOptions{VisibilityTimeout: 500 * time.Millisecond}, h)},
		"Commit, an invalid key":                 {err: commitKeyErr, key: true},
		"Pending, an invalid partition":          {err: pendingErr(&eventual.PendingOptions{PartitionKey: "a\x01"}), key: true},
		"Pending, an unknown table":              {err: pendingErr(&eventual.PendingOptions{Table: "nosuchtable"})},
		"Sweep younger than the window":          {err: sweepErr},
		"Sweep, a negative OlderThan":            {err: sweepNegErr},
		"Sweep of a table not in Options.Tables": {err: sweepTableErr},
		"Poisoned of 0 messages":                 {err: poisonedErr},
		"a Draft of an invalid kind":             {err: eventual.NewKind[int](strings.Repeat("k", 129)).New(1).Err()},
		"a Draft json cannot encode":             {err: eventual.NewKind[chan int]("ch").New(nil).Err()},
		"Enqueue of a zero Draft":                {err: func() error { _, err := r.q.Enqueue(ctx, eventual.Draft{}); return err }()},
		"Commit without operations": {err: func() error {
			_, err := r.q.Commit(ctx, r.orders.Client(), nil, indexKind.New(indexOrder{}))
			return err
		}()},
		"Commit of one intent twice": {err: func() error {
			d := indexKind.New(indexOrder{})
			_, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c", ID: "1"})}, d, d)
			return err
		}()},
		"Commit, one RowKey twice": {err: func() error {
			o := r.orders.InsertOp(order{Customer: "c", ID: "1"})
			_, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{o, o}, indexKind.New(indexOrder{}))
			return err
		}()},
		"Commit with a nil table client": {err: func() error { _, err := r.q.Commit(ctx, nil, nil, indexKind.New(indexOrder{})); return err }()},
	} {
		err := c.err
		if !errors.Is(err, eventual.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want eventual.ErrInvalid and table.ErrInvalid", what, err)
			continue
		}
		if c.key != errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: %v; matches table.ErrInvalidKey: %v, want %v", what, err, !c.key, c.key)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "eventual: ") || strings.Contains(msg, "\n") {
			t.Errorf("%s: the error is not one line of this package: %q", what, msg)
		}
	}
	if n := r.Faults.Count(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// A table client tablekit did not build has no name for Options.Tables:
// New says how to give it one, and takes it once described.
func TestUnknownTableClients(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	_, err := eventual.New(r.queue, r.poison, &eventual.Options{Tables: []*aztables.Client{r.SDKClient(r.orders.Name())}})
	if !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), "table.NewClient") || !strings.Contains(err.Error(), "table.Describe") {
		t.Fatalf("New with a client of no name: %v", err)
	}
	c := table.Describe(r.SDKClient(r.orders.Name()), r.orders.Name(), r.Profile())
	q, err := eventual.New(r.queue, r.poison, &eventual.Options{Tables: []*aztables.Client{c}})
	if err != nil {
		t.Fatalf("New with a described client: %v", err)
	}
	if _, err := q.Commit(context.Background(), c, []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
		t.Fatalf("Commit through a described client: %v", err)
	}
}
