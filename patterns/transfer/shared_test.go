package transfer_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/transfer"
	"github.com/tablekit/tablekit/retry"
)

// plantUnholdable writes to src (Table Storage) three entities the Cosmos
// DB Table API cannot hold, and returns their keys.
func plantUnholdable(t *testing.T, src *aztables.Client) []string {
	t.Helper()
	s := testrig.NewTable[table.Dynamic](t, src)
	bad := []table.Dynamic{
		{PartitionKey: "p1", RowKey: strings.Repeat("k", 300), Properties: map[string]any{"N": int32(1)}},
		{PartitionKey: "p1", RowKey: "id-prop", Properties: map[string]any{"id": "x"}},
		{PartitionKey: "p2", RowKey: "etag-prop", Properties: map[string]any{"ETag": "x"}},
	}
	var keys []string
	for _, d := range bad {
		if _, err := s.Upsert(context.Background(), d, table.Replace); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, d.RowKey[:min(len(d.RowKey), 20)])
	}
	return keys
}

// shareWork runs n workers of q, each with the handler h returns (given
// options with the test hook crashes), until the queue is drained.
func shareWork(t *testing.T, q *eventual.Queue, n int, crashes *testrig.Crashes, h func(*transfer.Options) eventual.Handler) {
	t.Helper()
	fast := &retry.Policy{Default: 10 * time.Millisecond, Max: 20 * time.Millisecond}
	var workers []*eventual.Worker
	for range n {
		o := &transfer.Options{}
		transfer.SetHook(o, crashes.Hook)
		w, err := eventual.NewWorker(q, []eventual.Handler{h(o)}, &eventual.WorkerOptions{
			VisibilityTimeout: 2 * time.Second, Backoff: fast, Idle: fast, MaxDeliveries: 3})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
		testrig.Start(t, w.Run)
	}
	testrig.Drain(t, workers[0].Drain)
}

// TestDistributeImport shares one import between three workers through a
// queue of the export's ranges; the worker that writes the second chunk
// crashes after writing it, before its checkpoint, and the range's next
// delivery continues it. On Table Storage the target is a Cosmos DB
// table, which cannot hold three of the entities: they are recorded in
// the checkpoint, and Import with Resume, after the workers, writes
// nothing and reports them.
func TestDistributeImport(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 45)
	dst := r.Table()
	var bad []string
	if !testrig.Cosmos() {
		bad = plantUnholdable(t, src)
		dst = testrig.NewCosmos(t).Table()
	}
	exp, err := transfer.Export(ctx, src, blobs, "b", &transfer.Options{Ranges: 3, ChunkBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	q, err := eventual.New(r.Queue(), r.CleanQueue(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.DistributeImport(ctx, blobs, "b", dst, q, nil); err != nil {
		t.Fatal(err)
	}
	var crashes testrig.Crashes
	crashes.At("written", 2)
	shareWork(t, q, 3, &crashes, func(o *transfer.Options) eventual.Handler { return transfer.ImportHandler(blobs, "b", dst, o) })
	if crashes.Injected()["written"] != 1 {
		t.Fatalf("crashes injected: %v", crashes.Injected())
	}
	sum, err := transfer.Import(ctx, blobs, "b", dst, &transfer.Options{Resume: true})
	if sum.Chunks != 0 || sum.Entities != 0 {
		t.Fatalf("import after the workers wrote %d chunks (%d entities): every chunk should be done (export: %d chunks)", sum.Chunks, sum.Entities, exp.Chunks)
	}
	if len(bad) == 0 {
		if err != nil {
			t.Fatal(err)
		}
		verifyEqual(t, src, dst)
		return
	}
	if !errors.Is(err, transfer.ErrRejected) || sum.Rejected != 3 {
		t.Fatalf("import after the workers: %v, %d rejected (%v), want the 3 Cosmos DB cannot hold", err, sum.Rejected, sum.Rejects)
	}
	for _, k := range bad {
		if !strings.Contains(keys(sum.Rejects), k) {
			t.Errorf("%s not among the rejects %v", k, sum.Rejects)
		}
	}
	if vs, err := transfer.Verify(ctx, src, dst, nil); !errors.Is(err, transfer.ErrMismatch) || len(vs.Missing) != 3 || vs.Differences != 3 {
		t.Fatalf("verify: %v, missing %v, %d differences", err, vs.Missing, vs.Differences)
	}
}

// TestDistributeCopy shares one copy between three workers through a
// queue of ranges; the worker that writes the second page crashes, and
// the range is copied again at its next delivery. On Table Storage the
// target is a Cosmos DB table: the ranges holding entities it cannot
// hold end in the poison queue, their errors naming them, and every
// other entity is copied.
func TestDistributeCopy(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	seed(t, src, 45)
	dst := r.Table()
	var bad []string
	if !testrig.Cosmos() {
		bad = plantUnholdable(t, src)
		dst = testrig.NewCosmos(t).Table()
	}
	q, err := eventual.New(r.Queue(), r.CleanQueue(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.DistributeCopy(ctx, src, dst, q, &transfer.Options{Ranges: 3}); err != nil {
		t.Fatal(err)
	}
	var crashes testrig.Crashes
	crashes.At("page", 2)
	shareWork(t, q, 3, &crashes, func(o *transfer.Options) eventual.Handler { return transfer.CopyHandler(src, dst, o) })
	if crashes.Injected()["page"] != 1 {
		t.Fatalf("crashes injected: %v", crashes.Injected())
	}
	poisoned, err := q.Poisoned(ctx, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) == 0 {
		if len(poisoned) > 0 {
			t.Fatalf("poisoned: %+v", poisoned)
		}
		verifyEqual(t, src, dst)
		return
	}
	var errs []string
	for _, p := range poisoned {
		errs = append(errs, p.Error)
	}
	for _, k := range bad {
		if !strings.Contains(strings.Join(errs, "\n"), k) {
			t.Errorf("%s not named by the poisoned ranges: %q", k, errs)
		}
	}
	if vs, err := transfer.Verify(ctx, src, dst, nil); !errors.Is(err, transfer.ErrMismatch) || len(vs.Missing) != 3 || vs.Differences != 3 {
		t.Fatalf("verify: %v, missing %v, %d differences", err, vs.Missing, vs.Differences)
	}
}

// TestDistributeInterrupted: a Distribute that stops after enqueueing one
// range (the queue refuses the next) is run again with Resume (an export,
// an import: every range not done is enqueued, some twice) or again (a
// copy); the workers then finish the transfer, whole.
func TestDistributeInterrupted(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 45)
	var q *eventual.Queue // one per case: the workers of a case run to the test's end
	// refuseEnqueues fails every enqueue after the first, until reset.
	refuseEnqueues := func() {
		var mu sync.Mutex
		n := 0
		for range 50 {
			r.Faults.Inject(faults.Fault{Err: errors.New("refused"), Match: func(req *http.Request) bool {
				if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/messages") {
					return false
				}
				mu.Lock()
				defer mu.Unlock()
				n++
				return n > 1
			}})
		}
	}
	dst, cp := r.Table(), r.Table()
	for _, tc := range []struct {
		name       string
		distribute func(*transfer.Options) error
		handler    func(*transfer.Options) eventual.Handler
	}{
		{"export", func(o *transfer.Options) error {
			o.ChunkBytes = 4 << 10
			_, err := transfer.DistributeExport(ctx, src, blobs, "x", q, o)
			return err
		}, func(o *transfer.Options) eventual.Handler {
			o.ChunkBytes = 4 << 10
			return transfer.ExportHandler(src, blobs, "x", o)
		}},
		{"import", func(o *transfer.Options) error {
			_, err := transfer.DistributeImport(ctx, blobs, "x", dst, q, o)
			return err
		}, func(o *transfer.Options) eventual.Handler { return transfer.ImportHandler(blobs, "x", dst, o) }},
		{"copy", func(o *transfer.Options) error {
			o.Resume = false // a copy is distributed again
			_, err := transfer.DistributeCopy(ctx, src, cp, q, o)
			return err
		}, func(o *transfer.Options) eventual.Handler { return transfer.CopyHandler(src, cp, o) }},
	} {
		var err error
		if q, err = eventual.New(r.Queue(), r.CleanQueue(), nil); err != nil {
			t.Fatal(err)
		}
		refuseEnqueues()
		if err := tc.distribute(&transfer.Options{Ranges: 3}); err == nil {
			t.Fatalf("%s: the queue refused enqueues, and Distribute did not fail", tc.name)
		}
		r.Faults.Reset()
		if err := tc.distribute(&transfer.Options{Ranges: 3, Resume: true}); err != nil {
			t.Fatalf("%s: again: %v", tc.name, err)
		}
		shareWork(t, q, 2, &testrig.Crashes{}, tc.handler)
	}
	if sum, err := transfer.VerifyExport(ctx, blobs, "x", src, nil); err != nil {
		t.Fatalf("export: %v (missing %v)", err, sum.Missing)
	}
	if sum, err := transfer.Import(ctx, blobs, "x", dst, &transfer.Options{Resume: true}); err != nil || sum.Chunks != 0 {
		t.Fatalf("import left %d chunks: %v", sum.Chunks, err)
	}
	verifyEqual(t, src, dst)
	verifyEqual(t, src, cp)
}

// forged payloads of the handlers' kinds, as another writer of the queue
// could enqueue them (the same names and JSON members as the package's).
type forgedRange struct {
	Prefix string `json:"prefix"`
	Range  int    `json:"range"`
}

type forgedCopy struct {
	Source string `json:"source"`
	Target string `json:"target"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
}

// TestHandlersRefuseForged: intents that another writer of the queue put
// there (another prefix, a range the export does not have, other tables,
// a copy range outside the handler's From and To, an inverted range)
// fail with ErrInvalid and are poisoned, and nothing is written: no
// chunk, no manifest, no entity.
func TestHandlersRefuseForged(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, dst, blobs := r.Table(), r.Table(), r.Container()
	seed(t, src, 10)
	if _, err := transfer.Export(ctx, src, blobs, "b", nil); err != nil {
		t.Fatal(err)
	}
	srcName, dstName := tableNameOf(t, src), tableNameOf(t, dst)
	q, err := eventual.New(r.Queue(), r.CleanQueue(), nil)
	if err != nil {
		t.Fatal(err)
	}
	exportKind := eventual.NewKind[forgedRange]("tablekit.transfer.export-range")
	importKind := eventual.NewKind[forgedRange]("tablekit.transfer.import-range")
	copyKind := eventual.NewKind[forgedCopy]("tablekit.transfer.copy-range")
	forged := []eventual.Draft{
		exportKind.New(forgedRange{Prefix: "elsewhere", Range: 0}),
		exportKind.New(forgedRange{Prefix: "b", Range: 7}),
		exportKind.New(forgedRange{Prefix: "b", Range: -1}),
		importKind.New(forgedRange{Prefix: "elsewhere", Range: 0}),
		importKind.New(forgedRange{Prefix: "b", Range: 1}),
		copyKind.New(forgedCopy{Source: "victim", Target: dstName}),
		copyKind.New(forgedCopy{Source: srcName, Target: "victim"}),
		copyKind.New(forgedCopy{Source: srcName, Target: dstName}),                       // all of it: outside [p1, p2)
		copyKind.New(forgedCopy{Source: srcName, Target: dstName, From: "p1", To: "p3"}), // past To
		copyKind.New(forgedCopy{Source: srcName, Target: dstName, From: "p1x", To: "p1"}),
	}
	for _, d := range forged {
		if _, err := q.Enqueue(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	before := blobList(t, blobs)
	handlers := []eventual.Handler{
		transfer.ExportHandler(src, blobs, "b", nil),
		transfer.ImportHandler(blobs, "b", dst, nil),
		transfer.CopyHandler(src, dst, &transfer.Options{From: "p1", To: "p2"}),
	}
	fast := &retry.Policy{Default: 10 * time.Millisecond, Max: 20 * time.Millisecond}
	w, err := eventual.NewWorker(q, handlers, &eventual.WorkerOptions{Backoff: fast, Idle: fast, MaxDeliveries: 1})
	if err != nil {
		t.Fatal(err)
	}
	testrig.Start(t, w.Run)
	testrig.Drain(t, w.Drain)
	poisoned, err := q.Poisoned(ctx, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(poisoned) != len(forged) {
		t.Fatalf("%d intents poisoned, want %d: %+v", len(poisoned), len(forged), poisoned)
	}
	for _, p := range poisoned {
		if !strings.Contains(p.Error, "transfer: invalid request") {
			t.Errorf("%s poisoned with %q, want the refusal (ErrInvalid)", p.Kind, p.Error)
		}
	}
	if after := blobList(t, blobs); !slices.Equal(after, before) {
		t.Errorf("blobs %q after the forged intents, want %q", after, before)
	}
	n := 0
	for _, err := range testrig.NewTable[table.Dynamic](t, dst).Query(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 0 {
		t.Fatalf("%d entities written to the target", n)
	}
}

// blobList returns the names of c's blobs.
func blobList(t *testing.T, c *container.Client) []string {
	t.Helper()
	var names []string
	for b, err := range listBlobs(context.Background(), c) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, b)
	}
	return names
}
