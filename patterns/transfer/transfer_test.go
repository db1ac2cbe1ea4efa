package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/transfer"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// entity returns entity i of a seeded table: every EDM type the codec
// knows, extreme values included.
func entity(i int) table.Dynamic {
	return table.Dynamic{
		PartitionKey: fmt.Sprintf("p%d", i%3),
		RowKey:       fmt.Sprintf("r%04d", i),
		Properties: map[string]any{
			"Name":    fmt.Sprintf("name %d: 'quoted' \"é\" \u2028 <tag>", i),
			"Active":  i%2 == 0,
			"Count":   int32(i),
			"Big":     int64(math.MaxInt64 - int64(i)),
			"Small":   int64(math.MinInt64 + int64(i)),
			"Score":   float64(i) + 0.25,
			"Tiny":    5e-324,
			"When":    time.Date(2020, 1, 2, 3, 4, 5, 100*(i+1), time.UTC),
			"Old":     time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC),
			"Photo":   []byte{0, 1, 2, 255, byte(i)},
			"Empty":   []byte{},
			"Ref":     table.GUID{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			"TkIndex": fmt.Sprintf("reserved property %d", i), // a pattern's bookkeeping
		},
	}
}

// seed writes n entities and one reserved row to c.
func seed(t *testing.T, c *aztables.Client, n int) {
	t.Helper()
	tbl := reserved.Table(testrig.NewTable[table.Dynamic](t, c))
	var ops []table.Op
	for i := range n {
		ops = append(ops, tbl.UpsertOp(entity(i), table.Replace))
	}
	ops = append(ops, tbl.UpsertOp(table.Dynamic{PartitionKey: "p0", RowKey: reserved.Prefix + "commit!1",
		Properties: map[string]any{"TkState": "pending"}}, table.Replace))
	if _, err := tbl.Submit(context.Background(), ops, nil); err != nil {
		t.Fatal(err)
	}
}

func verifyEqual(t *testing.T, want, got *aztables.Client) transfer.Summary {
	t.Helper()
	sum, err := transfer.Verify(context.Background(), want, got, nil)
	if err != nil {
		t.Fatalf("verify: %v (missing %v, extra %v, changed %v)", err, sum.Missing, sum.Extra, sum.Changed)
	}
	return sum
}

func TestExportImportVerify(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, dst, blobs := r.Table(), r.Table(), r.Container()
	const n = 60
	seed(t, src, n)
	opts := &transfer.Options{ChunkBytes: 4 << 10}
	exp, err := transfer.Export(ctx, src, blobs, "backup/1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Entities != n+1 || exp.Chunks < 3 {
		t.Fatalf("export: %d entities in %d chunks, want %d in several", exp.Entities, exp.Chunks, n+1)
	}
	if _, err := transfer.Export(ctx, src, blobs, "backup/1", nil); !errors.Is(err, transfer.ErrExists) || !errors.Is(err, table.ErrInvalid) {
		t.Fatalf("second export to the same prefix: %v, want ErrExists", err)
	}
	if _, err := transfer.VerifyExport(ctx, blobs, "backup/1", src, nil); err != nil {
		t.Fatalf("verify export against its source: %v", err)
	}
	for range 2 { // idempotent: twice gives the same table
		imp, err := transfer.Import(ctx, blobs, "backup/1", dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		if imp.Entities != n+1 || imp.Chunks != exp.Chunks {
			t.Fatalf("import: %d entities from %d chunks, want %d from %d", imp.Entities, imp.Chunks, n+1, exp.Chunks)
		}
		verifyEqual(t, src, dst)
	}
	// Every value reads back with its type.
	got, err := testrig.NewTable[table.Dynamic](t, dst).Get(ctx, "p1", "r0007", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := entity(7)
	for name, v := range want.Properties {
		if fmt.Sprintf("%T %v", v, v) != fmt.Sprintf("%T %v", got.Value.Properties[name], got.Value.Properties[name]) {
			t.Errorf("property %s: got %T %v, want %T %v", name, got.Value.Properties[name], got.Value.Properties[name], v, v)
		}
	}
}

func TestVerifyDifferences(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	a, b := r.Table(), r.Table()
	seed(t, a, 10)
	seed(t, b, 10)
	tb := reserved.Table(testrig.NewTable[table.Dynamic](t, b))
	changed := entity(3)
	changed.Properties["Count"] = int64(3) // same number, another type
	if _, err := tb.Upsert(ctx, changed, table.Replace); err != nil {
		t.Fatal(err)
	}
	if err := tb.Delete(ctx, "p2", "r0005", "*"); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Upsert(ctx, table.Dynamic{PartitionKey: "p9", RowKey: "x"}, table.Replace); err != nil {
		t.Fatal(err)
	}
	sum, err := transfer.Verify(ctx, a, b, nil)
	if !errors.Is(err, transfer.ErrMismatch) {
		t.Fatalf("verify: %v, want ErrMismatch", err)
	}
	if fmt.Sprint(sum.Missing, sum.Extra, sum.Changed, sum.Differences) != "[{p2 r0005}] [{p9 x}] [{p0 r0003}] 3" {
		t.Fatalf("verify found missing %v, extra %v, changed %v (%d)", sum.Missing, sum.Extra, sum.Changed, sum.Differences)
	}
}

// TestExportCrashResume crashes an export at every step boundary it
// passes, resumes it, and checks the export equals the table.
func TestExportCrashResume(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 40)
	for _, step := range []string{"manifest", "chunk"} {
		for pass := 1; pass <= 4; pass++ {
			prefix := fmt.Sprintf("crash/%s/%d", step, pass)
			var crashes testrig.Crashes
			crashes.At(step, pass)
			opts := &transfer.Options{ChunkBytes: 4 << 10, Ranges: 2}
			transfer.SetHook(opts, crashes.Hook)
			if _, err := transfer.Export(ctx, src, blobs, prefix, opts); !errors.Is(err, testrig.ErrCrash) {
				t.Fatalf("%s pass %d: %v, want the crash", step, pass, err)
			}
			opts.Resume = true
			transfer.SetHook(opts, nil)
			if _, err := transfer.Export(ctx, src, blobs, prefix, opts); err != nil {
				t.Fatalf("%s pass %d: resume: %v", step, pass, err)
			}
			if sum, err := transfer.VerifyExport(ctx, blobs, prefix, src, nil); err != nil {
				t.Fatalf("%s pass %d: %v (missing %v, extra %v, changed %v)", step, pass, err, sum.Missing, sum.Extra, sum.Changed)
			}
		}
	}
}

// TestImportCrashResume crashes an import at every step boundary, resumes
// it from its checkpoint, and checks the table equals the source.
func TestImportCrashResume(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 40)
	exp, err := transfer.Export(ctx, src, blobs, "b", &transfer.Options{ChunkBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"read", "written", "checkpoint"} {
		for pass := 1; pass <= exp.Chunks; pass++ {
			dst := r.Table()
			var crashes testrig.Crashes
			crashes.At(step, pass)
			opts := &transfer.Options{}
			transfer.SetHook(opts, crashes.Hook)
			if _, err := transfer.Import(ctx, blobs, "b", dst, opts); !errors.Is(err, testrig.ErrCrash) {
				t.Fatalf("%s pass %d: %v, want the crash", step, pass, err)
			}
			opts.Resume = true
			transfer.SetHook(opts, nil)
			sum, err := transfer.Import(ctx, blobs, "b", dst, opts)
			if err != nil {
				t.Fatalf("%s pass %d: resume: %v", step, pass, err)
			}
			// The resume reads only the chunks the checkpoint does not list.
			if wantChunks := exp.Chunks - (pass - 1); step == "checkpoint" && sum.Chunks != exp.Chunks-pass || step != "checkpoint" && sum.Chunks != wantChunks {
				t.Errorf("%s pass %d: resume read %d chunks", step, pass, sum.Chunks)
			}
			verifyEqual(t, src, dst)
		}
	}
}

// TestCorruptExport: an altered chunk or manifest is refused before
// anything from it is written.
func TestCorruptExport(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 20)
	if _, err := transfer.Export(ctx, src, blobs, "b", &transfer.Options{ChunkBytes: 2 << 10}); err != nil {
		t.Fatal(err)
	}
	manifest := download(t, blobs, "b/manifest.json")
	chunk := regexp.MustCompile(`b/r0000-000001-[0-9a-f]{16}\.jsonl\.gz`).FindString(string(manifest)) // the first: nothing may be written
	orig := download(t, blobs, chunk)
	for _, tc := range []struct {
		name string
		blob string
		data []byte
	}{
		{"chunk byte flipped", chunk, flip(orig, len(orig)/2)},
		{"chunk cut", chunk, orig[:len(orig)-1]},
		{"chunk extended", chunk, append(append([]byte{}, orig...), 0)},
		{"manifest chunk renamed", "b/manifest.json", []byte(strings.Replace(string(manifest), chunk, "b/../other/r0000-000001-0000000000000000.jsonl.gz", 1))},
		{"manifest unknown field", "b/manifest.json", []byte(strings.Replace(string(manifest), `"format"`, `"extra": 1, "format"`, 1))},
		{"manifest huge size", "b/manifest.json", []byte(strings.Replace(string(manifest), `"bytes": `, `"bytes": 9`, 1))},
	} {
		upload(t, blobs, tc.blob, tc.data)
		dst := r.Table()
		before := r.Faults.Count()
		_, err := transfer.Import(ctx, blobs, "b", dst, nil)
		if !errors.Is(err, transfer.ErrCorrupt) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
		for _, req := range r.Faults.Requests()[before:] {
			if strings.Contains(req.URL, "$batch") {
				t.Errorf("%s: a transaction was sent", tc.name)
			}
		}
		upload(t, blobs, "b/manifest.json", manifest)
		upload(t, blobs, chunk, orig)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 1
	return c
}

func download(t *testing.T, c *container.Client, name string) []byte {
	t.Helper()
	resp, err := c.NewBlobClient(name).DownloadStream(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func upload(t *testing.T, c *container.Client, name string, b []byte) {
	t.Helper()
	if _, err := c.NewBlockBlobClient(name).UploadBuffer(context.Background(), b, nil); err != nil {
		t.Fatal(err)
	}
}

// TestCopyToCosmosRejects copies a Table Storage table into the Cosmos DB
// profile: every entity Cosmos DB cannot hold is reported with its keys,
// none is sent, and every other entity is copied.
func TestCopyToCosmosRejects(t *testing.T) {
	storage := testrig.New(t)
	if testrig.Cosmos() {
		t.Skip("the source must be Table Storage; under TABLEKIT_PROFILE=cosmos every rig table is Cosmos DB")
	}
	cosmos := testrig.NewCosmos(t)
	ctx := context.Background()
	src, dst := storage.Table(), cosmos.Table()
	seed(t, src, 12)
	s := testrig.NewTable[table.Dynamic](t, src)
	longRK := strings.Repeat("k", 300)
	bad := []table.Dynamic{
		{PartitionKey: "p1", RowKey: longRK, Properties: map[string]any{"N": int32(1)}},              // RowKey over 255 bytes
		{PartitionKey: "p1", RowKey: "id-prop", Properties: map[string]any{"id": "x"}},               // reserved on Cosmos DB
		{PartitionKey: "p2", RowKey: "etag-prop", Properties: map[string]any{"ETag": "x", "A": "b"}}, // reserved on Cosmos DB
	}
	for _, d := range bad {
		if _, err := s.Upsert(ctx, d, table.Replace); err != nil {
			t.Fatal(err)
		}
	}
	before := cosmos.Faults.Count()
	sum, err := transfer.Copy(ctx, src, dst, nil)
	if !errors.Is(err, transfer.ErrRejected) {
		t.Fatalf("copy: %v, want ErrRejected", err)
	}
	if sum.Rejected != 3 || len(sum.Rejects) != 3 {
		t.Fatalf("copy rejected %d: %v", sum.Rejected, sum.Rejects)
	}
	got := map[transfer.Key]bool{}
	for _, rj := range sum.Rejects {
		got[rj.Key] = true
		if rj.Reason == "" {
			t.Errorf("reject %v has no reason", rj.Key)
		}
	}
	for _, d := range bad {
		if !got[transfer.Key{PartitionKey: d.PartitionKey, RowKey: d.RowKey}] {
			t.Errorf("entity (%s, %.20s...) not reported", d.PartitionKey, d.RowKey)
		}
	}
	if sum.Entities != 13 {
		t.Errorf("copied %d entities, want 13", sum.Entities)
	}
	for _, req := range cosmos.Faults.Requests()[before:] {
		if strings.Contains(string(req.Body), longRK) || strings.Contains(string(req.Body), "id-prop") {
			t.Errorf("a rejected entity was sent: %s %s", req.Method, req.URL)
		}
	}
	vs, err := transfer.Verify(ctx, src, dst, nil)
	if !errors.Is(err, transfer.ErrMismatch) || vs.Differences != 3 || len(vs.Missing) != 3 {
		t.Fatalf("verify after copy: %v, %d differences (missing %v)", err, vs.Differences, vs.Missing)
	}
}

// TestCopy copies between two tables of the rig's service in ranges.
func TestCopy(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, dst := r.Table(), r.Table()
	seed(t, src, 30)
	var calls int
	sum, err := transfer.Copy(ctx, src, dst, &transfer.Options{Ranges: 3, Progress: func(p transfer.Progress) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Entities != 31 || calls == 0 {
		t.Fatalf("copied %d entities, %d progress calls", sum.Entities, calls)
	}
	verifyEqual(t, src, dst)
}

// TestIncremental exports the changes since a full export (Table
// Storage), restores full then incremental, and checks the result equals
// the source; on Cosmos DB, Since is refused before any request.
func TestIncremental(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, dst, blobs := r.Table(), r.Table(), r.Container()
	seed(t, src, 12)
	full, err := transfer.Export(ctx, src, blobs, "full", nil)
	if err != nil {
		t.Fatal(err)
	}
	if testrig.Cosmos() {
		before := r.Faults.Count()
		_, err := transfer.Export(ctx, src, blobs, "inc", &transfer.Options{Since: full.Started})
		if !errors.Is(err, table.ErrUnsupported) || r.Faults.Count() != before {
			t.Fatalf("Since on Cosmos DB: %v after %d requests, want ErrUnsupported before any", err, r.Faults.Count()-before)
		}
		return
	}
	tbl := reserved.Table(testrig.NewTable[table.Dynamic](t, src))
	for _, d := range []table.Dynamic{entity(100), entity(3), entity(4)} {
		d.Properties["Name"] = "changed"
		if _, err := tbl.Upsert(ctx, d, table.Replace); err != nil {
			t.Fatal(err)
		}
	}
	inc, err := transfer.Export(ctx, src, blobs, "inc", &transfer.Options{Since: full.Started})
	if err != nil {
		t.Fatal(err)
	}
	if inc.Entities != 3 {
		t.Fatalf("incremental export of %d entities, want the 3 written since", inc.Entities)
	}
	if _, err := transfer.VerifyExport(ctx, blobs, "inc", src, nil); !errors.Is(err, transfer.ErrInvalid) {
		t.Fatalf("VerifyExport of an incremental export: %v, want ErrInvalid", err)
	}
	for _, prefix := range []string{"full", "inc"} {
		if _, err := transfer.Import(ctx, blobs, prefix, dst, nil); err != nil {
			t.Fatal(err)
		}
	}
	verifyEqual(t, src, dst)
}

// TestExportRoundTrips: a small table in one chunk costs a manifest read,
// its first write, a page, the chunk, its manifest write and the last
// manifest write.
func TestExportRoundTrips(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 20)
	before := r.Faults.Count()
	if _, err := transfer.Export(ctx, src, blobs, "b", nil); err != nil {
		t.Fatal(err)
	}
	if n := r.Faults.Count() - before; n != 6 {
		t.Fatalf("export of one page: %d round trips, want 6", n)
	}
}

// TestExportRanges splits the key space by probes, reads the ranges in
// parallel, and exports every entity once.
func TestExportRanges(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, dst, blobs := r.Table(), r.Table(), r.Container()
	seed(t, src, 30)
	before := r.Faults.Count()
	sum, err := transfer.Export(ctx, src, blobs, "b", &transfer.Options{Ranges: 4, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Entities != 31 || sum.Chunks != 3 {
		t.Fatalf("export in ranges: %d entities in %d chunks, want 31 in 3 (a range per partition)", sum.Entities, sum.Chunks)
	}
	// Probes: "" and 92 first characters, then "p" and its 92 second
	// characters; then a manifest read and 2 writes, and per range a page,
	// a chunk and a manifest write.
	if n := r.Faults.Count() - before; n != 2*93+3+3*3 {
		t.Fatalf("export in ranges: %d round trips", n)
	}
	if _, err := transfer.VerifyExport(ctx, blobs, "b", src, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Import(ctx, blobs, "b", dst, nil); err != nil {
		t.Fatal(err)
	}
	verifyEqual(t, src, dst)
}

// TestDistribute shares one export between three workers (as three
// processes would run them) through a queue of ranges; the worker that
// uploads the second chunk crashes then, in the middle of its range,
// which the next delivery continues.
// Every range is recorded once and the export equals the table.
func TestDistribute(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 45)
	q, err := eventual.New(r.Queue(), r.CleanQueue(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.DistributeExport(ctx, src, blobs, "shared", q, &transfer.Options{Ranges: 3, ChunkBytes: 4 << 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.DistributeExport(ctx, src, blobs, "shared", q, nil); !errors.Is(err, transfer.ErrExists) {
		t.Fatalf("second Distribute: %v, want ErrExists", err)
	}
	var crashes testrig.Crashes
	crashes.At("chunk", 2)
	fast := &retry.Policy{Default: 10 * time.Millisecond, Max: 20 * time.Millisecond}
	var workers []*eventual.Worker
	for range 3 {
		o := &transfer.Options{ChunkBytes: 4 << 10}
		transfer.SetHook(o, crashes.Hook)
		w, err := eventual.NewWorker(q, []eventual.Handler{transfer.ExportHandler(src, blobs, "shared", o)}, &eventual.WorkerOptions{VisibilityTimeout: 2 * time.Second, Backoff: fast, Idle: fast})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
		testrig.Start(t, w.Run)
	}
	testrig.Drain(t, workers[1].Drain)
	if crashes.Injected()["chunk"] != 1 {
		t.Fatalf("crashes injected: %v", crashes.Injected())
	}
	sum, err := transfer.VerifyExport(ctx, blobs, "shared", src, nil)
	if err != nil {
		t.Fatalf("%v (missing %v, extra %v, changed %v)", err, sum.Missing, sum.Extra, sum.Changed)
	}
	if sum.Chunks < 3 {
		t.Fatalf("%d chunks", sum.Chunks)
	}
}
