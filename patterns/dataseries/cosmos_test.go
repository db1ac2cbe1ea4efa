package dataseries_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCosmosSeries: on each service a series is written and read with the
// same point operations and round trips: Set merges one slot through the
// SDK's MERGE (Cosmos DB wants it sent as POST), Add reads and merges,
// Get reads the whole series.
func TestCosmosSeries(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		s, err := dataseries.New[int64](testrig.NewTable[table.Dynamic](t, r.Table()), dataseries.Hours(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r.Faults.Reset()
		if _, err := s.Set(ctx, "emp1", "2024-07-31", "H09", 4); err != nil {
			t.Fatal(err)
		}
		if v, err := s.Add(ctx, "emp1", "2024-07-31", "H09", 3); err != nil || v.Value != 7 {
			t.Fatalf("Add = %d, %v", v.Value, err)
		}
		e, err := s.Get(ctx, "emp1", "2024-07-31")
		if err != nil || e.Value["H09"] != 7 || e.Value["H10"] != 0 || len(e.Value) != 24 {
			t.Fatalf("Get = %v, %v", e.Value, err)
		}
		if n := r.Faults.Count(); n != 4 {
			t.Fatalf("Set, Add and Get took %d round trips, want 4", n)
		}
		r.Claim(t, testrig.Capability{Pattern: "dataseries", Operation: "Get, Set, SetAll, Add", How: "point reads and merges of one entity: no order needed"})
	})
}
