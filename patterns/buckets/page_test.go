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
		p, err := s.RangePage(ctx, "h", "001", "", cursor, &buckets.RangeOptions{PageSize: 3})
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
	p, err := s.RangePage(ctx, "h", "", "", "", &buckets.RangeOptions{PageSize: 2})
	if err != nil || p.Next == "" {
		t.Fatal(p, err)
	}
	if _, err := s.RangePage(ctx, "h", "001", "", p.Next, &buckets.RangeOptions{PageSize: 2}); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("another range's cursor: %v", err)
	}
	if _, err := newSpread(t, tb, &buckets.Options{Buckets: 4}).RangePage(ctx, "h", "", "", p.Next, &buckets.RangeOptions{PageSize: 2}); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("a cursor of other bucket counts: %v", err)
	}
	// PageSize: 0 is the default (1,000: the whole range in one page, no
	// Next); negative or over table.MaxPageSize is refused, nothing sent.
	if p, err := s.RangePage(ctx, "h", "", "", "", nil); err != nil || len(p.Items) != 21 || p.Next != "" {
		t.Fatalf("default page: %d items, Next %q, %v", len(p.Items), p.Next, err)
	}
	ft.Reset()
	for _, size := range []int{-1, table.MaxPageSize + 1} {
		if _, err := s.RangePage(ctx, "h", "", "", "", &buckets.RangeOptions{PageSize: size}); !errors.Is(err, buckets.ErrInvalid) {
			t.Fatalf("PageSize %d: %v", size, err)
		}
		for _, err := range s.Range(ctx, "h", "", "", &buckets.RangeOptions{PageSize: size}) {
			if !errors.Is(err, buckets.ErrInvalid) {
				t.Fatalf("Range with PageSize %d: %v", size, err)
			}
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests for refused page sizes", n)
	}
}

// TestRangePageEnds: a page that ends the range exactly has no Next when
// it is under table.MaxPageSize (each query asks for one more entity);
// a full page of table.MaxPageSize costs one round trip (the query asks
// for 1,000, not 1,001, which would take a second), so it has a Next even
// when the range ends with it, and that page is empty.
func TestRangePageEnds(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	s := newSpread(t, tb, &buckets.Options{Buckets: 1})
	var ops []table.Op
	for i := range table.MaxPageSize {
		k := keys.Pad(uint64(i), 4)
		ops = append(ops, s.InsertOp(access{Hour: "h", Key: k}))
	}
	if _, err := tb.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	// 20 entities in pages of 10: two pages, the second without a Next.
	p, err := s.RangePage(ctx, "h", "", "0020", "", &buckets.RangeOptions{PageSize: 10})
	if err != nil || len(p.Items) != 10 || p.Next == "" {
		t.Fatalf("first page of 10: %d items, Next %q, %v", len(p.Items), p.Next, err)
	}
	p, err = s.RangePage(ctx, "h", "", "0020", p.Next, &buckets.RangeOptions{PageSize: 10})
	if err != nil || len(p.Items) != 10 || p.Items[9].RowKey != "0019" || p.Next != "" {
		t.Fatalf("last page of 10: %d items, Next %q, %v", len(p.Items), p.Next, err)
	}
	// 1,000 entities in the default page of 1,000: one round trip.
	ft.Reset()
	p, err = s.RangePage(ctx, "h", "", "", "", nil)
	if err != nil || len(p.Items) != table.MaxPageSize || p.Next == "" {
		t.Fatalf("a page of 1,000: %d items, Next %q, %v", len(p.Items), p.Next, err)
	}
	if n := ft.Count(); n != 1 {
		t.Fatalf("a page of 1,000: %d round trips, want 1", n)
	}
	p, err = s.RangePage(ctx, "h", "", "", p.Next, nil)
	if err != nil || len(p.Items) != 0 || p.Next != "" {
		t.Fatalf("after a full last page: %d items, Next %q, %v", len(p.Items), p.Next, err)
	}
}
