package largeentity_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCosmosLargeEntity: on each service (the Cosmos DB simulation returns
// rows in no key order), Range yields a partition's entities in key order
// with their offloaded values, in one round trip, and Get reads one.
func TestCosmosLargeEntity(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		f := newFixtureOn(t, r)
		s := newStore(t, f, &largeentity.Options[Employee]{Concurrency: 3})
		ctx := context.Background()
		want := map[string]Employee{}
		for i := range 8 {
			rk := fmt.Sprintf("%03d", i)
			e := Employee{Name: "e" + rk, Photo: photo(40<<10+i*(6<<10), uint64(i))} // inline up to 64 KiB, then offloaded
			if _, err := s.Insert(ctx, at("Sales", rk, e)); err != nil {
				t.Fatal(err)
			}
			want[rk] = e
		}
		f.reset()
		var got []string
		for e, err := range s.Range(ctx, "Sales", "001", "", nil) {
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(e.Value.Photo, want[e.Value.ID].Photo) {
				t.Fatalf("entity %s: wrong photo", e.Value.ID)
			}
			got = append(got, e.Value.ID)
		}
		if want := []string{"001", "002", "003", "004", "005", "006", "007"}; !slices.Equal(got, want) {
			t.Fatalf("Range = %v, want %v", got, want)
		}
		offloaded := 0
		for rk, e := range want {
			if rk >= "001" && len(e.Photo) > largeentity.DefaultThresholdForTest {
				offloaded++
			}
		}
		f.trips(t, "Range", 1, offloaded)
		// Pages of 3: in key order on Table Storage; on Cosmos DB each
		// page in the service's order, every entity exactly once.
		var paged []string
		var cursor table.Cursor
		for pages := 0; ; pages++ {
			p, err := s.RangePage(ctx, "Sales", "001", "", cursor, &largeentity.GetOptions{PageSize: 3})
			if err != nil || pages > 7 {
				t.Fatalf("RangePage %d: %v", pages, err)
			}
			for _, e := range p.Items {
				if !bytes.Equal(e.Value.Photo, want[e.Value.ID].Photo) {
					t.Fatalf("RangePage: entity %s: wrong photo", e.Value.ID)
				}
				paged = append(paged, e.Value.ID)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		if !r.Profile().Sorted {
			slices.Sort(paged)
		}
		if !slices.Equal(paged, got) {
			t.Fatalf("RangePage pages = %v, want %v", paged, got)
		}
		r.Claim(t, testrig.Capability{Pattern: "largeentity", Operation: "RangePage", How: r.Which("1 query per page, in key order; the cursor is the service's continuation; blobs read in parallel", "1 query per page, each page in the service's order (every entity exactly once across the pages, not in key order); blobs read in parallel")})
		if e, err := s.Get(ctx, "Sales", "007", nil); err != nil || !bytes.Equal(e.Value.Photo, want["007"].Photo) {
			t.Fatalf("Get: %v", err)
		}
		r.Claim(t, testrig.Capability{Pattern: "largeentity", Operation: "Range", How: r.Which("1 range query per page, streamed in key order; blobs read ahead in parallel", "the range's rows read whole and sorted client-side (same round trips, memory O(range)); blobs read ahead in parallel")})
		up := want["007"]
		up.Photo = photo(70<<10, 77)
		if _, err := s.Upsert(ctx, at("Sales", "007", up)); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		if e, err := s.Get(ctx, "Sales", "007", nil); err != nil || !bytes.Equal(e.Value.Photo, up.Photo) {
			t.Fatalf("Get after Upsert: %v", err)
		}
		r.Claim(t, testrig.Capability{Pattern: "largeentity", Operation: "Get, Insert, Upsert, Update, Delete", How: "point operations and blobs: no order needed; entity limits of the profile"})
	})
}
