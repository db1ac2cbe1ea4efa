package indexentity_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/indexentity"
)

// TestCosmosListLimits: an index entity's list is bounded by the table's
// profile: about 2,600 ids of 200 characters in Table Storage's 1 MiB (as
// it counts strings, in UTF-16), about 10,000 in Cosmos DB's 2 MB of JSON;
// and a list longer than Table Storage's limit is written and read back
// on Cosmos DB (4,800 ids: the emulator under the simulation refuses
// bodies over 1 MiB, so the simulation cannot store 2 MB entities).
func TestCosmosListLimits(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		f := newFixtureOn(t, r)
		ctx := context.Background()
		full := fill(f.idx, "Sales", "Sales", 200)
		lo, hi := 2500, 2700 // 1 MiB / 402 bytes
		if !r.Profile().Sorted {
			lo, hi = 10000, 10500 // 2 MB / 201 bytes
		}
		if n := len(full); n < lo || n > hi {
			t.Fatalf("an index entity on %s holds %d ids of 200 characters, want %d to %d", r.ServiceName(), n, lo, hi)
		}
		list := full[:min(len(full), 4800)]
		if err := indexentity.SeedList(ctx, f.idx, "Sales", "Jones", list); err != nil {
			t.Fatalf("writing a list of %d ids: %v", len(list), err)
		}
		if ids, err := f.idx.FindIDs(ctx, "Sales", "Jones"); err != nil || len(ids) != len(list) {
			t.Fatalf("FindIDs = %d ids, %v; want %d", len(ids), err, len(list))
		}
		r.Claim(t, testrig.Capability{Pattern: "indexentity", Operation: "Insert, Update, Delete, Find, FindIDs", How: r.Which("point reads and writes of index entities (1 MiB lists as Table Storage counts them)", "point reads and writes of index entities (2 MB lists of JSON); no query order needed")})
	})
}
