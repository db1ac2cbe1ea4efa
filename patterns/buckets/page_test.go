package buckets_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// RangePage pages through a logical partition spread over buckets (and a
// count used before, so one RowKey is in two buckets), in RowKey order,
// resuming in a fresh Spread from each cursor; a RowKey in two buckets is
// never split between pages; another range's cursor is refused.
func TestRangePage(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	var want []string
	for i := range 20 {
		k := keys.Pad(uint64(i), 3)
		if _, err := newSpread(t, tb, &buckets.Options{Buckets: 4}).Insert(ctx, access{Hour: "h", Key: k, Employee: k}); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	// The same RowKey again, in the partition of an earlier count (1).
	if _, err := newSpread(t, tb, &buckets.Options{Buckets: 1}).Insert(ctx, access{Hour: "h", Key: "005", Employee: "again"}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:6], append([]string{"005"}, want[6:]...)...)
	opts := &buckets.Options{Buckets: 4, Earlier: []int{1}}
	var got []string
	var cursor table.Cursor
	for pages := 0; ; pages++ {
		s := newSpread(t, tb, opts)
		ft.Reset()
		p, err := s.RangePage(ctx, "h", "001", "", 3, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if n := ft.Count(); n != 5 {
			t.Fatalf("a page took %d round trips, want 5 (one per partition)", n)
		}
		for _, e := range p.Items {
			got = append(got, e.RowKey)
		}
		if len(p.Items) > 3 && p.Items[len(p.Items)-1].RowKey != p.Items[len(p.Items)-2].RowKey {
			t.Fatalf("a page of %d: only a RowKey in several buckets may exceed n", len(p.Items))
		}
		if cursor = p.Next; cursor == "" {
			break
		}
		if pages > 10 {
			t.Fatal("no end")
		}
	}
	if !slices.Equal(got, want[1:]) {
		t.Fatalf("pages = %v, want %v", got, want[1:])
	}
	s := newSpread(t, tb, opts)
	p, err := s.RangePage(ctx, "h", "", "", 2, "")
	if err != nil || p.Next == "" {
		t.Fatal(p, err)
	}
	if _, err := s.RangePage(ctx, "h", "001", "", 2, p.Next); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("another range's cursor: %v", err)
	}
	if _, err := newSpread(t, tb, &buckets.Options{Buckets: 4}).RangePage(ctx, "h", "", "", 2, p.Next); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("a cursor of other bucket counts: %v", err)
	}
	if _, err := s.RangePage(ctx, "h", "", "", 0, ""); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("n = 0: %v", err)
	}
}
