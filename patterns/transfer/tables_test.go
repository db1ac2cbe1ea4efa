package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

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
	t.Helper()
	tb, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tb.Name()
}

// TestTablesRefused: a bad list of tables, a forged or unfinished set and
// a Rename that joins two tables are refused, each before anything is
// written (a bad list before any request).
func TestTablesRefused(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	svc := r.Service(t)
	src := r.Table()
	seed(t, src, 5)
	name := tableNameOf(t, src)
	backups := r.Container()
	for _, tables := range [][]string{nil, {"a-b"}, {name, strings.ToUpper(name)}, {"tables"}, make([]string, 1001)} {
		before := r.Faults.Count()
		if _, err := transfer.ExportTables(ctx, svc, tables, backups, "bad", nil); !errors.Is(err, transfer.ErrInvalid) || r.Faults.Count() != before {
			t.Errorf("export of tables %.40q: %v after %d requests, want ErrInvalid before any", tables, err, r.Faults.Count()-before)
		}
	}
	other := r.Table()
	seed(t, other, 3)
	if _, err := transfer.ExportTables(ctx, svc, []string{name, tableNameOf(t, other)}, backups, "good", nil); err != nil {
		t.Fatal(err)
	}
	into := func(string) string { return "joined" }
	if _, err := transfer.ImportTables(ctx, backups, "good", svc, &transfer.Options{Rename: into}); !errors.Is(err, transfer.ErrInvalid) {
		t.Fatalf("import of two tables into one: %v, want ErrInvalid", err)
	}
	if _, err := transfer.ImportTables(ctx, backups, "none", svc, nil); !errors.Is(err, transfer.ErrInvalid) {
		t.Fatalf("import of no set: %v, want ErrInvalid", err)
	}

	// Forged lists: a bad name, a table whose export is of another table,
	// a table never exported, an unfinished export.
	put := func(prefix, body string) { upload(t, backups, prefix+"/tables.json", []byte(body)) }
	b, err := backups.NewBlobClient("good/"+name+"/manifest.json").DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := io.ReadAll(b.Body)
	b.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	const started = `"started":"2026-11-29T00:00:00Z"`
	put("forged/1", `{"format":"tablekit-transfer-tables/1","tables":["../x"],`+started+`}`)
	put("forged/2", `{"format":"tablekit-transfer-tables/1","tables":["victim"],`+started+`}`)
	upload(t, backups, "forged/2/victim/manifest.json", m)
	put("forged/3", `{"format":"tablekit-transfer-tables/1","tables":["never"],`+started+`}`)
	put("forged/4", `{"format":"tablekit-transfer-tables/1","tables":["abc"],"extra":1,`+started+`}`)
	for prefix, want := range map[string]error{"forged/1": transfer.ErrCorrupt, "forged/2": transfer.ErrCorrupt,
		"forged/3": transfer.ErrInvalid, "forged/4": transfer.ErrCorrupt} {
		before := r.Faults.Count()
		_, err := transfer.ImportTables(ctx, backups, prefix, svc, nil)
		if !errors.Is(err, want) {
			t.Errorf("import of %s: %v, want %v", prefix, err, want)
		}
		for _, req := range r.Faults.Requests()[before:] {
			if req.Method != "GET" {
				t.Errorf("import of %s sent %s %s: want reads only", prefix, req.Method, req.URL)
			}
		}
	}

	// An unfinished set: the second table's export crashed.
	var crashes testrig.Crashes
	crashes.At("chunk", 1)
	opts := &transfer.Options{}
	transfer.SetHook(opts, crashes.Hook)
	if _, err := transfer.ExportTables(ctx, svc, []string{name, tableNameOf(t, other)}, backups, "unfinished", opts); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("export: %v, want the crash", err)
	}
	if _, err := transfer.ImportTables(ctx, backups, "unfinished", svc, nil); !errors.Is(err, transfer.ErrInvalid) || !strings.Contains(err.Error(), "resume the export") {
		t.Fatalf("import of an unfinished set: %v, want ErrInvalid", err)
	}
}
