package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// login is an entity of a rotation's periods.
type login struct {
	User string `table:",pk"`
	At   string `table:",rk"`
	IP   string
}

// logins returns a rotation of three monthly periods (September to
// November 2026) holding n logins each, and the names of its tables.
func logins(t *testing.T, svc *aztables.ServiceClient, prefix string, n int) (*rotation.Tables[login], []string) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)
	rt, err := rotation.New[login](svc, prefix, &rotation.Options{Period: rotation.Month, Grace: 120 * 24 * time.Hour,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for m := time.September; m <= time.November; m++ {
		at := time.Date(2026, m, 2, 0, 0, 0, 0, time.UTC)
		if err := rt.Prepare(ctx, at); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := rt.Insert(ctx, at, login{User: fmt.Sprint("u", i%4), At: fmt.Sprintf("%s-%03d", m, i), IP: fmt.Sprint("10.0.0.", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	periods, err := rt.Periods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range periods {
		names = append(names, p.Name)
	}
	if len(names) != 3 {
		t.Fatalf("rotation %s has periods %v, want 3", prefix, names)
	}
	return rt, names
}

// readAll returns the logins of rt, in its order.
func readAll(t *testing.T, rt *rotation.Tables[login]) []login {
	t.Helper()
	var got []login
	for e, err := range rt.Range(context.Background(), time.Time{}, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Value)
	}
	return got
}

// TestTables exports a set (a rotation's three periods and a table of
// employees whose photos are in blobs) with a crash after its list and
// another in its second table, resumes it, imports it under other names
// (the periods of another rotation) with a crash mid-table, resumes, and
// verifies the set, each table and every photo.
func TestTables(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	svc := r.Service(t)
	base := fmt.Sprintf("logs%dx", time.Now().UnixNano()%1e9)
	rt, periods := logins(t, svc, base, 12)
	staffTable := r.Table()
	const n = 15
	_, photos := staff(t, r, staffTable, n)
	staffName := tableNameOf(t, staffTable)
	set := append(slices.Clone(periods), staffName)
	backups := r.Container()

	var crashes testrig.Crashes
	crashes.At("set", 1)
	crashes.At("chunk", 3) // in the second period
	opts := &transfer.Options{Blobs: &transfer.Blobs{Container: photos}, ChunkBytes: 1 << 10}
	transfer.SetHook(opts, crashes.Hook)
	for _, want := range []int{0, 2} { // the crash after the list, then in the second table (its Summary too)
		sums, err := transfer.ExportTables(ctx, svc, set, backups, "set/1", opts)
		if !errors.Is(err, testrig.ErrCrash) || len(sums) != want {
			t.Fatalf("export: %v with %d summaries, want the crash with %d", err, len(sums), want)
		}
		opts.Resume = true
	}
	if _, err := transfer.ExportTables(ctx, svc, set[:2], backups, "set/1", opts); !errors.Is(err, transfer.ErrInvalid) {
		t.Fatalf("resume with other tables: %v, want ErrInvalid", err)
	}
	var last transfer.Progress
	opts.Progress = func(p transfer.Progress) { last = p }
	sums, err := transfer.ExportTables(ctx, svc, set, backups, "set/1", opts)
	if err != nil {
		t.Fatal(err)
	}
	var exported int64
	for i, s := range sums {
		if s.Table != set[i] {
			t.Errorf("summary %d is of %q, want %q", i, s.Table, set[i])
		}
		exported += s.Entities
	}
	// The resume exported what the crashes left: the staff whole, with
	// their photos.
	if sums[0].Entities != 0 || sums[3].Entities != n || sums[3].Blobs != n-n/5 {
		t.Fatalf("resumed export: %+v, want nothing of the first table and the staff (%d) with their photos", sums, n)
	}
	if last.Entities != exported || last.Total != 0 {
		t.Fatalf("export progress: %+v, want %d entities and no Total", last, exported)
	}
	// The set holds every table whole.
	if _, err := transfer.VerifyExportTables(ctx, backups, "set/1", svc, &transfer.Options{TargetBlobs: opts.Blobs}); err != nil {
		t.Fatalf("verify the set against its sources: %v", err)
	}
	if _, err := transfer.ExportTables(ctx, svc, set, backups, "set/1", nil); !errors.Is(err, transfer.ErrExists) {
		t.Fatalf("export again without Resume: %v, want ErrExists", err)
	}

	// Restore under other names: the periods of rotation "r"+base.
	dstPhotos := r.Container()
	rename := func(name string) string {
		if name == staffName {
			return "r" + strings.ToLower(name)
		}
		return "r" + name
	}
	crashes = testrig.Crashes{}
	crashes.At("written", 2)
	iopts := &transfer.Options{TargetBlobs: &transfer.Blobs{Container: dstPhotos}, Rename: rename}
	transfer.SetHook(iopts, crashes.Hook)
	if _, err := transfer.ImportTables(ctx, backups, "set/1", svc, iopts); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("import: %v, want the crash", err)
	}
	transfer.SetHook(iopts, nil)
	iopts.Resume = true
	var reports []transfer.Progress
	iopts.Progress = func(p transfer.Progress) { reports = append(reports, p) }
	sums, err = transfer.ImportTables(ctx, backups, "set/1", svc, iopts)
	if err != nil {
		t.Fatal(err)
	}
	var imported int64
	for i, s := range sums {
		if s.Table != rename(set[i]) {
			t.Errorf("import summary %d is of %q, want %q", i, s.Table, rename(set[i]))
		}
		imported += s.Entities
	}
	end := reports[len(reports)-1]
	if end.Entities != imported || end.Total != imported {
		t.Fatalf("import progress at the end: %+v, want %d entities of %d", end, imported, imported)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i].Entities < reports[i-1].Entities {
			t.Fatalf("import progress went back: %+v after %+v", reports[i], reports[i-1])
		}
	}
	if _, err := transfer.VerifyExportTables(ctx, backups, "set/1", svc, &transfer.Options{TargetBlobs: iopts.TargetBlobs, Rename: rename}); err != nil {
		t.Fatalf("verify the set: %v", err)
	}
	restored, err := rotation.New[login](svc, "r"+base, &rotation.Options{Period: rotation.Month})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readAll(t, restored), readAll(t, rt); !slices.Equal(got, want) || len(got) != 36 {
		t.Fatalf("restored rotation: %d logins, want %d equal", len(got), len(want))
	}
	checkStaff(t, store(t, table.NewClient(svc, rename(staffName)), dstPhotos), n)

	// A change in one table is named, and every table is still compared.
	tb := testrig.NewTable[login](t, table.NewClient(svc, rename(periods[0])))
	if _, err := tb.Upsert(ctx, login{User: "u9", At: "late", IP: "x"}, table.Replace); err != nil {
		t.Fatal(err)
	}
	sums, err = transfer.VerifyExportTables(ctx, backups, "set/1", svc, &transfer.Options{TargetBlobs: iopts.TargetBlobs, Rename: rename})
	if !errors.Is(err, transfer.ErrMismatch) || !strings.Contains(err.Error(), rename(periods[0])) || len(sums) != len(set) || sums[0].Differences != 1 {
		t.Fatalf("verify after a change: %v, %d summaries, want ErrMismatch naming %s", err, len(sums), rename(periods[0]))
	}
}

// tableNameOf returns the name of c's table.
func tableNameOf(t *testing.T, c *aztables.Client) string {
	return testrig.NewTable[table.Dynamic](t, c).Name()
}

// TestTablesRefused: a bad list of tables, a missing table, a forged or
// unfinished set, a Rename that joins two tables, blobs on one side only
// and one TargetBlobs.Prefix for several tables' blobs are refused, each
// before anything is written (a bad list before any request).
func TestTablesRefused(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	svc := r.Service(t)
	src, other, empty := r.Table(), r.Table(), r.Table()
	seed(t, src, 5)
	seed(t, other, 3)
	name, otherName := tableNameOf(t, src), tableNameOf(t, other)
	backups, photos := r.Container(), r.Container()
	for _, tables := range [][]string{nil, {"a-b"}, {name, strings.ToUpper(name)}, {"tables"}, make([]string, 1001)} {
		before := r.Faults.Count()
		if _, err := transfer.ExportTables(ctx, svc, tables, backups, "bad", nil); !errors.Is(err, transfer.ErrInvalid) || r.Faults.Count() != before {
			t.Errorf("export of tables %.40q: %v after %d requests, want ErrInvalid before any", tables, err, r.Faults.Count()-before)
		}
	}
	// A table that does not exist: refused, no list written.
	if _, err := transfer.ExportTables(ctx, svc, []string{name, "nosuchtable"}, backups, "missing", nil); !errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("export of a missing table: %v, want ErrTableNotFound", err)
	}
	if _, err := transfer.ExportedTables(ctx, backups, "missing"); !errors.Is(err, transfer.ErrInvalid) {
		t.Fatalf("the list of a refused set: %v, want none (ErrInvalid)", err)
	}

	if _, err := transfer.ExportTables(ctx, svc, []string{name, otherName}, backups, "good", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := transfer.ExportedTables(ctx, backups, "good"); err != nil || !slices.Equal(got, []string{name, otherName}) {
		t.Fatalf("ExportedTables: %q, %v", got, err)
	}
	if _, err := transfer.ExportTables(ctx, svc, []string{name, otherName}, backups, "withblobs", &transfer.Options{Blobs: &transfer.Blobs{Container: photos}}); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Export(ctx, empty, backups, "empty", nil); err != nil {
		t.Fatal(err)
	}
	put := func(prefix, body string) { upload(t, backups, prefix+"/tables.json", []byte(body)) }
	const started = `"started":"2026-11-29T00:00:00Z"`
	put("forged/1", `{"format":"tablekit-transfer-tables/1","tables":["../x"],`+started+`}`)
	put("forged/2", `{"format":"tablekit-transfer-tables/1","tables":["victim"],`+started+`}`)
	upload(t, backups, "forged/2/victim/manifest.json", download(t, backups, "empty/manifest.json")) // an export of another table
	put("forged/3", `{"format":"tablekit-transfer-tables/1","tables":["never"],`+started+`}`)
	put("forged/4", `{"format":"tablekit-transfer-tables/1","tables":["abc"],"extra":1,`+started+`}`)
	put("forged/5", `{"format":"tablekit-transfer-tables/1","tables":["`+strings.Repeat("a", 1<<20)+`"],`+started+`}`)
	joined := &transfer.Options{Rename: func(string) string { return "joined" }}
	bad := map[string]*transfer.Options{"targets": {TargetBlobs: &transfer.Blobs{Container: photos}},
		"shared": {TargetBlobs: &transfer.Blobs{Container: photos, Prefix: "one"}}}
	for _, tc := range []struct {
		what, prefix string
		opts         *transfer.Options
		want         error
		corrupt      bool
	}{
		{"a bad name", "forged/1", nil, transfer.ErrCorrupt, true},
		{"an export of another table", "forged/2", nil, transfer.ErrCorrupt, true},
		{"a table never exported", "forged/3", nil, transfer.ErrInvalid, false},
		{"an unknown member", "forged/4", nil, transfer.ErrCorrupt, true},
		{"a list over its cap", "forged/5", nil, transfer.ErrCorrupt, true},
		{"no set", "none", nil, transfer.ErrInvalid, false},
		{"two tables into one", "good", joined, transfer.ErrInvalid, false},
		{"TargetBlobs for an export without blobs", "good", bad["targets"], transfer.ErrInvalid, false},
		{"an export with blobs, no TargetBlobs", "withblobs", nil, transfer.ErrInvalid, false},
		{"one Prefix for two tables' blobs", "withblobs", bad["shared"], transfer.ErrInvalid, false},
	} {
		before := r.Faults.Count()
		_, err := transfer.ImportTables(ctx, backups, tc.prefix, svc, tc.opts)
		if !errors.Is(err, tc.want) || errors.Is(err, transfer.ErrCorrupt) != tc.corrupt {
			t.Errorf("import of %s: %v, want %v", tc.what, err, tc.want)
		}
		for _, req := range r.Faults.Requests()[before:] {
			if req.Method != "GET" {
				t.Errorf("import of %s sent %s %s: want reads only", tc.what, req.Method, req.URL)
			}
		}
	}

	// An unfinished set: a table's export crashed.
	var crashes testrig.Crashes
	crashes.At("chunk", 1)
	opts := &transfer.Options{}
	transfer.SetHook(opts, crashes.Hook)
	if _, err := transfer.ExportTables(ctx, svc, []string{name, otherName}, backups, "unfinished", opts); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("export: %v, want the crash", err)
	}
	if _, err := transfer.ImportTables(ctx, backups, "unfinished", svc, nil); !errors.Is(err, transfer.ErrInvalid) || !strings.Contains(err.Error(), "resume the export") {
		t.Fatalf("import of an unfinished set: %v, want ErrInvalid", err)
	}
}

// TestTablesLostResponse: the list's write whose response is lost is
// sent again, finds its own write, and the export goes on.
func TestTablesLostResponse(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	seed(t, src, 5)
	backups := r.Container()
	r.Faults.Inject(faults.Fault{LoseResponse: true, Match: func(q *http.Request) bool {
		return q.Method == http.MethodPut && strings.HasSuffix(q.URL.Path, "/tables.json")
	}})
	before := r.Faults.Count()
	sums, err := transfer.ExportTables(ctx, r.Service(t), []string{tableNameOf(t, src)}, backups, "lost", nil)
	if err != nil || len(sums) != 1 || sums[0].Entities != 6 {
		t.Fatalf("export with the list's response lost: %v, %+v", err, sums)
	}
	lost := 0
	for _, q := range r.Faults.Requests()[before:] {
		if q.Injected {
			lost++
		}
	}
	if lost != 1 {
		t.Fatalf("%d responses lost, want the list's", lost)
	}
}

// TestTablesProgressWithRejects imports a set of two tables: Progress
// counts every entity of the set once, never going back between tables,
// and ends at the set's total. On Table Storage the target is the Cosmos
// DB profile, which cannot hold three entities of the first table: an
// Import's Progress counts its rejects, its Summary does not (the set's
// Progress once went back there), and the rejects are reported with
// their table. Under the Cosmos DB simulation the source cannot hold
// them either: the set is imported whole, into other tables.
func TestTablesProgressWithRejects(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	a, b := r.Table(), r.Table()
	seed(t, a, 20)
	seed(t, b, 10)
	set := []string{tableNameOf(t, a), tableNameOf(t, b)}
	into, rejects := r.Service(t), 0
	if !testrig.Cosmos() {
		plantUnholdable(t, a)
		into, rejects = testrig.NewCosmos(t).Service(t), 3
	}
	targets := map[string]string{set[0]: tableNameOf(t, r.Table()), set[1]: tableNameOf(t, r.Table())}
	backups := r.Container()
	if _, err := transfer.ExportTables(ctx, r.Service(t), set, backups, "p", &transfer.Options{ChunkBytes: 2 << 10}); err != nil {
		t.Fatal(err)
	}
	var reports []transfer.Progress
	sums, err := transfer.ImportTables(ctx, backups, "p", into, &transfer.Options{
		Rename:   func(name string) string { return targets[name] },
		Progress: func(p transfer.Progress) { reports = append(reports, p) }})
	if len(sums) != 2 || sums[0].Rejected != rejects || sums[1].Rejected != 0 {
		t.Fatalf("import: %v, %+v, want %d rejects in the first table", err, sums, rejects)
	}
	if rejects == 0 && err != nil || rejects > 0 && (!errors.Is(err, transfer.ErrRejected) || !strings.Contains(err.Error(), "table "+targets[set[0]])) {
		t.Fatalf("import: %v, want ErrRejected naming %s when it rejects", err, targets[set[0]])
	}
	total := int64(21 + rejects + 11)
	for i, p := range reports {
		if p.Total != total || i > 0 && p.Entities <= reports[i-1].Entities {
			t.Fatalf("progress %d: %+v after %+v, want rising counts of %d", i, p, reports[max(i-1, 0)], total)
		}
	}
	if end := reports[len(reports)-1]; end.Entities != total {
		t.Fatalf("progress ends at %+v, want %d entities", end, total)
	}
}
