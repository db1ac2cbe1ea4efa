package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// When an enqueue's or a reserve's response is lost and the retry policy
// sends it again, two messages share one claim check. The intent runs once
// (the second message finds its claim check emptied by the first and is
// dropped), nothing is poisoned, and Sweep removes the emptied claim check.
func TestDuplicateClaimCheckMessages(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"Enqueue", "Commit"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			c := r.claimChecks(t, 2*time.Second)
			eventual.SetSweepMargin(c.q, 0)
			ctx := context.Background()
			k := eventual.NewKind[indexOrder]("big")
			var runs, done atomic.Int32
			opts := workerOptions()
			opts.Concurrency = 1
			// The Commit's message fails once and comes back after the
			// commit window, so its duplicate (visible when the window
			// ends) meets its commit record first.
			opts.Backoff = &retry.Policy{Min: 4 * time.Second, Max: 4 * time.Second}
			w, err := eventual.NewWorker(c.q, []eventual.Handler{k.Handle(func(ctx context.Context, in eventual.Intent[indexOrder]) error {
				if runs.Add(1) == 1 && path == "Commit" {
					return errors.New("not yet")
				}
				done.Add(1)
				return nil
			})}, opts)
			if err != nil {
				t.Fatal(err)
			}
			r.Faults.Inject(faults.Fault{Match: r.onQueue(func(q *http.Request) bool {
				return q.Method == http.MethodPost && strings.HasSuffix(q.URL.Path, "/messages")
			}), LoseResponse: true})
			big := k.New(indexOrder{Customer: "c1", ID: "o1", Email: strings.Repeat("x", 100<<10)})
			var blob string
			if path == "Enqueue" {
				e, err := c.q.Enqueue(ctx, big)
				if err != nil {
					t.Fatal(err)
				}
				blob = e.Blob
			} else {
				res, err := c.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, big)
				if err != nil || !res.Released {
					t.Fatalf("Commit: %+v, %v", res, err)
				}
				blob = res.Intents[0].Blob
			}
			if _, msgs := r.leftovers(t); msgs != 2 {
				t.Fatalf("%d messages on the queue, want the intent's and its duplicate", msgs)
			}
			r.Faults.Reset()
			stop := start(t, w)
			drain(t, w)
			stop()
			// Blob round trips: the Enqueue's duplicate reads the emptied
			// claim check; the Commit's is dropped by its commit record
			// before reading it, and the intent's first delivery failed.
			var methods []string
			for _, q := range r.requests(r.isBlob) {
				methods = append(methods, q.Method)
			}
			if want := map[string]string{"Enqueue": "[GET PUT GET]", "Commit": "[GET GET PUT]"}[path]; fmt.Sprint(methods) != want {
				t.Errorf("worker: blob requests %v, want %s", methods, want)
			}
			if done.Load() != 1 {
				t.Errorf("the intent ran to success %d times, want once", done.Load())
			}
			if ps, err := c.q.Poisoned(ctx, 32); err != nil || len(ps) != 0 {
				t.Errorf("Poisoned: %+v, %v", ps, err)
			}
			if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
				t.Errorf("%d commit records and %d messages left", recs, msgs)
			}
			// The claim check is emptied, then removed by Sweep once older
			// than its OlderThan (default: a day), and only by a Sweep of
			// every table (c nil).
			if size, ok := c.blobs(t)[blob]; !ok || size != 0 {
				t.Fatalf("claim check %s: %d bytes (present %v), want it emptied", blob, size, ok)
			}
			if n, err := c.q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: time.Hour}); n != (eventual.Swept{}) || err != nil {
				t.Fatalf("Sweep of what is older than an hour: %+v, %v", n, err)
			}
			props, err := c.admin.NewBlobClient(blob).GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Wall-clock age is what Sweep selects on.
			time.Sleep(time.Until(props.LastModified.Add(2100 * time.Millisecond)))
			if n, err := c.q.Sweep(ctx, nil, nil); n != (eventual.Swept{}) || err != nil {
				t.Fatalf("Sweep of what is older than the default, a day: %+v, %v", n, err)
			}
			older := &eventual.SweepOptions{OlderThan: 2 * time.Second}
			if n, err := c.q.Sweep(ctx, r.orders.Client(), older); n != (eventual.Swept{}) || err != nil {
				t.Fatalf("Sweep of one table: %+v, %v; want no claim check deleted", n, err)
			}
			if n, err := c.q.Sweep(ctx, nil, older); n != (eventual.Swept{ClaimChecks: 1}) || err != nil {
				t.Fatalf("Sweep: %+v, %v; want the emptied claim check", n, err)
			}
			if left := c.blobs(t); len(left) != 0 {
				t.Errorf("blobs left after Sweep: %v", left)
			}
		})
	}
}

// A worker that crashes after emptying a claim check, before the message
// is deleted: the next delivery finds the intent done and drops it.
func TestCrashAfterEmptyingAClaimCheck(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"Enqueue", "Commit"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			c := r.claimChecks(t, 2*time.Second)
			ctx := context.Background()
			k := eventual.NewKind[string]("big")
			var runs, dropped atomic.Int32
			opts := workerOptions()
			opts.OnEvent = func(e eventual.Event) {
				if e.Type == eventual.Dropped {
					dropped.Add(1)
				}
			}
			w, err := eventual.NewWorker(c.q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error {
				runs.Add(1)
				return nil
			})}, opts)
			if err != nil {
				t.Fatal(err)
			}
			d := k.New(strings.Repeat("x", 100<<10))
			if path == "Enqueue" {
				_, err = c.q.Enqueue(ctx, d)
			} else {
				_, err = c.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, d)
			}
			if err != nil {
				t.Fatal(err)
			}
			r.crash.At("emptied", 1)
			stop := start(t, w)
			drain(t, w) // the crashed delivery's message reappears after its lease
			stop()
			if runs.Load() != 1 || dropped.Load() != 1 {
				t.Errorf("%d runs, %d dropped; want the intent run once, then dropped as done", runs.Load(), dropped.Load())
			}
			if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
				t.Errorf("%d commit records and %d messages left", recs, msgs)
			}
			if ps, err := c.q.Poisoned(ctx, 32); err != nil || len(ps) != 0 {
				t.Errorf("Poisoned: %+v, %v", ps, err)
			}
		})
	}
}
