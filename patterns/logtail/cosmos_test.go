package logtail_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/bucketkey"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCosmosLatest: on each service (the Cosmos DB simulation returns
// entries in no key order, and its $top any n), Latest returns the newest
// n, newest first, reading only a window of recent entries (an
// undecodable row a year old is never read), Range yields its window
// newest first, and Trim deletes exactly the old entries.
func TestCosmosLatest(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		ctx := context.Background()
		for _, nb := range []int{1, 3} {
			tb := testrig.NewTable[login](t, r.Table())
			l, err := logtail.New(tb, &logtail.Options{Buckets: nb})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().Truncate(time.Millisecond) // whole ticks: the bounds below are exact
			// 40 entries a second apart up to now, and one from a clock an
			// hour ahead.
			for i := range 40 {
				if _, err := l.AppendAt(ctx, "u", now.Add(-time.Duration(i)*time.Second), login{IP: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.AppendAt(ctx, "u", now.Add(time.Hour), login{IP: "ahead"}); err != nil {
				t.Fatal(err)
			}
			// A row a year old whose IP is a number: reading it fails, so
			// a Latest that read the whole log would fail.
			dyn := testrig.NewTable[table.Dynamic](t, tb.Client())
			old := table.Dynamic{PartitionKey: bucketkey.Partition("u", nb, 0), RowKey: keys.InvertedTicks(now.AddDate(-1, 0, 0)) + "-x", Properties: map[string]any{"IP": int32(7)}}
			if _, err := dyn.Insert(ctx, old); err != nil {
				t.Fatal(err)
			}
			r.Faults.Reset()
			got, err := l.Latest(ctx, "u", 5)
			if err != nil {
				t.Fatalf("Latest(5) with %d buckets: %v", nb, err)
			}
			var ips []string
			for _, e := range got {
				ips = append(ips, e.Value.IP)
			}
			if want := []string{"ahead", "0", "1", "2", "3"}; !slices.Equal(ips, want) {
				t.Fatalf("Latest(5) with %d buckets = %v, want %v", nb, ips, want)
			}
			steps := r.Faults.Count() / nb
			if !r.Profile().Sorted && (steps < 2 || steps > 4) || r.Profile().Sorted && steps != 1 {
				t.Fatalf("Latest(5) with %d buckets took %d requests", nb, r.Faults.Count())
			}
			var rng []string
			for e, err := range l.Range(ctx, "u", now.Add(-10*time.Second), now.Add(-5*time.Second), nil) {
				if err != nil {
					t.Fatal(err)
				}
				rng = append(rng, e.Value.IP)
			}
			if want := []string{"6", "7", "8", "9", "10"}; !slices.Equal(rng, want) {
				t.Fatalf("Range with %d buckets = %v, want %v", nb, rng, want)
			}
			// The same window in pages of 2, resumed from each cursor.
			var paged []string
			var cursor table.Cursor
			for pages := 0; ; pages++ {
				p, err := l.RangePage(ctx, "u", now.Add(-10*time.Second), now.Add(-5*time.Second), cursor, &logtail.RangeOptions{PageSize: 2})
				if err != nil || pages > 3 {
					t.Fatalf("RangePage %d with %d buckets: %v", pages, nb, err)
				}
				for _, e := range p.Items {
					paged = append(paged, e.Value.IP)
				}
				if cursor = p.Next; cursor == "" {
					break
				}
			}
			if want := []string{"6", "7", "8", "9", "10"}; !slices.Equal(paged, want) {
				t.Fatalf("RangePage with %d buckets = %v, want %v", nb, paged, want)
			}
			if n, err := l.Trim(ctx, "u", now.Add(-19500*time.Millisecond)); err != nil || n != 21 {
				t.Fatalf("Trim with %d buckets = %d, %v; want the 20 oldest entries and the old row", nb, n, err)
			}
			all, err := l.Latest(ctx, "u", table.MaxPageSize)
			if err != nil || len(all) != 21 || all[20].Value.IP != "19" {
				t.Fatalf("after Trim, Latest = %d entries, %v", len(all), err)
			}
		}
		r.Claim(t, testrig.Capability{Pattern: "logtail", Operation: "Latest", How: r.Which("$top=n per bucket (the first n keys), merged: 1 query per bucket", "a growing time window, sorted client-side: O(entries of the window holding the n-th newest), 1 query per bucket per step")})
		r.Claim(t, testrig.Capability{Pattern: "logtail", Operation: "Range", How: r.Which("1 range query per bucket, merged lazily by RowKey", "each bucket's range read whole and sorted: O(range) before the first entry")})
		r.Claim(t, testrig.Capability{Pattern: "logtail", Operation: "RangePage", How: r.Which("1 range query per bucket per page ($top = the page's size + 1, at most 1,000), merged by RowKey; the cursor is the last key returned", "each page reads what is left of each bucket's range whole and sorts it: O(rest of the range) per page")})
		r.Claim(t, testrig.Capability{Pattern: "logtail", Operation: "Trim", How: "any 1,000 old entries per round, batched deletes: no order needed"})
	})
}
