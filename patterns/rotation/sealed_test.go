package rotation_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestSealedCursors: with Options.CursorKey, RangePage's cursors show no
// key, every altered cursor is ErrInvalid with nothing sent, a cursor of
// another range, filter or rotation is refused, each page resumes in
// fresh Tables with a key made from the same secret (every entity once),
// and the periods' tables seal their cursors too.
func TestSealedCursors(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, rig *testrig.Rig) {
		f := newFixtureOn(t, rig, jul30)
		ctx := context.Background()
		sealedOpts := func() *rotation.Options {
			return &rotation.Options{Grace: 30 * 24 * time.Hour, CursorKey: testrig.CursorKey(t)}
		}
		plain, sealed := f.tables(t, &rotation.Options{Grace: 30 * 24 * time.Hour}), f.tables(t, sealedOpts())
		var want []string
		for d, day := range []time.Time{jul30, jul31} {
			for i := range 6 {
				at := day.Add(time.Duration(i) * time.Hour)
				ip := fmt.Sprint(d, "-", i)
				if _, err := plain.Insert(ctx, at, loginAt(fmt.Sprintf("person%02d@contoso.com", i%3), at, ip)); err != nil {
					t.Fatal(err)
				}
				want = append(want, ip)
			}
		}
		slices.Sort(want)
		q := &rotation.RangeOptions{PageSize: 5}
		got, first := testrig.WalkPages(t, func(c table.Cursor) (table.Page[table.Entity[login]], error) {
			return f.tables(t, sealedOpts()).RangePage(ctx, jul30, aug1, c, q)
		}, func(e table.Entity[login]) string { return e.Value.IP }, "contoso", "person")
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want each of %v once", got, want)
		}
		page := func(r *rotation.Tables[login], to time.Time, q *rotation.RangeOptions) func(table.Cursor) error {
			return func(c table.Cursor) error {
				_, err := r.RangePage(ctx, jul30, to, c, q)
				return err
			}
		}
		rig.CheckSealed(t, first, rotation.ErrInvalid, page(sealed, aug1, q), "contoso", "person")
		other, err := rotation.New[login](f.svc, f.prefix+"y", sealedOpts())
		if err != nil {
			t.Fatal(err)
		}
		for _, refuse := range []func(table.Cursor) error{
			page(sealed, aug1.Add(time.Hour), q),
			page(sealed, aug1, &rotation.RangeOptions{PageSize: 5, Filter: table.PartitionKey("person00@contoso.com")}),
			page(other, aug1, q),
			page(plain, aug1, q),
		} {
			rig.CheckCursorsRefused(t, rotation.ErrInvalid, refuse, first)
		}
		// What sealing hides: a plain cursor shows the last entity's keys.
		p, err := plain.RangePage(ctx, jul30, aug1, "", q)
		if err != nil || p.Next == "" {
			t.Fatal(p, err)
		}
		if !testrig.CursorShows(p.Next, "contoso") {
			t.Fatalf("plain cursor %q: CursorShows misses its keys", p.Next)
		}
		rig.CheckCursorsRefused(t, rotation.ErrInvalid, page(sealed, aug1, q), p.Next)
		// A period's table seals its query cursors with the same key.
		tp, err := sealed.Table(jul30).QueryPage(ctx, &table.Query{PageSize: 2})
		if err != nil || tp.Next == "" || testrig.CursorShows(tp.Next, "contoso") {
			t.Fatalf("a period's table: cursor %q, %v", tp.Next, err)
		}
	})
}
