package table_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCosmosCore: the core on each service (the Cosmos DB simulation
// returns entities in no key order, within and across pages): queries and
// cursors return every entity, a Limit caps the count, an ordered fan-out
// returns the first entities by key in key order, mixed types read and
// migrate, and what Cosmos DB cannot do (Timestamp filters, stored access
// policies, transactions over 2 MB) is refused there before the network
// and done on Table Storage.
func TestCosmosCore(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		ctx := context.Background()
		c := r.Table()
		tb := testrig.NewTable[employee](t, c)
		sorted := r.Profile().Sorted
		var ops []table.Op
		var want []string
		for i := range 30 {
			e := employee{Department: fmt.Sprint("d", i%3), ID: fmt.Sprintf("%03d", i), FirstName: "F"}
			ops = append(ops, tb.InsertOp(e))
			want = append(want, e.Department+"/"+e.ID)
		}
		slices.Sort(want)
		if _, err := tb.Submit(ctx, ops, nil); err != nil {
			t.Fatal(err)
		}
		keysOf := func(es []employee) []string {
			var out []string
			for _, e := range es {
				out = append(out, e.Department+"/"+e.ID)
			}
			return out
		}

		// Query and cursors: every entity once, in key order on Table
		// Storage only.
		got, err := table.Collect(tb.Query(ctx, &table.Query{PageSize: 7}))
		if err != nil {
			t.Fatal(err)
		}
		if ks := keysOf(got); sorted && !slices.Equal(ks, want) || !sorted && !slices.Equal(slices.Sorted(slices.Values(ks)), want) {
			t.Fatalf("Query = %v", ks)
		}
		var paged []employee
		for q := (&table.Query{PageSize: 4}); ; {
			p, err := tb.QueryPage(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, p.Items...)
			if p.Next == "" {
				break
			}
			q.Cursor = p.Next
		}
		if ks := keysOf(paged); !slices.Equal(slices.Sorted(slices.Values(ks)), want) {
			t.Fatalf("QueryPage with cursors = %v", ks)
		}
		// A Limit caps the count: the first by key on Table Storage, any
		// on Cosmos DB; an ordered fan-out gives the first by key on both.
		lim, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("d1"), Limit: 4, PageSize: 3}))
		if ks := keysOf(lim); err != nil || len(ks) != 4 || sorted && !slices.Equal(ks, []string{"d1/001", "d1/004", "d1/007", "d1/010"}) {
			t.Fatalf("Query with Limit 4 = %v, %v", ks, err)
		}
		qs := []*table.Query{{Filter: table.PartitionKey("d2"), Limit: 3, PageSize: 2}, {Filter: table.PartitionKey("d0"), Limit: 3, PageSize: 2}}
		fan, err := table.Collect(tb.FanOut(ctx, qs, &table.FanOutOptions{Ordered: true}))
		if ks := keysOf(fan); err != nil || !slices.Equal(ks, []string{"d0/000", "d0/003", "d0/006", "d2/002", "d2/005", "d2/008"}) {
			t.Fatalf("ordered FanOut = %v, %v", ks, err)
		}
		if e, err := tb.Get(ctx, "d2", "011", &table.GetOptions{Select: []string{"FirstName"}}); err != nil || e.Value.FirstName != "F" {
			t.Fatalf("Get with Select: %+v, %v", e, err)
		}

		// Mixed types: rows known by their key prefix read as their type
		// and Migrate records the type property on each, in any order.
		tc := r.Table()
		raw := testrig.NewTable[table.Dynamic](t, tc)
		for i := range 12 {
			if _, err := raw.Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: fmt.Sprintf("EMP_%03d", i), Properties: map[string]any{"First": "A"}}); err != nil {
				t.Fatal(err)
			}
		}
		ts, err := table.NewTypes(tc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := table.Register[staffer](ts, "Employee", &table.RegisterOptions{Prefix: "EMP_"}); err != nil {
			t.Fatal(err)
		}
		if all, err := table.Collect(ts.Query(ctx, &table.Query{PageSize: 5})); err != nil || len(all) != 12 {
			t.Fatalf("Types.Query = %d rows, %v", len(all), err)
		}
		if p, err := ts.Migrate(ctx, &table.MigrateOptions{Query: &table.Query{PageSize: 5}}); err != nil || p.Read != 12 || p.Upgraded != 12 {
			t.Fatalf("Migrate = %+v, %v", p, err)
		}

		// What Cosmos DB cannot do: refused there before the network.
		r.Faults.Reset()
		hour := time.Now().Add(-time.Hour)
		recent, errTS := table.Collect(tb.Query(ctx, &table.Query{Filter: table.Gt("Timestamp", hour)}))
		errACL := table.SetAccessPolicy(ctx, c)
		dyn := testrig.NewTable[table.Dynamic](t, c)
		var big []table.Op
		for i := range 40 {
			big = append(big, dyn.InsertOp(table.Dynamic{PartitionKey: "big", RowKey: fmt.Sprint(i), Properties: map[string]any{"B": make([]byte, 60<<10)}}))
		}
		_, errJoin := batchplan.Join(dyn.Profile(), table.Change{By: "photos", Ops: big[:20]}, table.Change{By: "scans", Ops: big[20:]})
		_, errBatch := dyn.Submit(ctx, table.Atomic(big...), nil)
		if sorted && errJoin != nil || !sorted && (!errors.Is(errJoin, table.ErrTooLarge) || !strings.Contains(errJoin.Error(), "scans")) {
			t.Errorf("Join of two changes of 1.6 MB on %s: %v", r.ServiceName(), errJoin)
		}
		if sorted {
			if errTS != nil || len(recent) != 30 || errACL != nil || errBatch != nil {
				t.Fatalf("on %s: Timestamp filter %d entities, %v; SetAccessPolicy %v; a 3.3 MB transaction %v", r.ServiceName(), len(recent), errTS, errACL, errBatch)
			}
		} else {
			for what, err := range map[string][2]error{"Timestamp filter": {errTS, table.ErrUnsupported}, "SetAccessPolicy": {errACL, table.ErrUnsupported}, "3.3 MB transaction": {errBatch, table.ErrTooLarge}} {
				if !errors.Is(err[0], err[1]) {
					t.Errorf("%s on %s: %v, want %v", what, r.ServiceName(), err[0], err[1])
				}
			}
			if n := r.Faults.Count(); n != 0 {
				t.Fatalf("%d requests sent for operations refused on %s", n, r.ServiceName())
			}
		}

		claim := func(op string, refused bool, how string) {
			r.Claim(t, testrig.Capability{Pattern: "table", Operation: op, Refused: refused, How: how})
		}
		claim("Query, Pages, QueryPage, Types.Query", false, r.Which("in key order, 1 round trip per page", "every entity once, in no order (documented): 1 round trip per page; cursors carry the service's opaque token"))
		claim("Query with Limit", false, r.Which("the first Limit entities by key", "any Limit matching entities (a cap, not the first by key: use an ordered FanOut)"))
		claim("FanOut (Ordered, ByRowKey)", false, r.Which("k-way merge of the pages, lazily", "each query read whole without its Limit, sorted, cut to its Limit, then merged: O(range)"))
		claim("Get, Insert, Update, Upsert, Delete, Modify, Submit", false, r.Which("transactions of 100 ops and 4 MiB, entities of 1 MiB", "transactions of 2 MB, entities of 2 MB of JSON, RowKeys of 255 bytes, reserved names refused before the network"))
		claim("Change, Apply", false, r.Which("one transaction of the changes (100 ops, 4 MiB), checked before the network", "one transaction of the changes (2 MB), checked before the network; the error names the change that does not fit"))
		claim("Types.Migrate", false, "page by page with a cursor, each upgrade conditioned on its ETag: no order needed")
		claim("filter on Timestamp", !sorted, r.Which("a filter like any other", "ErrUnsupported before the network (Cosmos DB matches nothing)"))
		claim("SetAccessPolicy, GetAccessPolicy, SAS with an Identifier", !sorted, r.Which("stored access policies", "ErrUnsupported before the network (none on Cosmos DB)"))
	})
}
