package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// Upsert: an insert when there is no entity, a replace of the version read
// otherwise, an unchanged value keeping its blob; round trips counted.
func TestUpsert(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	want := func(what string, v Employee) {
		t.Helper()
		got, err := s.Get(ctx, v.Department, v.ID, nil)
		if err != nil || got.Value.Name != v.Name || !bytes.Equal(got.Value.Photo, v.Photo) {
			t.Fatalf("%s: Get = %q, %d photo bytes, %v; want %q, %d", what, got.Value.Name, len(got.Value.Photo), err, v.Name, len(v.Photo))
		}
		f.reset()
	}
	v := at("Sales", "1", Employee{Name: "v1", Photo: photo(100<<10, 1)})
	f.reset()
	if res, err := s.Upsert(ctx, v); err != nil || len(res.Blobs) != 1 || res.ETag == "" {
		t.Fatalf("Upsert of a new entity = %+v, %v", res, err)
	}
	f.trips(t, "Upsert of a new entity (read, insert; upload)", 2, 1)
	want("after the insert", v)

	v.Name = "v2" // the same photo: its blob is kept
	if _, err := s.Upsert(ctx, v); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Upsert with the photo unchanged (read, replace)", 2, 0)
	want("after the rename", v)
	if o := f.orphans(t); len(o) != 0 {
		t.Fatalf("orphans %v, want none: the unchanged photo kept its blob", o)
	}

	v.Name, v.Photo = "v3", photo(90<<10, 2)
	if _, err := s.Upsert(ctx, v); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Upsert with a new photo (read, replace; upload)", 2, 1)
	want("after the new photo", v)
	if o := f.orphans(t); len(o) != 1 {
		t.Fatalf("orphans %v, want the replaced photo's", o)
	}

	v.Photo = nil // an inline value: no blob, the photo removed
	if _, err := s.Upsert(ctx, v); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Upsert without a photo", 2, 0)
	want("after removing the photo", v)

	// Refused before the network.
	for what, bad := range map[string]Employee{
		"a '/' in the RowKey":       at("Sales", "a/b", Employee{}),
		"a reserved PartitionKey":   at("~tk~x", "1", Employee{}),
		"a value over MaxValueSize": at("Sales", "2", Employee{Photo: make([]byte, largeentity.MaxValueSize+1)}),
	} {
		if _, err := s.Upsert(ctx, bad); !errors.Is(err, largeentity.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("Upsert with %s = %v, want ErrInvalid", what, err)
		}
	}
	f.trips(t, "refused Upserts", 0, 0)
}

// Another writer between Upsert's read and its write: the insert that
// finds the entity (409) and the replace that finds it changed (412) or
// gone (404) did not apply; their new blobs are deleted at once and
// Upsert starts again from the read. No orphan is left, and the value
// stored is Upsert's.
func TestUpsertConflicts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	other := newStore[Employee](t, f, nil)
	ctx := context.Background()
	// between runs fn once, at the first entity write of s.
	between := func(fn func() error) {
		done := false
		largeentity.SetHook(s, func(step string) error {
			if step != "entity" || done {
				return nil
			}
			done = true
			return fn()
		})
	}
	mine := func(rk string, seed uint64) Employee {
		return at("Sales", rk, Employee{Name: "mine", Photo: photo(100<<10, seed)})
	}
	check := func(what string, v Employee) {
		t.Helper()
		largeentity.SetHook(s, nil)
		got, err := s.Get(ctx, v.Department, v.ID, nil)
		if err != nil || got.Value.Name != "mine" || !bytes.Equal(got.Value.Photo, v.Photo) {
			t.Fatalf("%s: Get = %q, %v; want Upsert's value", what, got.Value.Name, err)
		}
		if o := f.orphans(t); len(o) != 0 {
			t.Fatalf("%s: orphans %v, want none", what, o)
		}
	}

	// 409: the entity was inserted (inline) after the read found none.
	v := mine("1", 1)
	between(func() error {
		_, err := other.Insert(ctx, at("Sales", "1", Employee{Name: "theirs"}))
		return err
	})
	f.reset()
	if _, err := s.Upsert(ctx, v); err != nil {
		t.Fatalf("Upsert after a concurrent insert: %v", err)
	}
	// read, the other's insert, insert (409), read, replace; upload,
	// delete (the refused write's blob), upload.
	f.trips(t, "Upsert with a 409", 5, 3)
	check("after a 409", v)

	// 412: the entity was replaced (inline) after the read.
	v = mine("1", 2)
	between(func() error {
		_, err := other.Update(ctx, at("Sales", "1", Employee{Name: "theirs"}), "*")
		return err
	})
	if _, err := s.Upsert(ctx, v); err != nil {
		t.Fatalf("Upsert after a concurrent update: %v", err)
	}
	// The replaced version's photo (seed 1) is an orphan by design (Sweep's):
	// take it away for the count.
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	if sw, err := s.Sweep(ctx); err != nil || sw.Deleted != 1 {
		t.Fatalf("Sweep = %+v, %v; want the photo the concurrent update replaced", sw, err)
	}
	check("after a 412", v)

	// 404: the entity was deleted after the read.
	v = mine("1", 3)
	between(func() error {
		e, err := other.Get(ctx, "Sales", "1", nil)
		if err == nil {
			err = other.Delete(ctx, "Sales", "1", e.ETag)
		}
		return err
	})
	if _, err := s.Upsert(ctx, v); err != nil {
		t.Fatalf("Upsert after a concurrent delete: %v", err)
	}
	check("after a 404", v)
}

// Upsert's crash points and lost responses, as Insert's and Update's: a
// crash after the uploads leaves the old version whole and the new blobs
// as orphans (Sweep's); every lost response is settled, the write never
// applied twice nor reported failed when it applied.
func TestUpsertCrashesAndLostResponses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	v1 := at("Sales", "1", Employee{Name: "v1", Photo: photo(100<<10, 1)})
	v2 := at("Sales", "1", Employee{Name: "v2", Photo: photo(100<<10, 2)})

	largeentity.SetHook(s, crashAt("upload"))
	if _, err := s.Upsert(ctx, v1); !errors.Is(err, errCrash) {
		t.Fatalf("Upsert stopped before its upload = %v", err)
	}
	largeentity.SetHook(s, crashAt("entity"))
	if _, err := s.Upsert(ctx, v1); !errors.Is(err, errCrash) {
		t.Fatalf("Upsert stopped before its entity = %v", err)
	}
	largeentity.SetHook(s, nil)
	if _, err := s.Get(ctx, "Sales", "1", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after the crashes = %v, want no entity", err)
	}
	if o := f.orphans(t); len(o) != 1 {
		t.Fatalf("orphans %v, want the one upload", o)
	}
	if _, err := s.Upsert(ctx, v1); err != nil {
		t.Fatal(err)
	}
	largeentity.SetHook(s, crashAt("entity"))
	if _, err := s.Upsert(ctx, v2); !errors.Is(err, errCrash) {
		t.Fatalf("Upsert of a new version stopped before its entity = %v", err)
	}
	largeentity.SetHook(s, nil)
	if got, err := s.Get(ctx, "Sales", "1", nil); err != nil || got.Value.Name != "v1" || !bytes.Equal(got.Value.Photo, v1.Photo) {
		t.Fatalf("after a crash of a replacing Upsert: %q, %v; want v1 whole", got.Value.Name, err)
	}
	if o := f.orphans(t); len(o) != 2 {
		t.Fatalf("orphans %v, want 2", o)
	}

	// Every write response lost: the insert, then the replace.
	lose := func(match func(*http.Request) bool) {
		f.r.Faults.Inject(faults.Fault{Match: match, LoseResponse: true})
	}
	blobPut := f.blob(func(r *http.Request) bool { return r.Method == http.MethodPut })
	v3 := at("Sales", "3", Employee{Name: "v1", Photo: photo(100<<10, 3)})
	lose(blobPut)
	lose(f.table(isWrite))
	if res, err := s.Upsert(ctx, v3); err != nil || !res.Verified {
		t.Fatalf("Upsert (an insert) with its responses lost = %+v, %v", res, err)
	}
	v3.Name, v3.Photo = "v2", photo(100<<10, 4)
	lose(blobPut)
	lose(f.table(isWrite))
	if res, err := s.Upsert(ctx, v3); err != nil || !res.Verified {
		t.Fatalf("Upsert (a replace) with its responses lost = %+v, %v", res, err)
	}
	if got, err := s.Get(ctx, "Sales", "3", nil); err != nil || got.Value.Name != "v2" || !bytes.Equal(got.Value.Photo, v3.Photo) {
		t.Fatalf("after the lost responses: %q, %v", got.Value.Name, err)
	}
	// One blob per upload (no duplicate): the 2 crash orphans and the
	// replaced photo of entity 3.
	if o := f.orphans(t); len(o) != 3 {
		t.Fatalf("orphans %v, want 3", o)
	}
}
