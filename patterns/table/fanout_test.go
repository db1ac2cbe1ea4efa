package table_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// FanOutEntities merges queries over several tables in the service's key order
// (ties in query order), or by RowKey first with ByRowKey, each entity with
// its stored keys; one round trip per page of each query.
func TestFanOutEntitiesAcrossTables(t *testing.T) {
	t.Parallel()
	t1, ft1 := newTable[employee](t)
	t2, ft2 := newTable[employee](t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	type row struct{ pk, rk, src string }
	var want []row
	for i, tb := range []*table.Table[employee]{t1, t2} {
		var ops []table.Op
		seen := map[string]bool{}
		for len(ops) < 150 {
			pk, rk := fmt.Sprint("p", r.IntN(3)), keys.Pad(uint64(r.IntN(400)), 4)
			if seen[pk+rk] {
				continue
			}
			seen[pk+rk] = true
			ops = append(ops, tb.InsertOp(employee{Department: pk, ID: rk, FirstName: fmt.Sprint(i)}))
			want = append(want, row{pk, rk, fmt.Sprint(i)})
		}
		if _, err := tb.Submit(ctx, ops, nil); err != nil {
			t.Fatal(err)
		}
	}
	srcs := func() []keycursor.Source[employee] {
		var out []keycursor.Source[employee]
		for _, tb := range []*table.Table[employee]{t1, t2} {
			for p := range 3 {
				out = append(out, keycursor.Source[employee]{Table: tb, Query: &table.Query{Filter: table.PartitionKey(fmt.Sprint("p", p)), PageSize: 40}})
			}
		}
		return out
	}
	collect := func(opts *table.FanOutOptions) []row {
		t.Helper()
		var got []row
		for k, err := range keycursor.FanOut(ctx, srcs(), opts) {
			if err != nil {
				t.Fatal(err)
			}
			if k.PartitionKey != k.Value.Department || k.RowKey != k.Value.ID {
				t.Fatalf("keys %q/%q for entity %+v", k.PartitionKey, k.RowKey, k.Value)
			}
			got = append(got, row{k.PartitionKey, k.RowKey, k.Value.FirstName})
		}
		return got
	}
	ft1.Reset()
	ft2.Reset()
	byKey := slices.Clone(want)
	slices.SortStableFunc(byKey, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.pk, b.pk), cmp.Compare(a.rk, b.rk), cmp.Compare(a.src, b.src))
	})
	if got := collect(&table.FanOutOptions{Ordered: true, Concurrency: 2}); !slices.Equal(got, byKey) {
		t.Fatalf("ordered across tables: %d rows, want %d in key order (first %v)", len(got), len(byKey), got[:min(5, len(got))])
	}
	// 150 rows per table over 3 partitions in pages of 40: 2 pages per
	// partition (3 when one holds over 80), never more than 3.
	if n1, n2 := ft1.Count(), ft2.Count(); n1 < 6 || n1 > 9 || n2 < 6 || n2 > 9 {
		t.Fatalf("round trips %d and %d, want 6-9 each", n1, n2)
	}
	byRow := slices.Clone(want)
	slices.SortStableFunc(byRow, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.rk, b.rk), cmp.Compare(a.pk, b.pk), cmp.Compare(a.src, b.src))
	})
	if got := collect(&table.FanOutOptions{ByRowKey: true}); !slices.Equal(got, byRow) {
		t.Fatalf("by RowKey: %d rows, want %d in RowKey order", len(got), len(byRow))
	}
	unordered := collect(nil)
	slices.SortStableFunc(unordered, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.pk, b.pk), cmp.Compare(a.rk, b.rk), cmp.Compare(a.src, b.src))
	})
	if !slices.Equal(unordered, byKey) {
		t.Fatalf("unordered: another set (%d rows)", len(unordered))
	}
	// A source without a table is refused before any request.
	ft1.Reset()
	for _, err := range keycursor.FanOut(ctx, append(srcs(), keycursor.Source[employee]{}), nil) {
		if !errors.Is(err, table.ErrInvalidFilter) {
			t.Fatalf("nil table: %v", err)
		}
	}
	if n := ft1.Count(); n != 0 {
		t.Fatalf("%d requests sent for an invalid fan-out", n)
	}
}
