package secondaryindex_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestSealedCursors: over a table with a CursorKey, the cursors of
// ListPage and RangePage (of an index in the primary's partition, in
// another partition, and in another table: Index.Table takes the Store's
// key) show no key and no indexed value (an email), every altered
// cursor is ErrInvalid with nothing sent, a cursor of one listing is
// refused by another, and each page resumes in a fresh Store over a
// fresh table handle with a key made from the same secret (another
// process): every entity once.
func TestSealedCursors(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, base *testrig.Rig) {
		r := newRigOn(t, base, intraIndexes(), true)
		w := r.worker(t)
		ctx := context.Background()
		// A Store of a process: over a table handle of its own (its reads'
		// client; writes of OtherPartition indexes need the queue's).
		storeOver := func(tbl *table.Table[table.Dynamic]) *secondaryindex.Store[Employee] {
			s, err := secondaryindex.New(keycursor.Sealed(tbl, testrig.CursorKey(t)), r.opts)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		process := func() *secondaryindex.Store[Employee] {
			return storeOver(testrig.NewTable[table.Dynamic](t, r.TableClient(r.tbl.Name(), r.TableOptions())))
		}
		store := storeOver(r.tbl)
		var want []string
		for i := range 12 {
			e := Employee{Department: "Sales", ID: fmt.Sprintf("%03d", i), FirstName: "F", LastName: fmt.Sprintf("Surname%02d", i), Email: fmt.Sprintf("person%02d@contoso.com", i), Age: int64(30 + i)}
			if _, err := store.Insert(ctx, e); err != nil {
				t.Fatal(err)
			}
			want = append(want, e.ID)
		}
		drain(t, w)
		type page = table.Page[secondaryindex.Entity[Employee]]
		listings := []struct {
			name  string
			next  func(*secondaryindex.Store[Employee], table.Cursor) (page, error)
			shown []string
		}{
			{"ListPage", func(s *secondaryindex.Store[Employee], c table.Cursor) (page, error) {
				return s.ListPage(ctx, "Sales", c, &secondaryindex.ListOptions{PageSize: 5})
			}, []string{"contoso", "Surname", "empid"}},
			{"email", func(s *secondaryindex.Store[Employee], c table.Cursor) (page, error) {
				return s.RangePage(ctx, "Sales", "email", "a", "z", c, &secondaryindex.LookupOptions{PageSize: 5})
			}, []string{"contoso", "person"}},
			{"email2 (OtherPartition)", func(s *secondaryindex.Store[Employee], c table.Cursor) (page, error) {
				return s.RangePage(ctx, "Sales", "email2", "a", "z", c, &secondaryindex.LookupOptions{PageSize: 5})
			}, []string{"contoso", "person", "email2"}},
			{"age (Index.Table)", func(s *secondaryindex.Store[Employee], c table.Cursor) (page, error) {
				return s.RangePage(ctx, "", "age", 0, 999, c, &secondaryindex.LookupOptions{PageSize: 5})
			}, []string{"everyone", "Sales"}},
		}
		var firsts []table.Cursor
		for _, l := range listings {
			got, first := testrig.WalkPages(t, func(c table.Cursor) (page, error) {
				return l.next(process(), c)
			}, func(e secondaryindex.Entity[Employee]) string { return e.RowKey }, l.shown...)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: pages = %v, want each of %v once", l.name, got, want)
			}
			r.CheckSealed(t, first, secondaryindex.ErrInvalid, func(c table.Cursor) error {
				_, err := l.next(store, c)
				return err
			}, l.shown...)
			firsts = append(firsts, first)
		}
		// What sealing hides: the plain cursor of the email index shows the
		// next copy's value (on Table Storage, whose tokens are keys).
		p, err := listings[1].next(r.store, "")
		if err != nil || p.Next == "" {
			t.Fatal(p, err)
		}
		if base.Profile().Sorted && !testrig.CursorShows(p.Next, "contoso") {
			t.Fatalf("plain cursor %q: CursorShows misses the email", p.Next)
		}
		// Each listing refuses the others' cursors, and the Store over the
		// plain table refuses them all.
		for i, l := range listings {
			for j, c := range firsts {
				if i != j {
					r.CheckCursorsRefused(t, secondaryindex.ErrInvalid, func(c table.Cursor) error {
						_, err := l.next(store, c)
						return err
					}, c)
				}
			}
			r.CheckCursorsRefused(t, secondaryindex.ErrInvalid, func(c table.Cursor) error {
				_, err := l.next(r.store, c)
				return err
			}, firsts[i])
		}
	})
}
