package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
)

// TestCosmosSecondaryIndex: on each service (the Cosmos DB simulation
// returns rows in no key order), Find and Range return the entities in
// index order across pages, Lookup and Check work, and Rebuild gives a
// unique value two entities have to the first by key, as on Table Storage.
func TestCosmosSecondaryIndex(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, base *testrig.Rig) {
		r := newRigOn(t, base, intraIndexes(), false)
		ctx := context.Background()
		lasts := []string{"Smith", "Jones", "Adams", "Jones", "Brown", "Jones", "Young", "Adams", "Jones", "King", "Lee", "Jones"}
		for i, last := range lasts {
			e := Employee{Department: "Sales", ID: fmt.Sprintf("%03d", i), FirstName: fmt.Sprintf("F%02d", 20-i), LastName: last, Email: fmt.Sprintf("e%02d@contoso.com", i)}
			if _, err := r.store.Insert(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		names := func(seq func(func(secondaryindex.Entity[Employee], error) bool)) []string {
			var out []string
			for e, err := range seq {
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, e.Value.LastName+"/"+e.Value.FirstName)
			}
			return out
		}
		page := &secondaryindex.LookupOptions{PageSize: 2}
		if got, want := names(r.store.Find(ctx, "Sales", "name", []string{"Jones"}, page)), []string{"Jones/F09", "Jones/F12", "Jones/F15", "Jones/F17", "Jones/F19"}; !slices.Equal(got, want) {
			t.Fatalf("Find(Jones) = %v, want %v", got, want)
		}
		got := names(r.store.Range(ctx, "Sales", "name", []string{"Adams"}, []string{"King"}, page))
		if want := []string{"Adams/F13", "Adams/F18", "Brown/F16", "Jones/F09", "Jones/F12", "Jones/F15", "Jones/F17", "Jones/F19", "King/F11"}; !slices.Equal(got, want) {
			t.Fatalf("Range(Adams..King) = %v, want %v", got, want)
		}
		if e, err := r.store.Lookup(ctx, "Sales", "email", []string{"e04@contoso.com"}, nil); err != nil || e.Value.LastName != "Brown" {
			t.Fatalf("Lookup = %+v, %v", e, err)
		}
		if d, err := r.store.Check(ctx, "Sales"); err != nil || !d.Clean() || d.Entities != len(lasts) {
			t.Fatalf("Check = %+v, %v", d, err)
		}

		// Two entities of different partitions with one unique value and
		// no copy (no worker ran): Rebuild gives it to the first by key.
		mail := secondaryindex.Index[Employee]{Name: "mail", Unique: true, Holds: secondaryindex.KeysOnly, Where: secondaryindex.OtherPartition,
			Partition: func(string) string { return "mail" }, Key: func(e *Employee) []string { return []string{e.Email} }}
		org := newRigOn(t, base, []secondaryindex.Index[Employee]{mail}, true)
		for _, dept := range []string{"Sales", "Ops"} {
			e := jo()
			e.Department = dept
			if _, err := org.store.Insert(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := org.store.Rebuild(ctx, ""); !errors.Is(err, secondaryindex.ErrDuplicate) {
			t.Fatalf("Rebuild: %v; want ErrDuplicate", err)
		}
		if e, err := org.store.Lookup(ctx, "", "mail", []string{jo().Email}, nil); err != nil || e.PartitionKey != "Ops" {
			t.Fatalf("Lookup after Rebuild = %+v, %v; want Ops's, the first by key", e, err)
		}

		sorted := r.Profile().Sorted
		how := func(storage, cosmos string) string {
			if sorted {
				return storage
			}
			return cosmos
		}
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "Lookup", How: "a point read of the copy (+1 to fetch the primary)"})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "Find, Range", How: how(
			"1 range query per page of copies, streamed in index order",
			"the copies of the range read whole and sorted client-side: same round trips, memory O(range)")})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "Check, Rebuild", How: "order-independent: primaries and copies matched by key; a duplicate unique value stays with the first entity by key"})
	})
}
