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
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// An intent as large as a message takes can still be poisoned: the poison
// record fits the queue.
func TestPoisonAtTheSizeLimit(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	k := eventual.NewKind[string]("big-fails")
	big := strings.Repeat("x", 46<<10)
	e, err := r.q.Enqueue(ctx, k.New(big))
	if err != nil || e.Blob != "" {
		t.Fatalf("Enqueue of %d bytes inline: %+v, %v", len(big), e, err)
	}
	opts := workerOptions()
	opts.MaxDeliveries = 1
	w, err := eventual.NewWorker(r.q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error {
		return errors.New(strings.Repeat("\x01", 4000)) // escapes to 6 bytes each
	})}, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	ps, err := r.q.Poisoned(ctx, 1)
	if err != nil || len(ps) != 1 || ps[0].ID != e.ID || len(ps[0].Error) == 0 {
		t.Fatalf("Poisoned: %+v, %v", ps, err)
	}
	// Its Message goes back on the queue as it is.
	if _, err := r.queue.EnqueueMessage(ctx, ps[0].Message, nil); err != nil {
		t.Fatalf("re-enqueueing the poisoned intent: %v", err)
	}
}

// A ruled-out intent whose message comes back and is poisoned keeps its
// aborted record: it is not pending, and never becomes committed.
func TestPoisonKeepsAbortedRecords(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	r.crash.At("commit", 1)
	d, _, err := r.commitOrder(ctx, "c1", "o1", "a@x", 1)
	if !errors.Is(err, testrig.ErrCrash) {
		t.Fatal(err)
	}
	// The worker rules it out, but cannot delete its message.
	for range 6 {
		r.Faults.Inject(faults.Fault{Match: r.onQueue(func(q *http.Request) bool { return q.Method == http.MethodDelete }), Status: 503})
	}
	opts := workerOptions()
	opts.MaxDeliveries = 1
	var dropped, poisoned atomic.Int32
	opts.OnEvent = func(e eventual.Event) {
		switch e.Type {
		case eventual.LeaseLost:
			dropped.Add(1) // the drop could not delete the message
		case eventual.Poisoned:
			poisoned.Add(1)
		}
	}
	w := r.worker(t, opts)
	stop := start(t, w)
	drain(t, w)
	stop()
	if dropped.Load() == 0 || poisoned.Load() != 1 {
		t.Fatalf("%d failed drops, %d poisoned; want the drop to fail, then a poisoning", dropped.Load(), poisoned.Load())
	}
	dyn := reserved.Table(testrig.NewTable[table.Dynamic](t, r.orders.Client()))
	rec, err := dyn.Get(ctx, "c1", reserved.Prefix+"intent~"+d.ID(), nil)
	if err != nil || rec.Value.Properties["State"] != "aborted" {
		t.Fatalf("the record: %+v, %v; want it still aborted", rec.Value.Properties, err)
	}
	if p, err := table.Collect(r.q.Pending(ctx, nil)); err != nil || len(p) != 0 {
		t.Fatalf("Pending: %+v, %v", p, err)
	}
	if r.runsOf(d.ID()) != 0 {
		t.Fatal("the uncommitted intent ran")
	}
}

// Drafts are values: Commit does not change the caller's, a Draft commits
// once, and a Draft whose Commit failed can be enqueued instead.
func TestDraftReuse(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	d, _, err := r.commitOrder(ctx, "c1", "o1", "a@x", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.UpsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 2}, table.Replace)}, d)
	if !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), "committed before") {
		t.Fatalf("committing a Draft twice: %v", err)
	}
	if o, _ := r.orders.Get(ctx, "c1", "o1", nil); o.Value.Total != 1 {
		t.Fatalf("the second Commit applied: total %d", o.Value.Total)
	}
	// A Commit that fails (the order to update does not exist), then the
	// same Draft enqueued alone: it runs.
	d2 := indexKind.New(indexOrder{"c9", "o9", "z@x"})
	_, err = r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.UpdateOp(order{Customer: "c9", ID: "o9"}, "*", table.Merge)}, d2)
	if !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Commit updating a missing order: %v", err)
	}
	if _, err := r.q.Enqueue(ctx, d2); err != nil {
		t.Fatal(err)
	}
	r.checkSettled(t, []string{d.ID(), d2.ID()}, nil)
}

// A payload too large for a message, committed with a primary write.
func TestCommitWithClaimCheck(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	blobs := r.Env.Container(nil)
	q, err := eventual.New(r.queue, r.poison, &eventual.Options{Blobs: blobs, Tables: []*aztables.Client{r.orders.Client()}, CommitWindow: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := eventual.NewKind[[]byte]("big")
	var got atomic.Int64
	w, err := eventual.NewWorker(q, []eventual.Handler{k.Handle(func(ctx context.Context, in eventual.Intent[[]byte]) error {
		got.Store(int64(len(in.Payload)))
		return nil
	})}, workerOptions())
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, k.New(make([]byte, 100<<10)))
	if err != nil || !res.Released || res.Intents[0].Blob == "" {
		t.Fatalf("Commit: %+v, %v", res, err)
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	if got.Load() != 100<<10 {
		t.Fatalf("the handler got %d bytes", got.Load())
	}
	if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
		t.Fatalf("%d records, %d messages left", recs, msgs)
	}
	page, err := blobs.NewListBlobsFlatPager(nil).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 1 || *page.Segment.BlobItems[0].Properties.ContentLength != 0 {
		t.Fatalf("blobs: %d, %v; want the claim check, emptied", len(page.Segment.BlobItems), err)
	}
}

// A table client without tablekit's retry policy resends a batch whose
// response was lost and gets a 409: Commit reads its commit record and
// reports the truth (applied), and the intent runs.
func TestCommitWithAPlainClient(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	o := &aztables.ClientOptions{} // azcore's retry policy, not tablekit's
	o.Transport = r.Faults
	o.Retry.RetryDelay, o.Retry.MaxRetryDelay = time.Millisecond, time.Millisecond
	plain := r.TableClient(r.orders.Name(), o)
	orders := testrig.NewTable[order](t, plain)
	q, err := eventual.New(r.queue, r.poison, &eventual.Options{Tables: []*aztables.Client{plain}, CommitWindow: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	eventual.SetHook(q, r.crash.Hook)
	ctx := context.Background()
	r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "$batch") }, LoseResponse: true})
	d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
	res, err := q.Commit(ctx, plain, []table.Op{orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 5})}, d)
	if err != nil || !res.Released || !res.Batch.Ops[0].Verified {
		t.Fatalf("Commit over a plain client with a lost response: %+v, %v; want applied", res, err)
	}
	r.checkSettled(t, []string{d.ID()}, nil)
}
