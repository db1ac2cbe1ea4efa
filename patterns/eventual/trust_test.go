package eventual_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// hexID returns 32 random hex digits: an intent id, or a claim check's
// suffix.
func hexID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// forge is the text of a message written straight to the queue by someone
// holding only queue access: an envelope with the given fields.
func forge(t *testing.T, fields map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// claimChecks is a Queue over the rig's queues with a blob container for
// claim checks, reached through the rig's transport; admin is a client of
// the same container without it.
type claimChecks struct {
	q     *eventual.Queue
	admin *container.Client
}

func (r *rig) claimChecks(t *testing.T, window time.Duration) *claimChecks {
	t.Helper()
	c := &claimChecks{}
	blobs := r.Container()
	c.admin = r.BlobService(nil).ServiceClient().NewContainerClient(path.Base(blobs.URL()))
	var err error
	c.q, err = eventual.New(r.queue, r.poison, &eventual.Options{Blobs: blobs, Tables: []*aztables.Client{r.orders.Client()}, CommitWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	eventual.SetHook(c.q, r.crash.Hook)
	return c
}

func (c *claimChecks) upload(t *testing.T, name, content string) {
	t.Helper()
	if _, err := c.admin.NewBlockBlobClient(name).UploadBuffer(context.Background(), []byte(content), nil); err != nil {
		t.Fatal(err)
	}
}

// content returns a blob's content, or "(missing)".
func (c *claimChecks) content(t *testing.T, name string) string {
	t.Helper()
	resp, err := c.admin.NewBlobClient(name).DownloadStream(context.Background(), nil)
	if err != nil {
		return "(missing)"
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// blobs lists the container: name -> size.
func (c *claimChecks) blobs(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	pager := c.admin.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			out[*b.Name] = *b.Properties.ContentLength
		}
	}
	return out
}

// settled runs w until every message in ids has come to an end (dropped,
// poisoned or processed), then stops it: for tests that leave other
// messages invisible on the queue, which Drain would wait for.
func settled(t *testing.T, w func(func(eventual.Event)) *eventual.Worker, ids []string) []eventual.Event {
	t.Helper()
	var mu sync.Mutex
	var events []eventual.Event
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	done := make(chan struct{})
	stop := start(t, w(func(e eventual.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
		if want[e.MessageID] && (e.Type == eventual.Dropped || e.Type == eventual.Poisoned || e.Type == eventual.Processed) {
			delete(want, e.MessageID)
			if len(want) == 0 {
				close(done)
			}
		}
	}))
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("messages not settled after 60 s: %v", want)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	return events
}

// A message naming a blob that is not a claim check its Queue wrote for
// its intent id (another intent's, any other blob of the container, a
// malformed name) is poisoned without the blob being read or deleted.
func TestForgedClaimChecksArePoisoned(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	c := r.claimChecks(t, 0)
	ctx := context.Background()
	other := "intents/" + hexID() + "/" + hexID() // another intent's claim check
	c.upload(t, other, `"the other intent's payload"`)
	c.upload(t, "secret.json", `"an unrelated blob"`)
	k := eventual.NewKind[string]("big")
	var runs atomic.Int32
	opts := workerOptions()
	w, err := eventual.NewWorker(c.q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error {
		runs.Add(1)
		return nil
	})}, opts)
	if err != nil {
		t.Fatal(err)
	}
	id := hexID()
	names := []string{
		other,
		"secret.json",
		"intents/" + id + "/../../secret.json",
		"intents/" + id + "/" + strings.ToUpper(hexID()),
		"intents/" + id + "/commit-" + hexID(), // a Commit's, without a commit reference
		"intents/" + id + "/" + hexID() + "/x",
		"intents/" + id,
		"intents//" + hexID(),
	}
	for _, name := range names {
		text := forge(t, map[string]any{"v": 1, "id": id, "k": k.Name(), "t": time.Now(), "b": name})
		if _, err := r.queue.EnqueueMessage(ctx, text, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A claim check with an inline payload too.
	text := forge(t, map[string]any{"v": 1, "id": id, "k": k.Name(), "t": time.Now(), "b": "intents/" + id + "/" + hexID(), "p": "x"})
	if _, err := r.queue.EnqueueMessage(ctx, text, nil); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	stop := start(t, w)
	drain(t, w)
	stop()
	if reqs := r.requests(r.isBlob); len(reqs) != 0 {
		t.Errorf("the worker sent %d blob requests, want none: %+v", len(reqs), reqs)
	}
	if runs.Load() != 0 {
		t.Errorf("the handler ran %d times on forged claim checks", runs.Load())
	}
	if got := c.content(t, other); got != `"the other intent's payload"` {
		t.Errorf("the other intent's claim check: %s", got)
	}
	if got := c.content(t, "secret.json"); got != `"an unrelated blob"` {
		t.Errorf("the unrelated blob: %s", got)
	}
	ps, err := c.q.Poisoned(ctx, 32)
	if err != nil || len(ps) != len(names)+1 {
		t.Fatalf("Poisoned: %d, %v; want the %d forged messages", len(ps), err, len(names)+1)
	}
}

// A forged message's commit reference acts only on a commit record the
// message's own Commit wrote: it cannot run a pending intent with another
// payload, remove its record, or remove an aborted record (which would let
// a late batch apply without its intent). An invalid reference is poisoned
// without a request. What it can still do: have an aborted record written
// for an intent id in a partition of Options.Tables (see the package's
// Trust section).
func TestForgedCommitReferences(t *testing.T) {
	t.Parallel()
	r := newRig(t, &eventual.Options{CommitWindow: time.Minute})
	ctx := context.Background()
	// A committed intent whose message stays invisible (its release
	// crashed) while the forged messages are handled.
	r.crash.At("release", 1)
	d, _, err := r.commitOrder(ctx, "c1", "o1", "a@x", 1)
	if !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("Commit: %v", err)
	}
	dyn := reserved.Table(testrig.NewTable[table.Dynamic](t, r.orders.Client()))
	recKey := func(id string) string { return reserved.Prefix + "intent~" + id }
	before, err := dyn.Get(ctx, "c1", recKey(d.ID()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []indexOrder
	worker := func(on func(eventual.Event)) *eventual.Worker {
		opts := workerOptions()
		// The default MaxDeliveries, not 1: what a delivery decides is
		// what this test is about, and a loaded machine can make a message
		// come back as a second delivery without any failure (a lease lost
		// between a dequeue and its first renewal; a dequeue the emulator
		// answered after the previous worker had stopped, which leased the
		// message to nobody until its lease ended). MaxDeliveries 1
		// rightly poisons such a message; invalid references are poisoned
		// at their first delivery whatever MaxDeliveries is.
		opts.VisibilityTimeout = 5 * time.Second
		opts.OnEvent = on
		w, err := eventual.NewWorker(r.q, []eventual.Handler{indexKind.Handle(func(ctx context.Context, in eventual.Intent[indexOrder]) error {
			mu.Lock()
			ran = append(ran, in.Payload)
			mu.Unlock()
			return nil
		})}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	evil := indexOrder{"c1", "o1", "evil@x"}
	enqueue := func(fields map[string]any) string {
		fields["v"], fields["k"], fields["t"] = 1, indexKind.Name(), time.Now()
		if _, ok := fields["p"]; !ok {
			fields["p"] = evil
		}
		resp, err := r.queue.EnqueueMessage(ctx, forge(t, fields), nil)
		if err != nil {
			t.Fatal(err)
		}
		return *resp.Messages[0].MessageID
	}
	ref := func(tb, pk string) map[string]any { return map[string]any{"t": tb, "pk": pk} }
	orders := r.orders.Name()
	fresh := hexID()
	ids := []string{
		// The pending intent, claimed by forged messages, released or not.
		enqueue(map[string]any{"id": d.ID(), "c": ref(orders, "c1"), "r": true}),
		enqueue(map[string]any{"id": d.ID(), "c": ref(orders, "c1")}),
		// Invalid references: poisoned, nothing sent.
		enqueue(map[string]any{"id": hexID(), "c": ref(orders, "a/b"), "r": true}),
		enqueue(map[string]any{"id": hexID(), "c": ref("elsewhere", "c1"), "r": true}),
		// A fresh id in another partition, not released: ruled out with an
		// aborted record, which a Commit of that id would have met too.
		enqueue(map[string]any{"id": fresh, "c": ref(orders, "victim")}),
	}
	r.Faults.Reset()
	events := settled(t, worker, ids)
	// The aborted record, claimed by a forged released message.
	aborted, err := dyn.Get(ctx, "victim", recKey(fresh), nil)
	if err != nil || aborted.Value.Properties["State"] != "aborted" {
		t.Fatalf("the aborted record of the fresh id: %+v, %v", aborted.Value.Properties, err)
	}
	events = append(events, settled(t, worker, []string{enqueue(map[string]any{"id": fresh, "c": ref(orders, "victim"), "r": true})})...)
	if len(ran) != 0 {
		t.Errorf("forged intents ran: %+v", ran)
	}
	after, err := dyn.Get(ctx, "c1", recKey(d.ID()), nil)
	if err != nil || after.ETag != before.ETag {
		t.Errorf("the pending intent's record: %+v, %v; want it untouched", after.Value.Properties, err)
	}
	if again, err := dyn.Get(ctx, "victim", recKey(fresh), nil); err != nil || again.ETag != aborted.ETag {
		t.Errorf("the aborted record: %+v, %v; want it untouched", again.Value.Properties, err)
	}
	// The worker's table writes: the one aborted record, nothing else.
	for _, q := range r.requests(r.isTable) {
		if q.Method != http.MethodGet && !(q.Method == http.MethodPost && strings.Contains(string(q.Body), recKey(fresh))) {
			t.Errorf("the worker wrote %s %s %s", q.Method, q.URL, q.Body)
		}
	}
	kinds := map[eventual.EventType]int{}
	for _, e := range events {
		kinds[e.Type]++
	}
	if kinds[eventual.Poisoned] != 2 || kinds[eventual.Dropped] != 4 {
		t.Errorf("events %v; want 2 poisoned (invalid references), 4 dropped", kinds)
		for _, e := range events {
			t.Logf("%s %s (dequeue %d, %v): %v", e.MessageID, e.Type, e.DequeueCount, e.Elapsed, e.Err)
		}
	}
	// Pending still lists the committed intent, not poisoned.
	pending, err := table.Collect(r.q.Pending(ctx, nil))
	if err != nil || len(pending) != 1 || pending[0].ID != d.ID() || pending[0].Poisoned {
		t.Errorf("Pending: %+v, %v", pending, err)
	}
}

// A Commit's claim check is read only by the message its commit record
// names: forged messages naming it, with or without a commit reference,
// neither read nor empty it, whatever partition they name, and the intent
// then runs from its own message.
func TestForgedCommitClaimChecks(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	c := r.claimChecks(t, 3*time.Second)
	ctx := context.Background()
	k := eventual.NewKind[string]("big")
	payload := strings.Repeat("y", 100<<10)
	r.crash.At("release", 1) // the message stays invisible for the window
	d := k.New(payload)
	res, err := c.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, d)
	if !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("Commit: %v", err)
	}
	blob := res.Intents[0].Blob
	if !strings.Contains(blob, "/commit-") {
		t.Fatalf("a Commit's claim check is named %s", blob)
	}
	var runs atomic.Int32
	worker := func(on func(eventual.Event)) *eventual.Worker {
		opts := workerOptions()
		opts.OnEvent = on
		w, err := eventual.NewWorker(c.q, []eventual.Handler{k.Handle(func(_ context.Context, in eventual.Intent[string]) error {
			if in.Payload != payload {
				t.Errorf("the handler got %d bytes", len(in.Payload))
			}
			runs.Add(1)
			return nil
		})}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	var ids []string
	for _, f := range []map[string]any{
		{}, // no commit reference
		{"c": map[string]any{"t": r.orders.Name(), "pk": "elsewhere"}}, // not released: ruled out there
		{"c": map[string]any{"t": r.orders.Name(), "pk": "elsewhere2"}, "r": true},
		{"c": map[string]any{"t": r.orders.Name(), "pk": "c1"}, "r": true}, // its record names another message
	} {
		f["v"], f["id"], f["k"], f["t"], f["b"] = 1, d.ID(), k.Name(), time.Now(), blob
		resp, err := r.queue.EnqueueMessage(ctx, forge(t, f), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, *resp.Messages[0].MessageID)
	}
	r.Faults.Reset()
	settled(t, worker, ids)
	if n := len(r.requests(r.isBlob)); n != 0 || runs.Load() != 0 {
		t.Fatalf("forged messages: %d blob requests, %d runs; want none", n, runs.Load())
	}
	// The intent's own message, when the window ends.
	w := worker(nil)
	stop := start(t, w)
	drain(t, w)
	stop()
	if runs.Load() != 1 {
		t.Errorf("the intent ran %d times, want once", runs.Load())
	}
	if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
		t.Errorf("%d commit records and %d messages left", recs, msgs)
	}
	if ps, err := c.q.Poisoned(ctx, 32); err != nil || len(ps) != 1 {
		t.Errorf("Poisoned: %+v, %v; want the message without a commit reference", ps, err)
	}
}

// maxPayload is eventual.MaxPayloadSize.
const maxPayload = 4 << 20

// A claim check larger than any payload a Queue writes is poisoned without
// being read; Enqueue refuses such a payload before sending anything.
func TestOversizeClaimCheckIsPoisoned(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	c := r.claimChecks(t, 0)
	ctx := context.Background()
	id := hexID()
	name := "intents/" + id + "/" + hexID()
	huge := `"` + strings.Repeat("x", maxPayload-1) + `"` // valid JSON, 1 byte too many
	c.upload(t, name, huge)
	k := eventual.NewKind[string]("big")
	var runs atomic.Int32
	w, err := eventual.NewWorker(c.q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error {
		runs.Add(1)
		return nil
	})}, workerOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.queue.EnqueueMessage(ctx, forge(t, map[string]any{"v": 1, "id": id, "k": k.Name(), "t": time.Now(), "b": name}), nil); err != nil {
		t.Fatal(err)
	}
	r.blobBytes.Store(0)
	stop := start(t, w)
	drain(t, w)
	stop()
	if n := r.blobBytes.Load(); n > 64<<10 {
		t.Errorf("the worker read %d bytes of blob responses", n)
	}
	if runs.Load() != 0 {
		t.Error("the handler ran")
	}
	ps, err := c.q.Poisoned(ctx, 32)
	if err != nil || len(ps) != 1 || !strings.Contains(ps[0].Error, "bytes") {
		t.Fatalf("Poisoned: %+v, %v", ps, err)
	}
	if got := c.blobs(t)[name]; got != int64(len(huge)) {
		t.Errorf("the oversize blob is %d bytes now, want it left as it was", got)
	}
	r.Faults.Reset()
	_, err = c.q.Enqueue(ctx, k.New(strings.Repeat("x", maxPayload-1)))
	if !errors.Is(err, eventual.ErrInvalid) || !errors.Is(err, table.ErrTooLarge) {
		t.Errorf("Enqueue of a payload too large for a claim check: %v", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// A Commit that leaves its messages to the worker reports its error as an
// ordinary one-line error of this package, not an internal marker.
func TestCommitLeftToTheWorkerError(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	if _, err := r.orders.Insert(ctx, order{Customer: "c1", ID: "o1"}); err != nil {
		t.Fatal(err)
	}
	// The batch fails (the order exists), and so does every attempt to
	// read the commit record.
	for range 10 {
		r.Faults.Inject(faults.Fault{Match: r.onTable(func(q *http.Request) bool {
			return q.Method == http.MethodGet && strings.Contains(q.URL.Path, "intent~")
		}), Status: 503})
	}
	d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
	_, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, d)
	if err == nil || !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Commit: %v, want the batch's conflict", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "eventual: ") || strings.Contains(msg, "left to the worker") {
		t.Errorf("Commit's error reads %q", msg)
	}
	if _, msgs := r.leftovers(t); msgs != 1 {
		t.Errorf("%d messages on the queue, want the reserved one left to the worker", msgs)
	}
}

// A poisoned Commit's intent, re-enqueued by an operator as a new message
// (Poisoned's Message), runs although its commit record names the original
// message, and its record is removed.
func TestRequeuePoisonedCommit(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	k := eventual.NewKind[string]("flaky")
	var fixed atomic.Bool
	var runs atomic.Int32
	opts := workerOptions()
	opts.MaxDeliveries = 1
	w, err := eventual.NewWorker(r.q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error {
		if !fixed.Load() {
			return errors.New("not yet")
		}
		runs.Add(1)
		return nil
	})}, opts)
	if err != nil {
		t.Fatal(err)
	}
	d := k.New("x")
	if _, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})}, d); err != nil {
		t.Fatal(err)
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	ps, err := r.q.Poisoned(ctx, 1)
	if err != nil || len(ps) != 1 || ps[0].ID != d.ID() {
		t.Fatalf("Poisoned: %+v, %v", ps, err)
	}
	if p, err := table.Collect(r.q.Pending(ctx, nil)); err != nil || len(p) != 1 || !p[0].Poisoned {
		t.Fatalf("Pending: %+v, %v", p, err)
	}
	fixed.Store(true)
	if _, err := r.queue.EnqueueMessage(ctx, ps[0].Message, nil); err != nil {
		t.Fatal(err)
	}
	stop = start(t, w)
	drain(t, w)
	stop()
	if runs.Load() != 1 {
		t.Errorf("the re-enqueued intent ran %d times, want once", runs.Load())
	}
	if recs, msgs := r.leftovers(t); recs != 0 || msgs != 0 {
		t.Errorf("%d commit records and %d messages left", recs, msgs)
	}
}
