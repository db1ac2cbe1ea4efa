package rotation_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
)

// RangePage pages through the periods of a range as Range yields them
// (key order, the same keys of two periods together, never split), each
// page resumed from its cursor by fresh Tables (another process).
func TestRangePage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul30)
	r := f.tables(t, &rotation.Options{Grace: 30 * 24 * time.Hour})
	ctx := context.Background()
	for d, day := range []time.Time{jul30, jul31} {
		for i := range 5 {
			at := day.Add(time.Duration(i) * time.Hour)
			if _, err := r.Insert(ctx, at, loginAt(fmt.Sprint("u", i%2), at, fmt.Sprint(d, "-", i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Insert(ctx, day, login{User: "u0", At: "same", IP: fmt.Sprint(d, "-same")}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for k, err := range r.Range(ctx, jul30, aug1, nil) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, k.Value.IP)
	}
	var got []string
	var cursor table.Cursor
	for pages := 0; ; pages++ {
		fresh := f.tables(t, &rotation.Options{Grace: 30 * 24 * time.Hour})
		f.ft.Reset()
		p, err := fresh.RangePage(ctx, jul30, aug1, cursor, &rotation.RangeOptions{PageSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		if n := f.ft.Count(); n != 3 {
			t.Fatalf("a page: %d round trips, want 3 (list, 2 periods)", n)
		}
		for _, e := range p.Items {
			got = append(got, e.Value.IP)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
		if pages > 10 {
			t.Fatal("no end")
		}
	}
	if len(want) != 12 || !slices.Equal(got, want) {
		t.Fatalf("pages = %v\nRange = %v", got, want)
	}
	// Seven: the page would end between the two periods' "same" rows; it
	// takes both.
	p, err := r.RangePage(ctx, jul30, aug1, "", &rotation.RangeOptions{PageSize: 7})
	if err != nil || len(p.Items) != 8 || p.Items[7].RowKey != "same" || p.Items[6].RowKey != "same" {
		t.Fatalf("a page of 7 ending at a key two periods have: %d items, %v", len(p.Items), err)
	}
	p, err = r.RangePage(ctx, jul30, aug1, "", &rotation.RangeOptions{PageSize: 2})
	if err != nil || p.Next == "" {
		t.Fatal(p, err)
	}
	for name, o := range map[string]*rotation.RangeOptions{"another filter": {Filter: table.PartitionKey("u1"), PageSize: 2}, "another selection": {Select: []string{"IP"}, PageSize: 2}} {
		if _, err := r.RangePage(ctx, jul30, aug1, p.Next, o); !errors.Is(err, rotation.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
