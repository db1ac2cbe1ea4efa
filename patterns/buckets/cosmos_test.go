package buckets_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCosmosRange: on each service (the Cosmos DB simulation returns each
// bucket's entities in no key order, across pages), Range yields a
// logical partition's entities in RowKey order, in one query per bucket
// partition, and Get finds each.
func TestCosmosRange(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		tb, ft := newTableOn(t, r)
		s := newSpread(t, tb, &buckets.Options{Buckets: 4})
		ctx := context.Background()
		var want []string
		for i := range 40 {
			k := fmt.Sprintf("k%03d", (i*17)%40) // inserted out of order
			if _, err := s.Insert(ctx, access{Hour: "h", Key: k, Employee: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
			want = append(want, k)
		}
		slices.Sort(want)
		ft.Reset()
		if got := rangeKeys(t, s, "h", "", ""); !slices.Equal(got, want) {
			t.Fatalf("Range = %v, want %v", got, want)
		}
		if n := ft.Count(); n != 4 {
			t.Fatalf("Range took %d requests, want 4 (one per bucket)", n)
		}
		if got := rangeKeys(t, s, "h", "k010", "k015"); !slices.Equal(got, want[10:15]) {
			t.Fatalf("Range [k010, k015) = %v", got)
		}
		if e, err := s.Get(ctx, "h", "k033"); err != nil || e.Value.Key != "k033" || e.PartitionKey != "h" {
			t.Fatalf("Get = %+v, %v", e, err)
		}
		// The whole range in pages of 7, resumed from each cursor.
		var paged []string
		var cursor table.Cursor
		for pages := 0; ; pages++ {
			p, err := s.RangePage(ctx, "h", "", "", cursor, &buckets.RangeOptions{PageSize: 7})
			if err != nil || pages > 6 {
				t.Fatalf("RangePage %d: %v", pages, err)
			}
			for _, e := range p.Items {
				paged = append(paged, e.Value.Key)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("RangePage pages = %v, want %v", paged, want)
		}
		r.Claim(t, testrig.Capability{Pattern: "buckets", Operation: "RangePage", How: r.Which("1 range query per bucket per page ($top = the page's size + 1, at most 1,000), merged by RowKey; the cursor is the last key returned", "each page reads what is left of each bucket's range whole and sorts it: O(rest of the range) per page")})
		r.Claim(t, testrig.Capability{Pattern: "buckets", Operation: "Range", How: r.Which("1 range query per bucket, merged lazily by RowKey", "each bucket's range read whole and sorted, then merged: same round trips, memory O(range)")})
		r.Claim(t, testrig.Capability{Pattern: "buckets", Operation: "Insert, Upsert, Get", How: "point operations in the key's bucket: no order needed"})
	})
}
