package buckets_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestSealedCursors: over a table with a CursorKey, RangePage's cursors
// show no RowKey, every altered cursor is ErrInvalid with nothing sent, a
// cursor of another range, partition or table is refused, and each page
// resumes in a fresh Spread over a fresh table handle with a key made
// from the same secret: every entity once.
func TestSealedCursors(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		ctx := context.Background()
		tb, _ := newTableOn(t, r)
		opts := &buckets.Options{Buckets: 4}
		plain, sealed := newSpread(t, tb, opts), newSpread(t, keycursor.Sealed(tb, testrig.CursorKey(t)), opts)
		process := func() *buckets.Spread[access] {
			return newSpread(t, keycursor.Sealed(testrig.NewTable[access](t, r.TableClient(tb.Name(), r.TableOptions())), testrig.CursorKey(t)), opts)
		}
		var want []string
		for i := range 12 {
			k := fmt.Sprintf("person%02d@contoso.com", i)
			if _, err := plain.Insert(ctx, access{Hour: "h", Key: k}); err != nil {
				t.Fatal(err)
			}
			want = append(want, k)
		}
		page := func(s *buckets.Spread[access], pk, from string) func(table.Cursor) error {
			return func(c table.Cursor) error {
				_, err := s.RangePage(ctx, pk, from, "", c, &buckets.RangeOptions{PageSize: 5})
				return err
			}
		}
		got, first := testrig.WalkPages(t, func(c table.Cursor) (table.Page[buckets.Entry[access]], error) {
			return process().RangePage(ctx, "h", "", "", c, &buckets.RangeOptions{PageSize: 5})
		}, func(e buckets.Entry[access]) string { return e.RowKey }, "contoso", "person")
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want each of %v once", got, want)
		}
		r.CheckSealed(t, first, buckets.ErrInvalid, page(sealed, "h", ""), "contoso", "person")
		other := newSpread(t, keycursor.Sealed(testrig.NewTable[access](t, r.Table()), testrig.CursorKey(t)), opts)
		for _, refuse := range []func(table.Cursor) error{page(sealed, "h", "a"), page(sealed, "i", ""), page(other, "h", ""), page(plain, "h", "")} {
			r.CheckCursorsRefused(t, buckets.ErrInvalid, refuse, first)
		}
		// What sealing hides: a plain cursor shows the page's last RowKey.
		p, err := plain.RangePage(ctx, "h", "", "", "", &buckets.RangeOptions{PageSize: 5})
		if err != nil || p.Next == "" {
			t.Fatal(p, err)
		}
		if !testrig.CursorShows(p.Next, "contoso") {
			t.Fatalf("plain cursor %q: CursorShows misses its RowKey", p.Next)
		}
		r.CheckCursorsRefused(t, buckets.ErrInvalid, page(sealed, "h", ""), p.Next)
	})
}
