package largeentity_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestSealedCursors: over a table with a CursorKey, RangePage's cursors
// show no key, every altered cursor is ErrInvalid with nothing sent, a
// cursor of another range is refused, and each page resumes in a fresh
// Store over a fresh table handle with a key made from the same secret:
// every entity once.
func TestSealedCursors(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		f := newFixtureOn(t, r)
		ctx := context.Background()
		process := func() *largeentity.Store[Employee] {
			tbl := testrig.NewTable[table.Dynamic](t, r.TableClient(f.tbl.Name(), r.TableOptions()))
			s, err := largeentity.New(keycursor.Sealed(tbl, testrig.CursorKey(t)), f.blobs, &largeentity.Options[Employee]{Now: f.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		var want []string
		for i := range 7 {
			e := Employee{Department: "SalesDept", ID: fmt.Sprintf("person%02d@contoso.com", i), Name: "n"}
			if _, err := process().Insert(ctx, e); err != nil {
				t.Fatal(err)
			}
			want = append(want, e.ID)
		}
		page := func(from string) func(table.Cursor) (table.Page[largeentity.Entity[Employee]], error) {
			return func(c table.Cursor) (table.Page[largeentity.Entity[Employee]], error) {
				return process().RangePage(ctx, "SalesDept", from, "", c, &largeentity.GetOptions{PageSize: 3})
			}
		}
		got, first := testrig.WalkPages(t, page(""), func(e largeentity.Entity[Employee]) string { return e.RowKey }, "contoso", "SalesDept")
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want each of %v once", got, want)
		}
		resume := func(from string) func(table.Cursor) error {
			return func(c table.Cursor) error {
				_, err := page(from)(c)
				return err
			}
		}
		r.CheckSealed(t, first, largeentity.ErrInvalid, resume(""), "contoso", "person", "SalesDept")
		r.CheckCursorsRefused(t, largeentity.ErrInvalid, resume("a"), first)
	})
}
