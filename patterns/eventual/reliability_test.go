package eventual_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// commitOrder commits a new order with its index intent.
// A commit window that passed (a loaded machine) applied nothing: it is
// tried again with a new Draft, as a caller would.
func (r *rig) commitOrder(ctx context.Context, cust, id, email string, total int64) (eventual.Draft, eventual.CommitResult, error) {
	for try := 0; ; try++ {
		d := indexKind.New(indexOrder{cust, id, email})
		res, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.UpsertOp(order{Customer: cust, ID: id, Email: email, Total: total}, table.Replace)}, d)
		if errors.Is(err, eventual.ErrCommitWindow) && try < 3 {
			continue
		}
		return d, res, err
	}
}

// checkSettled drains with a fresh worker and checks the end state: the
// index is what the orders call for, no commit record or message is left,
// and the intents ran exactly when committed.
func (r *rig) checkSettled(t *testing.T, committed, uncommitted []string) {
	t.Helper()
	w := r.worker(t, nil)
	stop := start(t, w)
	drain(t, w)
	stop()
	got, want := r.indexRows(t), r.wantIndex(t)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("index %v, want %v", got, want)
	}
	if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
		t.Errorf("%d commit records and %d messages left", recs, msgs)
	}
	for _, id := range committed {
		if r.runsOf(id) == 0 {
			t.Errorf("committed intent %s never ran", id)
		}
	}
	for _, id := range uncommitted {
		if n := r.runsOf(id); n != 0 {
			t.Errorf("intent %s of a Commit that did not apply ran %d times", id, n)
		}
	}
}

// A crash at each step boundary of Commit: before the reserve nothing
// happens; after it and before the batch the intent is ruled out when its
// window ends; after the batch it runs (released, or when its window ends).
func TestCommitCrashPoints(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step    string
		applied bool
	}{{"reserve", false}, {"commit", false}, {"release", true}} {
		t.Run(c.step, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			ctx := context.Background()
			r.crash.At(c.step, 1)
			d, _, err := r.commitOrder(ctx, "c1", "o1", "a@x", 10)
			if !errors.Is(err, testrig.ErrCrash) {
				t.Fatalf("Commit with a crash before %s: %v", c.step, err)
			}
			_, err = r.orders.Get(ctx, "c1", "o1", nil)
			if applied := err == nil; applied != c.applied {
				t.Fatalf("after a crash before %s the order exists: %v, want %v", c.step, applied, c.applied)
			}
			if c.applied {
				r.checkSettled(t, []string{d.ID()}, nil)
			} else {
				r.checkSettled(t, nil, []string{d.ID()})
			}
		})
	}
}

// The aborted record a worker leaves for an intent it ruled out fences the
// primary's batch: if the batch arrives after all, it fails, so no primary
// write ever applies without its intent. Sweep deletes it later: on each
// service (Cosmos DB's filters on Timestamp match nothing).
func TestCosmosRuledOutCommitCannotApplyLate(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, base *testrig.Rig) {
		// A 2 s window, which Sweep's cutoff below must exceed (no batch
		// is sent, so a loaded machine cannot outlast it).
		r := newRigOn(t, base, &eventual.Options{CommitWindow: 2 * time.Second})
		ctx := context.Background()
		r.crash.At("commit", 1)
		d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
		ops := []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 10})}
		if _, err := r.q.Commit(ctx, r.orders.Client(), ops, d); !errors.Is(err, testrig.ErrCrash) {
			t.Fatal(err)
		}
		r.checkSettled(t, nil, []string{d.ID()}) // the worker ruled it out
		// The batch Commit would have sent, arriving late.
		late := table.Atomic(append(ops, eventual.RecordOp(r.q, r.orders.Client(), "c1", d))...)
		res, err := r.orders.Submit(ctx, late, nil)
		if !errors.Is(err, table.ErrAlreadyExists) || res.Ops[0].Applied {
			t.Fatalf("the late batch: %+v, %v; want it refused by the aborted record", res, err)
		}
		if _, err := r.orders.Get(ctx, "c1", "o1", nil); !errors.Is(err, table.ErrNotFound) {
			t.Fatalf("the late batch's order exists: %v", err)
		}
		// Sweep removes aborted records once older than the commit window
		// plus a margin (a minute, shortened here).
		eventual.SetSweepMargin(r.q, 0)
		if _, err := r.q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: time.Millisecond}); !errors.Is(err, eventual.ErrInvalid) {
			t.Fatalf("Sweep younger than the window: %v, want ErrInvalid", err)
		}
		dyn := reserved.Table(testrig.NewTable[table.Dynamic](t, r.orders.Client()))
		rec, err := dyn.Get(ctx, "c1", reserved.Prefix+"intent~"+d.ID(), nil)
		if err != nil || rec.Value.Properties["State"] != "aborted" {
			t.Fatalf("the aborted record: %+v, %v", rec, err)
		}
		if n, err := r.q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: time.Hour}); n != (eventual.Swept{}) || err != nil {
			t.Fatalf("Sweep of records older than an hour: %+v, %v", n, err)
		}
		// Wall-clock age is what Sweep selects on: wait until the record is
		// older than the window.
		time.Sleep(time.Until(rec.Value.Timestamp.Add(2100 * time.Millisecond)))
		if n, err := r.q.Sweep(ctx, r.orders.Client(), nil); n != (eventual.Swept{}) || err != nil {
			t.Fatalf("Sweep of the table's records older than the default, a day: %+v, %v", n, err)
		}
		if n, err := r.q.Sweep(ctx, r.orders.Client(), &eventual.SweepOptions{OlderThan: 2 * time.Second}); n != (eventual.Swept{Records: 1}) || err != nil {
			t.Fatalf("Sweep: %+v, %v; want the 1 aborted record", n, err)
		}
		if _, err := dyn.Get(ctx, "c1", reserved.Prefix+"intent~"+d.ID(), nil); !errors.Is(err, table.ErrNotFound) {
			t.Fatalf("the aborted record after Sweep: %v", err)
		}
		how := "a filtered scan of aborted records older than the cutoff"
		if !r.Profile().TimestampFilters {
			how = "a scan of every aborted record (rare), old ones kept by their Timestamp client-side: Timestamp filters match nothing there"
		}
		r.Claim(t, testrig.Capability{Pattern: "eventual", Operation: "Sweep", How: how})
		r.Claim(t, testrig.Capability{Pattern: "eventual", Operation: "Commit, Worker", How: "point reads and one transaction per Commit; intents on a Storage account's queue"})
	})
}

// A crash at each step boundary of the worker: a new worker finishes the
// intent, which ran at least once, and nothing is left behind.
func TestWorkerCrashPoints(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"dequeued", "abort", "handler", "handled", "unrecorded", "delete"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			ctx := context.Background()
			var d eventual.Draft
			var err error
			if step == "abort" { // only an unreleased intent is checked
				r.crash.At("release", 1)
				d, _, err = r.commitOrder(ctx, "c1", "o1", "a@x", 10)
				if !errors.Is(err, testrig.ErrCrash) {
					t.Fatal(err)
				}
				// And its record is missing: the worker will write an
				// aborted one, and crashes before.
				dyn := reserved.Table(testrig.NewTable[table.Dynamic](t, r.orders.Client()))
				if err := dyn.Delete(ctx, "c1", reserved.Prefix+"intent~"+d.ID(), "*"); err != nil {
					t.Fatal(err)
				}
				if err := r.orders.Delete(ctx, "c1", "o1", "*"); err != nil {
					t.Fatal(err)
				}
			} else if d, _, err = r.commitOrder(ctx, "c1", "o1", "a@x", 10); err != nil {
				t.Fatal(err)
			}
			r.crash.At(step, 1)
			w := r.worker(t, nil)
			stop := start(t, w)
			drain(t, w) // the crashed delivery's message reappears after its lease
			stop()
			if step == "abort" {
				r.checkSettled(t, nil, []string{d.ID()})
				return
			}
			r.checkSettled(t, []string{d.ID()}, nil)
			// Once its record is removed, a released intent is done: its
			// message is dropped, not run again.
			if n := r.crash.Passes(step); n < 2 && step != "unrecorded" && step != "delete" {
				t.Errorf("step %s passed %d times, want a retry after the crash", step, n)
			}
		})
	}
}

// Lost responses on the writes of both start paths and of the worker:
// nothing is reported wrongly, nothing is left behind.
func TestLostResponses(t *testing.T) {
	t.Parallel()
	isMsg := func(method string) func(*http.Request) bool {
		return func(q *http.Request) bool { return q.Method == method && strings.Contains(q.URL.Path, "/messages") }
	}
	isBatch := func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "/$batch") }
	cases := []struct {
		name   string
		qf, tf []faults.Fault
	}{
		{name: "reserve", qf: []faults.Fault{{Match: isMsg(http.MethodPost), LoseResponse: true}}},
		{name: "batch", tf: []faults.Fault{{Match: isBatch, LoseResponse: true}}},
		{name: "release", qf: []faults.Fault{{Match: isMsg(http.MethodPut), LoseResponse: true}}},
		{name: "message delete", qf: []faults.Fault{{Match: isMsg(http.MethodDelete), LoseResponse: true}}},
		{name: "record removal and handler writes", tf: []faults.Fault{
			{Match: func(q *http.Request) bool { return q.Method == http.MethodDelete }, LoseResponse: true},
			{Match: func(q *http.Request) bool { return q.Method == http.MethodPut }, LoseResponse: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			ctx := context.Background()
			for _, f := range c.qf {
				f.Match = r.onQueue(f.Match)
				r.Faults.Inject(f)
			}
			for _, f := range c.tf {
				f.Match = r.onTable(f.Match)
				r.Faults.Inject(f)
			}
			d, res, err := r.commitOrder(ctx, "c1", "o1", "a@x", 10)
			if err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if c.name == "batch" && !res.Batch.Ops[0].Verified {
				t.Errorf("the batch's lost response was not verified: %+v", res.Batch.Ops[0])
			}
			direct := indexKind.New(indexOrder{"c1", "o1", "a@x"})
			if _, err := r.q.Enqueue(ctx, direct); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			r.checkSettled(t, []string{d.ID(), direct.ID()}, nil)
			if n := len(r.indexRows(t)); n != 1 {
				t.Fatalf("%d index rows, want 1", n)
			}
		})
	}
}

// A reserve whose every attempt's response is lost (the retry policy sent
// it again each time) never sent the primary batch: Commit reports the
// write not applied (table.ErrNotApplied), not ErrOutcomeUnknown. The
// reservations the attempts left are invisible and never released: when
// the commit window ends a worker finds no commit record, writes an
// aborted one and drops them, and the intent's handler never runs.
func TestLostReserveIsNotApplied(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	attempts := 1 + testrig.Fast.MaxRetries
	for range attempts {
		r.Faults.Inject(faults.Fault{Match: r.onQueue(func(q *http.Request) bool {
			return q.Method == http.MethodPost && strings.HasSuffix(q.URL.Path, "/messages")
		}), LoseResponse: true})
	}
	d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
	_, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 10})}, d)
	if !errors.Is(err, table.ErrNotApplied) || errors.Is(err, table.ErrOutcomeUnknown) || errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("Commit after the reserve's responses were lost: %v; want table.ErrNotApplied, not ErrOutcomeUnknown", err)
	}
	if !errors.Is(err, faults.ErrLost) || !strings.Contains(err.Error(), d.ID()) || strings.Contains(err.Error(), "\n") {
		t.Errorf("the error does not name the intent and the lost response in one line: %q", err)
	}
	if n, b := len(r.requests(r.isQueue)), len(r.requests(r.isTable)); n != attempts || b != 0 {
		t.Fatalf("%d queue and %d table round trips; want the %d reserve attempts and no batch", n, b, attempts)
	}
	if _, err := r.orders.Get(ctx, "c1", "o1", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the order: %v, want ErrNotFound", err)
	}
	r.checkSettled(t, nil, []string{d.ID()}) // every reservation dropped, none run
	dyn := reserved.Table(testrig.NewTable[table.Dynamic](t, r.orders.Client()))
	rec, err := dyn.Get(ctx, "c1", reserved.Prefix+"intent~"+d.ID(), nil)
	if err != nil || rec.Value.Properties["State"] != "aborted" {
		t.Fatalf("the commit record after the worker: %+v, %v; want an aborted one", rec, err)
	}
}

// Duplicate and reordered deliveries of intents for the same order, run by
// two workers at once while the order changes and is deleted, converge to
// the truth: the handler reconciles from the order.
func TestDuplicatesAndReorderingConverge(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	w1, w2 := r.worker(t, nil), r.worker(t, nil)
	stop1, stop2 := start(t, w1), start(t, w2)
	for i := range 20 {
		total := int64(i)
		_, _, err := r.commitOrder(ctx, "c1", "o1", "a@x", total)
		if err != nil {
			t.Fatal(err)
		}
		for range i % 3 { // duplicates of a stale intent
			if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain(t, w1)
	if got := r.indexRows(t); got["a@x/c1_o1"] != 19 || len(got) != 1 {
		t.Fatalf("index %v, want the last total 19", got)
	}
	d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
	if _, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.DeleteOp("c1", "o1", "*")}, d); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, w2)
	stop1()
	stop2()
	if got := r.indexRows(t); len(got) != 0 {
		t.Fatalf("index %v after the order was deleted, want none", got)
	}
	r.checkSettled(t, []string{d.ID()}, nil)
}

// A handler slower than the visibility timeout keeps its lease by renewal:
// with two workers on the queue it still runs once, never concurrently.
func TestSlowHandlerIsRenewedNotRunTwice(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	slow := eventual.NewKind[string]("slow")
	var running, runs, renewals atomic.Int32
	h := slow.Handle(func(ctx context.Context, in eventual.Intent[string]) error {
		if running.Add(1) > 1 {
			t.Error("the slow intent runs twice at once")
		}
		defer running.Add(-1)
		runs.Add(1)
		select { // two and a half leases long: the lease must be renewed
		case <-time.After(5 * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	opts := workerOptions()
	opts.VisibilityTimeout = 2 * time.Second
	opts.OnEvent = func(e eventual.Event) {
		if e.Type == eventual.Renewed {
			renewals.Add(1)
		}
	}
	var ws []*eventual.Worker
	for range 2 {
		w, err := eventual.NewWorker(r.q, []eventual.Handler{h}, opts)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		start(t, w)
	}
	if _, err := r.q.Enqueue(ctx, slow.New("x")); err != nil {
		t.Fatal(err)
	}
	drain(t, ws[0])
	if runs.Load() != 1 || renewals.Load() < 3 {
		t.Fatalf("%d runs, %d renewals; want 1 run kept by >= 3 renewals", runs.Load(), renewals.Load())
	}
}

// A handler that keeps failing ends in the poison queue after
// MaxDeliveries, with its error; a committed one also shows in Pending.
func TestPoisonAfterMaxDeliveries(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	bad := eventual.NewKind[indexOrder]("always-fails")
	var calls atomic.Int32
	h := bad.Handle(func(ctx context.Context, in eventual.Intent[indexOrder]) error {
		if n := calls.Add(1); n > 1 && !strings.Contains(in.LastError, "disk on fire") {
			t.Errorf("delivery %d: LastError %q, want the previous error", in.DequeueCount, in.LastError)
		}
		return errors.New("disk on fire")
	})
	opts := longLease() // deliveries end by failing, never by a lost lease
	opts.MaxDeliveries = 3
	var logged bytes.Buffer // written under the handler's lock, read after Run
	opts.Telemetry = &table.Telemetry{Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	var poisoned atomic.Int32
	opts.OnEvent = func(e eventual.Event) {
		if e.Type == eventual.Poisoned {
			poisoned.Add(1)
		}
	}
	w, err := eventual.NewWorker(r.q, []eventual.Handler{h}, opts)
	if err != nil {
		t.Fatal(err)
	}
	d := bad.New(indexOrder{"c1", "o1", "a@x"})
	if _, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x"})}, d); err != nil {
		t.Fatal(err)
	}
	// An unreadable message goes to the poison queue at once.
	if _, err := r.queue.EnqueueMessage(ctx, "not base64 !", nil); err != nil {
		t.Fatal(err)
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	if calls.Load() != 3 || poisoned.Load() != 2 {
		t.Fatalf("%d handler calls and %d poisoned, want 3 and 2", calls.Load(), poisoned.Load())
	}
	if out := logged.String(); strings.Count(out, "level=ERROR msg=\"eventual: poisoned\"") != 2 || strings.Count(out, "level=WARN msg=\"eventual: failed\"") != 2 || !strings.Contains(out, "disk on fire") {
		t.Fatalf("log:\n%s", out)
	}
	ps, err := r.q.Poisoned(ctx, 32)
	if err != nil || len(ps) != 2 {
		t.Fatalf("Poisoned: %+v, %v", ps, err)
	}
	var found bool
	for _, p := range ps {
		if p.ID == d.ID() {
			found = p.Kind == "always-fails" && strings.Contains(p.Error, "disk on fire") && p.DequeueCount == 3
		}
	}
	if !found {
		t.Fatalf("the poisoned intent is missing or wrong: %+v", ps)
	}
	pending, err := table.Collect(r.q.Pending(ctx, &eventual.PendingOptions{PartitionKey: "c1"}))
	if err != nil || len(pending) != 1 || !pending[0].Poisoned || !strings.Contains(pending[0].Error, "disk on fire") {
		t.Fatalf("Pending: %+v, %v", pending, err)
	}
}

// Two and four workers on one queue: every intent done, each exactly once
// (no faults, long leases), none lost.
func TestCompetingWorkers(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n, " workers"), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			ctx := context.Background()
			opts := workerOptions()
			opts.VisibilityTimeout = 30 * time.Second
			var ws []*eventual.Worker
			for range n {
				w := r.worker(t, opts)
				ws = append(ws, w)
				start(t, w)
			}
			var ids []string
			var mu sync.Mutex
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 15 {
						d, _, err := r.commitOrder(ctx, fmt.Sprint("c", g), fmt.Sprint("o", i), fmt.Sprintf("%d@x", i), int64(i))
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						ids = append(ids, d.ID())
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for _, w := range ws {
				drain(t, w)
			}
			for _, id := range ids {
				if n := r.runsOf(id); n != 1 {
					t.Errorf("intent %s ran %d times, want 1", id, n)
				}
			}
			r.checkSettled(t, ids, nil)
		})
	}
}

// Limits are checked before anything is sent.
func TestLimitsSendNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	other := testrig.NewTable[order](t, r.Env.Table(nil))
	var many []table.Op
	for i := range 100 {
		many = append(many, r.orders.InsertOp(order{Customer: "c", ID: fmt.Sprint(i)}))
	}
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	o := r.orders.InsertOp(order{Customer: "c", ID: "1"})
	for name, call := range map[string]func() error{
		"101 operations": func() error {
			_, err := r.q.Commit(ctx, r.orders.Client(), many, indexKind.New(indexOrder{}))
			return err
		},
		"two partitions": func() error {
			_, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{o, r.orders.InsertOp(order{Customer: "d", ID: "1"})}, indexKind.New(indexOrder{}))
			return err
		},
		"unknown table": func() error {
			_, err := r.q.Commit(ctx, other.Client(), []table.Op{other.InsertOp(order{Customer: "c", ID: "1"})}, indexKind.New(indexOrder{}))
			return err
		},
		"no intent":   func() error { _, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{o}); return err },
		"bad kind":    func() error { _, err := r.q.Enqueue(ctx, eventual.NewKind[int]("").New(1)); return err },
		"zero draft":  func() error { _, err := r.q.Enqueue(ctx, eventual.Draft{}); return err },
		"bad payload": func() error { _, err := r.q.Enqueue(ctx, eventual.NewKind[func()]("f").New(func() {})); return err },
		"payload too large without blobs": func() error {
			_, err := r.q.Enqueue(ctx, eventual.NewKind[[]byte]("big").New(big))
			return err
		},
	} {
		r.Faults.Reset()
		err := call()
		if !errors.Is(err, eventual.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if err != nil && (!strings.HasPrefix(err.Error(), "eventual: ") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s: the error is not one line of this package: %q", name, err)
		}
		if n := r.Faults.Count(); n != 0 {
			t.Errorf("%s: %d requests sent", name, n)
		}
	}
}

// A payload too large for a message travels in a blob (a claim check): 1
// upload more for Enqueue; the worker reads it and empties it when the
// intent is done (2 blob round trips).
func TestClaimCheck(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	c := r.claimChecks(t, 0)
	ctx := context.Background()
	big := eventual.NewKind[[]byte]("big")
	payload := make([]byte, 200<<10)
	for i := range payload {
		payload[i] = byte(i)
	}
	var got []byte
	w, err := eventual.NewWorker(c.q, []eventual.Handler{big.Handle(func(ctx context.Context, in eventual.Intent[[]byte]) error {
		got = in.Payload
		return nil
	})}, workerOptions())
	if err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	e, err := c.q.Enqueue(ctx, big.New(payload))
	if err != nil || e.Blob == "" {
		t.Fatalf("Enqueue: %+v, %v", e, err)
	}
	if n := len(r.requests(r.isBlob)); n != 1 {
		t.Errorf("Enqueue: %d blob round trips, want 1", n)
	}
	r.Faults.Reset()
	stop := start(t, w)
	drain(t, w)
	stop()
	if string(got) != string(payload) {
		t.Fatalf("the handler got %d bytes, want the %d sent", len(got), len(payload))
	}
	var methods []string
	for _, q := range r.requests(r.isBlob) {
		methods = append(methods, q.Method)
	}
	if fmt.Sprint(methods) != "[GET PUT]" {
		t.Errorf("worker: blob requests %v, want a read and the emptying", methods)
	}
	if left := c.blobs(t); len(left) != 1 || left[e.Blob] != 0 {
		t.Fatalf("blobs: %v; want the claim check, emptied", left)
	}
}
