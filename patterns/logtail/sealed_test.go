package logtail_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestSealedCursors: over a table with a CursorKey, RangePage's cursors
// show no RowKey (the entries' times), every altered cursor is ErrInvalid
// with nothing sent, a cursor of another range, log or table is refused,
// and each page resumes in a fresh Log over a fresh table handle with a
// key made from the same secret: every entry once.
func TestSealedCursors(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		ctx := context.Background()
		tb := testrig.NewTable[login](t, r.Table())
		logOver := func(tb *table.Table[login]) *logtail.Log[login] {
			l, err := logtail.New(tb, &logtail.Options{Buckets: 3})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		plain, sealed := logOver(tb), logOver(keycursor.Sealed(tb, testrig.CursorKey(t)))
		process := func() *logtail.Log[login] {
			return logOver(keycursor.Sealed(testrig.NewTable[login](t, r.TableClient(tb.Name(), r.TableOptions())), testrig.CursorKey(t)))
		}
		const log = "jones@contoso.com"
		base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
		var want []string
		for i := range 10 {
			if _, err := plain.AppendAt(ctx, log, base.Add(time.Duration(i)*time.Second), login{IP: fmt.Sprint("10.0.0.", i)}); err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprint("10.0.0.", i))
		}
		slices.Sort(want)
		times := keys.InvertedTicks(base)[:9] // every entry's RowKey starts so
		from, to := base, base.Add(time.Minute)
		page := func(l *logtail.Log[login], log string, to time.Time) func(table.Cursor) error {
			return func(c table.Cursor) error {
				_, err := l.RangePage(ctx, log, from, to, c, &logtail.RangeOptions{PageSize: 3})
				return err
			}
		}
		got, first := testrig.WalkPages(t, func(c table.Cursor) (table.Page[logtail.Entry[login]], error) {
			return process().RangePage(ctx, log, from, to, c, &logtail.RangeOptions{PageSize: 3})
		}, func(e logtail.Entry[login]) string { return e.Value.IP }, times, "contoso")
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want each of %v once", got, want)
		}
		r.CheckSealed(t, first, logtail.ErrInvalid, page(sealed, log, to), times, "contoso")
		other := logOver(keycursor.Sealed(testrig.NewTable[login](t, r.Table()), testrig.CursorKey(t)))
		for _, refuse := range []func(table.Cursor) error{page(sealed, log, to.Add(time.Second)), page(sealed, "smith", to), page(other, log, to), page(plain, log, to)} {
			r.CheckCursorsRefused(t, logtail.ErrInvalid, refuse, first)
		}
		// What sealing hides: a plain cursor shows the last entry's time.
		p, err := plain.RangePage(ctx, log, from, to, "", &logtail.RangeOptions{PageSize: 3})
		if err != nil || p.Next == "" {
			t.Fatal(p, err)
		}
		if !testrig.CursorShows(p.Next, times) {
			t.Fatalf("plain cursor %q: CursorShows misses its RowKey", p.Next)
		}
		r.CheckCursorsRefused(t, logtail.ErrInvalid, page(sealed, log, to), p.Next)
	})
}
