package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// employee is the guide's large entity: a photo kept in a blob.
type employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	Photo      []byte `largeentity:"always"`
}

func photo(i int) []byte { return bytes.Repeat([]byte{byte(i), 0xd8, 0xff}, 1000+i) }

// staff returns a largeentity Store of employees over c and a fresh
// container, with n employees (each a photo, but every fifth), and the
// container.
func staff(t *testing.T, r *testrig.Rig, c *aztables.Client, n int) (*largeentity.Store[employee], *container.Client) {
	t.Helper()
	photos := r.Container()
	s := store(t, c, photos)
	for i := range n {
		e := employee{Department: fmt.Sprintf("d%d", i%3), ID: fmt.Sprintf("e%03d", i), Name: fmt.Sprint("employee ", i)}
		if i%5 != 0 {
			e.Photo = photo(i)
		}
		if _, err := s.Insert(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	return s, photos
}

func store(t *testing.T, c *aztables.Client, photos *container.Client) *largeentity.Store[employee] {
	t.Helper()
	s, err := largeentity.New[employee](testrig.NewTable[table.Dynamic](t, c), photos, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkStaff reads every employee of s and checks its photo (largeentity
// checks its size and SHA-256 against the pointer).
func checkStaff(t *testing.T, s *largeentity.Store[employee], n int) {
	t.Helper()
	for i := range n {
		e, err := s.Get(context.Background(), fmt.Sprintf("d%d", i%3), fmt.Sprintf("e%03d", i), nil)
		if err != nil {
			t.Fatalf("employee %d: %v", i, err)
		}
		want := photo(i)
		if i%5 == 0 {
			want = nil
		}
		if !bytes.Equal(e.Value.Photo, want) {
			t.Fatalf("employee %d: photo of %d bytes, want %d", i, len(e.Value.Photo), len(want))
		}
	}
}

// TestBlobs exports a table of large entities with their photos, imports
// it into another table and container (whose Store's default Prefix, the
// table's name, differs: pointers are renamed), copies it to a third, and
// verifies each: every photo reads back through the target's Store.
func TestBlobs(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	const n = 20 // 16 photos
	_, photos := staff(t, r, src, n)
	from := &transfer.Blobs{Container: photos}

	backups := r.Container()
	opts := &transfer.Options{Blobs: from, ChunkBytes: 4 << 10, Ranges: 2}
	exp, err := transfer.Export(ctx, src, backups, "b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Entities != n || exp.Blobs != 16 || exp.Rejected != 0 {
		t.Fatalf("export: %d entities, %d blobs, %d rejects", exp.Entities, exp.Blobs, exp.Rejected)
	}

	dst, dstPhotos := r.Table(), r.Container()
	to := &transfer.Blobs{Container: dstPhotos}
	if _, err := transfer.Import(ctx, backups, "b", dst, nil); !errors.Is(err, transfer.ErrInvalid) || !strings.Contains(err.Error(), "TargetBlobs") {
		t.Fatalf("import without TargetBlobs: %v, want ErrInvalid naming TargetBlobs", err)
	}
	for range 2 { // idempotent
		imp, err := transfer.Import(ctx, backups, "b", dst, &transfer.Options{TargetBlobs: to})
		if err != nil || imp.Entities != n || imp.Blobs != 16 {
			t.Fatalf("import: %v, %d entities, %d blobs", err, imp.Entities, imp.Blobs)
		}
	}
	checkStaff(t, store(t, dst, dstPhotos), n)
	if sum, err := transfer.Verify(ctx, src, dst, &transfer.Options{Blobs: from, TargetBlobs: to}); err != nil || sum.Blobs != 16 {
		t.Fatalf("verify: %v, %d blobs checked (changed %v)", err, sum.Blobs, sum.Changed)
	}
	if _, err := transfer.VerifyExport(ctx, backups, "b", dst, &transfer.Options{TargetBlobs: to}); err != nil {
		t.Fatalf("verify export: %v", err)
	}
	// Without the blobs' Options, the pointers' names differ.
	if _, err := transfer.Verify(ctx, src, dst, nil); !errors.Is(err, transfer.ErrMismatch) {
		t.Fatalf("verify without Blobs: %v, want ErrMismatch (the pointers name other blobs)", err)
	}

	cp, cpPhotos := r.Table(), r.Container()
	sum, err := transfer.Copy(ctx, src, cp, &transfer.Options{Blobs: from, TargetBlobs: &transfer.Blobs{Container: cpPhotos}})
	if err != nil || sum.Entities != n || sum.Blobs != 16 {
		t.Fatalf("copy: %v, %d entities, %d blobs", err, sum.Entities, sum.Blobs)
	}
	checkStaff(t, store(t, cp, cpPhotos), n)

	// A photo altered in the target is found by Verify.
	var name string
	for b, err := range listBlobs(ctx, dstPhotos) {
		if err != nil {
			t.Fatal(err)
		}
		name = b
	}
	upload(t, dstPhotos, name, []byte("not the photo"))
	sum, err = transfer.Verify(ctx, src, dst, &transfer.Options{Blobs: from, TargetBlobs: to})
	if !errors.Is(err, transfer.ErrMismatch) || len(sum.Changed) != 1 {
		t.Fatalf("verify of an altered photo: %v, changed %v", err, sum.Changed)
	}
}

// listBlobs yields the names of c's blobs.
func listBlobs(ctx context.Context, c *container.Client) func(func(string, error) bool) {
	return func(yield func(string, error) bool) {
		pager := c.NewListBlobsFlatPager(nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield("", err)
				return
			}
			for _, b := range page.Segment.BlobItems {
				if !yield(*b.Name, nil) {
					return
				}
			}
		}
	}
}

// TestBlobsUntrusted: rows whose pointers a Store would not follow (a
// tenant's row naming another entity's blob, a blob deleted under its
// row, a blob altered) are left out of an export and of a copy and
// rejected with their keys (the export's manifest records them); the
// rest is exported, imported and copied.
func TestBlobsUntrusted(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	s, photos := staff(t, r, src, 6)
	raw := reserved.Table(testrig.NewTable[table.Dynamic](t, src))
	// e001 points at e002's photo; e003's photo is gone; e004's altered.
	// (e000 and e005 have no photo: e002 is the one left.)
	e2, err := s.Get(ctx, "d2", "e002", nil)
	if err != nil {
		t.Fatal(err)
	}
	row, err := raw.Get(ctx, "d1", "e001", nil)
	if err != nil {
		t.Fatal(err)
	}
	row.Value.Properties[reserved.BlobPointerPrefix+"Photo"] = fmt.Sprintf(`{"blob":%q,"size":%d,"sha256":%q}`, e2.Blobs[0].Name, e2.Blobs[0].Size, e2.Blobs[0].SHA256)
	if _, err := raw.Upsert(ctx, row.Value, table.Replace); err != nil {
		t.Fatal(err)
	}
	e3, _ := s.Get(ctx, "d0", "e003", nil)
	if _, err := photos.NewBlobClient(e3.Blobs[0].Name).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e4, _ := s.Get(ctx, "d1", "e004", nil)
	upload(t, photos, e4.Blobs[0].Name, bytes.Repeat([]byte{7}, int(e4.Blobs[0].Size)))

	backups := r.Container()
	from := &transfer.Blobs{Container: photos}
	exp, err := transfer.Export(ctx, src, backups, "b", &transfer.Options{Blobs: from})
	if !errors.Is(err, transfer.ErrRejected) || exp.Entities != 3 || exp.Blobs != 1 || keys(exp.Rejects) != "d0/e003 d1/e001 d1/e004" {
		t.Fatalf("export: %v, %d entities, %d blobs, rejects %v", err, exp.Entities, exp.Blobs, exp.Rejects)
	}
	for _, rej := range exp.Rejects {
		t.Logf("export reject: %v", rej)
	}
	if !strings.Contains(fmt.Sprint(exp.Rejects), "ErrForeignBlob") && !strings.Contains(fmt.Sprint(exp.Rejects), "not one of this entity") {
		t.Errorf("the foreign pointer's reject does not say so: %v", exp.Rejects)
	}
	dst, dstPhotos := r.Table(), r.Container()
	imp, err := transfer.Import(ctx, backups, "b", dst, &transfer.Options{TargetBlobs: &transfer.Blobs{Container: dstPhotos}})
	if err != nil || imp.Entities != 3 {
		t.Fatalf("import: %v, %d entities", err, imp.Entities)
	}
	// A resumed export of a complete one reports its rejects, from the manifest.
	again, err := transfer.Export(ctx, src, backups, "b", &transfer.Options{Blobs: from, Resume: true})
	if !errors.Is(err, transfer.ErrRejected) || keys(again.Rejects) != "d0/e003 d1/e001 d1/e004" {
		t.Fatalf("export again: %v, rejects %v", err, again.Rejects)
	}
	cp := r.Table()
	sum, err := transfer.Copy(ctx, src, cp, &transfer.Options{Blobs: from, TargetBlobs: &transfer.Blobs{Container: r.Container()}})
	if !errors.Is(err, transfer.ErrRejected) || sum.Entities != 3 || keys(sum.Rejects) != "d0/e003 d1/e001 d1/e004" {
		t.Fatalf("copy: %v, %d entities, rejects %v", err, sum.Entities, sum.Rejects)
	}
}

func keys(rs []transfer.Reject) string {
	var ks []string
	for _, r := range rs {
		ks = append(ks, r.PartitionKey+"/"+r.RowKey)
	}
	slices.Sort(ks)
	return strings.Join(ks, " ")
}

// TestBlobsChangedDuringExport: the photo an entity pointed at when the
// scan read it is gone when the export reads it (the entity was updated
// and the old photo swept): the export reads the entity again and
// exports its new version with its new photo.
func TestBlobsChangedDuringExport(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	s, photos := staff(t, r, src, 3)
	old, err := s.Get(ctx, "d1", "e001", nil)
	if err != nil {
		t.Fatal(err)
	}
	oldBlob := old.Blobs[0].Name
	clean := store(t, r.Clean(src), photos) // writes outside the faults' count
	r.Faults.Inject(faults.Fault{
		Match: func(req *http.Request) bool {
			return req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, oldBlob)
		},
		Respond: func(req *http.Request) *http.Response {
			v := old.Value
			v.Photo = bytes.Repeat([]byte("new"), 500)
			if _, err := clean.Update(ctx, v, old.ETag); err != nil {
				t.Error(err)
			}
			if _, err := photos.NewBlobClient(oldBlob).Delete(ctx, nil); err != nil { // as Sweep would, after its grace
				t.Error(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
			}
			return resp
		},
	})
	backups := r.Container()
	exp, err := transfer.Export(ctx, src, backups, "b", &transfer.Options{Blobs: &transfer.Blobs{Container: photos}})
	if err != nil || exp.Entities != 3 || exp.Blobs != 2 {
		t.Fatalf("export: %v, %d entities, %d blobs", err, exp.Entities, exp.Blobs)
	}
	dst, dstPhotos := r.Table(), r.Container()
	if _, err := transfer.Import(ctx, backups, "b", dst, &transfer.Options{TargetBlobs: &transfer.Blobs{Container: dstPhotos}}); err != nil {
		t.Fatal(err)
	}
	got, err := store(t, dst, dstPhotos).Get(ctx, "d1", "e001", nil)
	if err != nil || string(got.Value.Photo) != strings.Repeat("new", 500) {
		t.Fatalf("restored e001: %v, photo %.20q", err, got.Value.Photo)
	}
}

// TestBlobsCrashResume crashes an export and an import of a table with
// photos after each page's or chunk's blobs are written (before the rows
// that point at them), resumes, and checks every photo.
func TestBlobsCrashResume(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	const n = 30
	_, photos := staff(t, r, src, n)
	from := &transfer.Blobs{Container: photos}
	backups := r.Container()
	for pass := 1; pass <= 3; pass++ {
		prefix := fmt.Sprint("crash/", pass)
		var crashes testrig.Crashes
		crashes.At("blobs", pass)
		opts := &transfer.Options{Blobs: from, ChunkBytes: 4 << 10}
		transfer.SetHook(opts, crashes.Hook)
		if _, err := transfer.Export(ctx, src, backups, prefix, opts); !errors.Is(err, testrig.ErrCrash) {
			t.Fatalf("export pass %d: %v, want the crash", pass, err)
		}
		opts.Resume = true
		transfer.SetHook(opts, nil)
		if _, err := transfer.Export(ctx, src, backups, prefix, opts); err != nil {
			t.Fatalf("export pass %d: resume: %v", pass, err)
		}
		dst, dstPhotos := r.Table(), r.Container()
		to := &transfer.Blobs{Container: dstPhotos}
		crashes = testrig.Crashes{}
		crashes.At("blobs", pass)
		iopts := &transfer.Options{TargetBlobs: to}
		transfer.SetHook(iopts, crashes.Hook)
		if _, err := transfer.Import(ctx, backups, prefix, dst, iopts); !errors.Is(err, testrig.ErrCrash) {
			t.Fatalf("import pass %d: %v, want the crash", pass, err)
		}
		iopts.Resume = true
		transfer.SetHook(iopts, nil)
		if _, err := transfer.Import(ctx, backups, prefix, dst, iopts); err != nil {
			t.Fatalf("import pass %d: resume: %v", pass, err)
		}
		if _, err := transfer.Verify(ctx, src, dst, &transfer.Options{Blobs: from, TargetBlobs: to}); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		checkStaff(t, store(t, dst, dstPhotos), n)
	}
}

// TestVerifyForgedPointer: a target row whose pointer is not one its
// Store would follow (here, the source pointer's size and SHA-256 without
// a blob name) is a change, whatever its text.
func TestVerifyForgedPointer(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	s, photos := staff(t, r, src, 2)
	dst, dstPhotos := r.Table(), r.Container()
	from, to := &transfer.Blobs{Container: photos}, &transfer.Blobs{Container: dstPhotos}
	if _, err := transfer.Copy(ctx, src, dst, &transfer.Options{Blobs: from, TargetBlobs: to}); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, "d1", "e001", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := reserved.Table(testrig.NewTable[table.Dynamic](t, dst))
	row, err := raw.Get(ctx, "d1", "e001", nil)
	if err != nil {
		t.Fatal(err)
	}
	row.Value.Properties[reserved.BlobPointerPrefix+"Photo"] = fmt.Sprintf(`{"size":%d,"sha256":%q}`, e.Blobs[0].Size, e.Blobs[0].SHA256)
	if _, err := raw.Upsert(ctx, row.Value, table.Replace); err != nil {
		t.Fatal(err)
	}
	sum, err := transfer.Verify(ctx, src, dst, &transfer.Options{Blobs: from, TargetBlobs: to})
	if !errors.Is(err, transfer.ErrMismatch) || fmt.Sprint(sum.Changed) != "[{d1 e001}]" {
		t.Fatalf("verify of a forged pointer: %v, changed %v", err, sum.Changed)
	}
}

// TestCheckpointDeleted: an import whose checkpoint is deleted while it
// runs (an operator starting over, a lifecycle rule) writes it again
// from the next chunk on, rather than looping on the missing version.
func TestCheckpointDeleted(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 30)
	if _, err := transfer.Export(ctx, src, blobs, "b", &transfer.Options{ChunkBytes: 4 << 10}); err != nil {
		t.Fatal(err)
	}
	dst := r.Table()
	o := &transfer.Options{}
	written := 0
	transfer.SetHook(o, func(step string) error {
		if step == "written" {
			if written++; written == 2 {
				if _, err := blobs.NewBlobClient("b/import-"+testrig.NewTable[table.Dynamic](t, dst).Name()+".json").Delete(ctx, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := transfer.Import(tctx, blobs, "b", dst, o); err != nil {
		t.Fatalf("import with its checkpoint deleted: %v", err)
	}
	verifyEqual(t, src, dst)
}

// TestBlobsOptionsRefused: Blobs options no call can use are refused
// before any request, by every verb: a nil Container, a Prefix too long,
// Blobs without TargetBlobs where both are needed, and a copy whose target
// Store would name its blobs as the source's (one container, one Prefix:
// the two tables would share blobs that either Store deletes).
func TestBlobsOptionsRefused(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	photos, src, dst, backups := r.Container(), r.Table(), r.Table(), r.Container()
	ok := &transfer.Blobs{Container: photos}
	verbs := map[string]func(*transfer.Options) error{
		"export": func(o *transfer.Options) error { _, err := transfer.Export(ctx, src, backups, "x", o); return err },
		"import": func(o *transfer.Options) error { _, err := transfer.Import(ctx, backups, "x", dst, o); return err },
		"copy":   func(o *transfer.Options) error { _, err := transfer.Copy(ctx, src, dst, o); return err },
		"verify": func(o *transfer.Options) error { _, err := transfer.Verify(ctx, src, dst, o); return err },
		"verify export": func(o *transfer.Options) error {
			_, err := transfer.VerifyExport(ctx, backups, "x", dst, o)
			return err
		},
		"export tables": func(o *transfer.Options) error {
			_, err := transfer.ExportTables(ctx, r.Service(t), []string{"abc"}, backups, "x", o)
			return err
		},
	}
	cases := map[string]*transfer.Options{
		"nil Container":        {Blobs: &transfer.Blobs{Prefix: "staff"}, TargetBlobs: ok},
		"nil target Container": {Blobs: ok, TargetBlobs: &transfer.Blobs{}},
		"long Prefix":          {Blobs: &transfer.Blobs{Container: photos, Prefix: strings.Repeat("p", 513)}, TargetBlobs: ok},
	}
	for what, o := range cases {
		for verb, call := range verbs {
			before := r.Faults.Count()
			if err := call(o); !errors.Is(err, transfer.ErrInvalid) || r.Faults.Count() != before {
				t.Errorf("%s, %s: %v after %d requests, want ErrInvalid before any", verb, what, err, r.Faults.Count()-before)
			}
		}
	}
	for verb, o := range map[string]*transfer.Options{
		"copy with Blobs alone":         {Blobs: ok},
		"verify with TargetBlobs alone": {TargetBlobs: ok},
		"copy into the same blobs": {Blobs: &transfer.Blobs{Container: photos, Prefix: "staff"},
			TargetBlobs: &transfer.Blobs{Container: photos, Prefix: "staff"}},
	} {
		call := verbs[strings.Fields(verb)[0]]
		before := r.Faults.Count()
		if err := call(o); !errors.Is(err, transfer.ErrInvalid) || r.Faults.Count() != before {
			t.Errorf("%s: %v after %d requests, want ErrInvalid before any", verb, err, r.Faults.Count()-before)
		}
	}
}
