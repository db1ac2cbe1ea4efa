package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// note is another pattern's row in an employee's partition.
type note struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Text       string
}

// InsertOps uploads first, then its change joins another pattern's in one
// transaction: 1 blob upload + 1 transaction; the entity reads back with
// its photo. A transaction that fails leaves the new blob an orphan that
// Sweep deletes, never a pointer to a missing blob; a change past its
// NotAfter (half of Grace after the upload) is not sent.
func TestInsertOpsJoinsATransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, &largeentity.Options[Employee]{Grace: time.Hour})
	notes := testrig.NewTable[note](t, f.tbl.Client())
	ctx := context.Background()
	jo := Employee{Department: "Sales", ID: "1", Name: "Jo", Photo: photo(100<<10, 1)}
	ch, err := s.InsertOps(ctx, jo)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "InsertOps", 0, 1)
	if _, err := f.tbl.Apply(ctx, ch, table.Change{By: "notes", Ops: []table.Op{notes.InsertOp(note{Department: "Sales", Key: "n1", Text: "hired"})}}); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Apply", 1, 0)
	got, err := s.Get(ctx, "Sales", "1", nil)
	if err != nil || !bytes.Equal(got.Value.Photo, jo.Photo) || got.Value.Name != "Jo" {
		t.Fatalf("Get = %+v, %v", got.Blobs, err)
	}
	// The same id again: the transaction fails, the new blob is an orphan.
	ch, err = s.InsertOps(ctx, Employee{Department: "Sales", ID: "1", Photo: photo(100<<10, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.tbl.Apply(ctx, ch); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Apply of an existing id: %v", err)
	}
	if o := f.orphans(t); len(o) != 1 {
		t.Fatalf("orphans after a failed transaction: %v", o)
	}
	f.clock.Advance(2 * time.Hour)
	if sw, err := s.Sweep(ctx); err != nil || sw.Deleted != 1 {
		t.Fatalf("Sweep = %+v, %v", sw, err)
	}
	if _, err := s.Get(ctx, "Sales", "1", nil); err != nil {
		t.Fatalf("after Sweep: %v", err)
	}
	// A change prepared, then held past half of Grace, is not sent.
	ch, err = s.InsertOps(ctx, Employee{Department: "Sales", ID: "2", Photo: photo(100<<10, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if want := f.clock.Now().Add(30 * time.Minute); !ch.NotAfter.Equal(want) {
		t.Fatalf("NotAfter = %v, want %v (half of Grace after the upload)", ch.NotAfter, want)
	}
	ch.NotAfter = time.Now().Add(-time.Second) // the real clock: as if half of Grace had passed
	f.reset()
	if _, err := f.tbl.Apply(ctx, ch); !errors.Is(err, table.ErrNotApplied) {
		t.Fatalf("Apply past NotAfter: %v", err)
	}
	f.trips(t, "Apply past NotAfter", 0, 0)
}

// UpdateOps and DeleteOps: the replacement points at new blobs, the
// delete leaves its blobs to Sweep.
func TestUpdateAndDeleteOps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	res, err := s.Insert(ctx, Employee{Department: "Sales", ID: "1", Photo: photo(100<<10, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateOps(ctx, Employee{Department: "Sales", ID: "1"}, ""); !errors.Is(err, table.ErrNoETag) {
		t.Fatalf("UpdateOps without an ETag: %v", err)
	}
	ch, err := s.UpdateOps(ctx, Employee{Department: "Sales", ID: "1", Name: "Jo", Photo: photo(100<<10, 2)}, res.ETag)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := f.tbl.Apply(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "Sales", "1", nil)
	if err != nil || got.Value.Name != "Jo" || !bytes.Equal(got.Value.Photo, photo(100<<10, 2)) {
		t.Fatalf("after UpdateOps: %v", err)
	}
	if _, err := s.DeleteOps(ctx, "Sales", "1", azcore.ETag("")); !errors.Is(err, table.ErrNoETag) || !errors.Is(err, largeentity.ErrInvalid) {
		t.Fatalf("DeleteOps without an ETag: %v", err)
	}
	del, err := s.DeleteOps(ctx, "Sales", "1", ar.Ops[0].ETag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.tbl.Apply(ctx, del); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "Sales", "1", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("after DeleteOps: %v", err)
	}
	if o := f.orphans(t); len(o) != 2 {
		t.Fatalf("orphans: %v, want both versions' photos", o)
	}
}

// RangePage pages through a partition with a cursor that a fresh Store
// (another process) resumes; each page is 1 round trip + the blobs.
func TestRangePage(t *testing.T) {
	testrig.StorageOnly(t, "pages in key order; TestCosmosLargeEntity pages on Cosmos DB")
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	for i := range 5 {
		if _, err := s.Insert(ctx, Employee{Department: "Sales", ID: fmt.Sprint(i), Name: fmt.Sprint("n", i), Photo: photo(40<<10+i, uint64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	var cursor table.Cursor
	for range 10 {
		fresh := newStore[Employee](t, f, nil)
		f.reset()
		p, err := fresh.RangePage(ctx, "Sales", "", "", cursor, &largeentity.GetOptions{PageSize: 2, Select: []string{"Name", "Photo"}})
		if err != nil {
			t.Fatal(err)
		}
		f.trips(t, "a page", 1, len(p.Items))
		for _, e := range p.Items {
			if len(e.Value.Photo) != 40<<10+len(names) {
				t.Fatalf("%s: photo of %d bytes", e.RowKey, len(e.Value.Photo))
			}
			names = append(names, e.Value.Name)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if fmt.Sprint(names) != "[n0 n1 n2 n3 n4]" {
		t.Fatalf("pages = %v", names)
	}
}
