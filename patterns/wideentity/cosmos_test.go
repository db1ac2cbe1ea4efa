package wideentity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// TestCosmosWideEntity: on each service (the Cosmos DB simulation returns
// an entity's rows in no key order, across pages), Get, Modify, Update and
// Delete read one version from its header and parts; and a transaction
// over Cosmos DB's 2 MB (within Table Storage's 4 MiB) is refused there
// before the network, and written on Table Storage.
func TestCosmosWideEntity(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		f := newFixtureOn(t, r)
		s := newStore[table.Dynamic](t, f, 5)
		wideentity.SetPageSize(s, 2) // 6 rows in 3 pages
		ctx := context.Background()
		if _, err := s.Insert(ctx, at("p", "r", bag(300, 0))); err != nil {
			t.Fatal(err)
		}
		check := func(base int64) azcore.ETag {
			t.Helper()
			e, err := s.Get(ctx, "p", "r")
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if len(e.Value.Properties) != 300 || e.Value.Properties["P0299"] != base+299 || e.Parts != 5 {
				t.Fatalf("Get = %d properties, P0299 %v, %d parts", len(e.Value.Properties), e.Value.Properties["P0299"], e.Parts)
			}
			return e.ETag
		}
		check(0)
		if _, err := s.Modify(ctx, "p", "r", func(d *table.Dynamic) error {
			for k, v := range d.Properties {
				d.Properties[k] = v.(int64) + 1000
			}
			return nil
		}); err != nil {
			t.Fatalf("Modify: %v", err)
		}
		etag := check(1000)
		if _, err := s.Update(ctx, at("p", "r", bag(300, 2000)), etag, table.Replace); err != nil {
			t.Fatalf("Update: %v", err)
		}
		if err := s.Delete(ctx, "p", "r", check(2000)); err != nil {
			t.Fatalf("Delete: %v", err)
		}

		// 36 binary values of 60 KiB: 2.9 MB of JSON in one transaction.
		big := table.Dynamic{Properties: map[string]any{}}
		for i := range 36 {
			big.Properties[fmt.Sprintf("B%02d", i)] = make([]byte, 60<<10)
		}
		s8 := newStore[table.Dynamic](t, f, 8)
		f.ft.Reset()
		_, err := s8.Insert(ctx, at("p", "big", big))
		if r.Profile().Sorted {
			if err != nil {
				t.Fatalf("a 2.9 MB transaction on %s: %v", r.ServiceName(), err)
			}
		} else if !errors.Is(err, wideentity.ErrInvalid) || !errors.Is(err, table.ErrTooLarge) || f.ft.Count() != 0 {
			t.Fatalf("a 2.9 MB transaction on %s: %v after %d requests; want ErrInvalid and ErrTooLarge before the network", r.ServiceName(), err, f.ft.Count())
		}

		r.Claim(t, testrig.Capability{Pattern: "wideentity", Operation: "Get, Modify, Update, Delete", How: r.Which("1 range query (header and parts), in key order", "1 range query, its rows sorted client-side (bounded: one entity's rows); transactions of 2 MB")})
	})
}
