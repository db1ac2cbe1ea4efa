package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
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
		if got, want := names(r.store.Find(ctx, "Sales", "name", []any{"Jones"}, page)), []string{"Jones/F09", "Jones/F12", "Jones/F15", "Jones/F17", "Jones/F19"}; !slices.Equal(got, want) {
			t.Fatalf("Find(Jones) = %v, want %v", got, want)
		}
		got := names(r.store.Range(ctx, "Sales", "name", []any{"Adams"}, []any{"King"}, page))
		if want := []string{"Adams/F13", "Adams/F18", "Brown/F16", "Jones/F09", "Jones/F12", "Jones/F15", "Jones/F17", "Jones/F19", "King/F11"}; !slices.Equal(got, want) {
			t.Fatalf("Range(Adams..King) = %v, want %v", got, want)
		}
		sorted := r.Profile().Sorted
		// Pages: in index order on Table Storage; on Cosmos DB each page
		// in the service's order, every entity exactly once.
		paged := func(what string, next func(table.Cursor) (table.Page[secondaryindex.Entity[Employee]], error), want []string) {
			t.Helper()
			var got []string
			var cursor table.Cursor
			for pages := 0; ; pages++ {
				p, err := next(cursor)
				if err != nil || pages > len(want) {
					t.Fatalf("%s page %d: %v", what, pages, err)
				}
				for _, e := range p.Items {
					got = append(got, e.Value.LastName+"/"+e.Value.FirstName)
				}
				if cursor = p.Next; cursor == "" {
					break
				}
			}
			if !sorted {
				got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s pages = %v, want %v", what, got, want)
			}
		}
		paged("RangePage(Adams..King)", func(c table.Cursor) (table.Page[secondaryindex.Entity[Employee]], error) {
			return r.store.RangePage(ctx, "Sales", "name", []any{"Adams"}, []any{"King"}, c, page)
		}, got)
		var byID []string
		for i, last := range lasts {
			byID = append(byID, fmt.Sprintf("%s/F%02d", last, 20-i))
		}
		if got := names(r.store.List(ctx, "Sales", &secondaryindex.ListOptions{PageSize: 5})); !slices.Equal(got, byID) {
			t.Fatalf("List = %v, want %v", got, byID)
		}
		paged("ListPage", func(c table.Cursor) (table.Page[secondaryindex.Entity[Employee]], error) {
			return r.store.ListPage(ctx, "Sales", c, &secondaryindex.ListOptions{PageSize: 5})
		}, byID)
		// A change joined with another pattern's op in one transaction,
		// within the profile's limits.
		ch, err := r.store.InsertOps(ctx, Employee{Department: "Sales", ID: "100", FirstName: "Al", LastName: "Zed", Email: "al@contoso.com"})
		if err != nil {
			t.Fatal(err)
		}
		other := table.Change{By: "note", Ops: []table.Op{r.tbl.InsertOp(table.Dynamic{PartitionKey: "Sales", RowKey: "note!100", Properties: map[string]any{"Text": "hired"}})}}
		if _, err := r.tbl.Apply(ctx, ch, other); err != nil {
			t.Fatal(err)
		}
		if e, err := r.store.Lookup(ctx, "Sales", "email", "al@contoso.com", nil); err != nil || e.Value.LastName != "Zed" {
			t.Fatalf("Lookup after Apply = %+v, %v", e, err)
		}
		if e, err := r.store.Lookup(ctx, "Sales", "email", "e04@contoso.com", nil); err != nil || e.Value.LastName != "Brown" {
			t.Fatalf("Lookup = %+v, %v", e, err)
		}
		if d, err := r.store.Check(ctx, "Sales"); err != nil || !d.Clean() || d.Entities != len(lasts)+1 { // and the one Apply inserted
			t.Fatalf("Check = %+v, %v", d, err)
		}

		// Two entities of different partitions with one unique value and
		// no copy (no worker ran): Rebuild gives it to the first by key.
		mail := secondaryindex.Index[Employee]{Name: "mail", Unique: true, Holds: secondaryindex.KeysOnly, Where: secondaryindex.OtherPartition,
			Partition: func(string) string { return "mail" }, On: []string{"Email"}}
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
		if e, err := org.store.Lookup(ctx, "", "mail", jo().Email, nil); err != nil || e.PartitionKey != "Ops" {
			t.Fatalf("Lookup after Rebuild = %+v, %v; want Ops's, the first by key", e, err)
		}

		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "Lookup", How: "a point read of the copy (+1 to fetch the primary)"})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "Find, Range", How: r.Which(
			"1 range query per page of copies, streamed in index order",
			"the copies of the range read whole and sorted client-side: same round trips, memory O(range)")})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "List", How: r.Which(
			"1 range query per page of primaries, streamed in id order",
			"the partition's primaries read whole and sorted client-side: same round trips, memory O(partition)")})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "ListPage, RangePage", How: r.Which(
			"1 query per page, in key order; the cursor is the service's continuation",
			"1 query per page, each page in the service's order (every entity exactly once across the pages, not in key order)")})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "InsertOps, UpdateOps, ModifyOps, DeleteOps with table.Apply", How: "one transaction with the other patterns' ops in the partition; the profile's limits checked before the network"})
		r.Claim(t, testrig.Capability{Pattern: "secondaryindex", Operation: "Check, Rebuild", How: "order-independent: primaries and copies matched by key; a duplicate unique value stays with the first entity by key"})
	})
}
