package secondaryindex_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// BenchmarkInsert writes an employee with two indexes (a whole copy by
// email, a keys-only copy by name): the Store's one transaction against
// the same three rows in the aztables batch a careful user writes by hand,
// alternating in one run.
func BenchmarkInsert(b *testing.B) {
	env := tabletest.New(b)
	c := env.Table(table.ClientOptions())
	tbl, _ := table.New[table.Dynamic](c, nil)
	s, err := secondaryindex.New(tbl, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: intraIndexes()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var storeTime, rawTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		e := Employee{Department: "Sales", ID: fmt.Sprintf("%06d", i), FirstName: "Jo", LastName: "Jones", Email: fmt.Sprintf("e%d@contoso.com", i), Age: 29}
		t0 := time.Now()
		if _, err := s.Insert(ctx, e); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		rawInsert(b, ctx, c, e)
		storeTime += t1.Sub(t0)
		rawTime += time.Since(t1)
	}
	b.ReportMetric(float64(b.N)/storeTime.Seconds(), "store-inserts/s")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw-inserts/s")
	b.ReportMetric(rawTime.Seconds()/storeTime.Seconds(), "store/raw")
}

// rawInsert is the hand-written version: marshal three entities, one
// transaction.
func rawInsert(b *testing.B, ctx context.Context, c *aztables.Client, e Employee) {
	pk := "Raw"
	props := map[string]any{"PartitionKey": pk, "FirstName": e.FirstName, "LastName": e.LastName, "Email": e.Email, "Age": fmt.Sprint(e.Age), "Age@odata.type": "Edm.Int64"}
	row := func(rk string, extra map[string]any) []byte {
		m := map[string]any{}
		for k, v := range props {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		m["RowKey"] = rk
		out, _ := json.Marshal(m)
		return out
	}
	ref := map[string]any{"TkRef": "Raw!" + e.ID}
	actions := []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: row("empid!"+e.ID, nil)},
		{ActionType: aztables.TransactionTypeAdd, Entity: row("email!"+keys.Escape(e.Email), ref)},
		{ActionType: aztables.TransactionTypeAdd, Entity: func() []byte {
			out, _ := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": keys.Join("name", e.LastName, e.FirstName, e.ID), "TkRef": "Raw!" + e.ID})
			return out
		}()},
	}
	if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLookup finds one employee by email in a partition of 1,000 or
// 10,000 (100,000 with TABLEKIT_BENCH_LARGE=1): a point query of the
// unique index's copy against a scan of a partition holding the same
// entities without an index, filtering on Email.
func BenchmarkLookup(b *testing.B) {
	sizes := []int{1000, 10000}
	if os.Getenv("TABLEKIT_BENCH_LARGE") == "1" {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			env := tabletest.New(b)
			c := env.Table(table.ClientOptions())
			tbl, _ := table.New[table.Dynamic](c, nil)
			s, err := secondaryindex.New(tbl, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: intraIndexes()[:1]})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			seed := reserved.Properties(tbl) // the copies carry RefProperty
			var ops []table.Op
			for i := range n {
				e := Employee{Department: "Sales", ID: fmt.Sprintf("%06d", i), LastName: "Jones", Email: fmt.Sprintf("e%d@contoso.com", i)}
				d, _ := table.ToDynamic(e)
				ops = append(ops, seed.InsertOp(table.Dynamic{PartitionKey: "Sales", RowKey: keys.Join("empid", e.ID), Properties: d.Properties}),
					seed.InsertOp(table.Dynamic{PartitionKey: "Sales", RowKey: keys.Join("email", e.Email), Properties: map[string]any{"Email": e.Email, "LastName": e.LastName, secondaryindex.RefProperty: keys.Join("Sales", e.ID)}}),
					// The same entities without an index, for the scan.
					seed.InsertOp(table.Dynamic{PartitionKey: "Scan", RowKey: e.ID, Properties: d.Properties}))
			}
			if _, err := seed.Submit(ctx, ops, nil); err != nil {
				b.Fatal(err)
			}
			want := fmt.Sprintf("e%d@contoso.com", n/2)
			filter := fmt.Sprintf("PartitionKey eq 'Scan' and Email eq '%s'", want)
			var lookupTime, scanTime time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				e, err := s.Lookup(ctx, "Sales", "email", want, nil)
				if err != nil || e.Value.Email != want {
					b.Fatal(e, err)
				}
				t1 := time.Now()
				found := 0
				pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
				for pager.More() {
					page, err := pager.NextPage(ctx)
					if err != nil {
						b.Fatal(err)
					}
					found += len(page.Entities)
				}
				if found != 1 {
					b.Fatalf("the scan found %d", found)
				}
				lookupTime += t1.Sub(t0)
				scanTime += time.Since(t1)
			}
			b.ReportMetric(float64(lookupTime.Microseconds())/float64(b.N)/1000, "lookup-ms")
			b.ReportMetric(float64(scanTime.Microseconds())/float64(b.N)/1000, "scan-ms")
			b.ReportMetric(scanTime.Seconds()/lookupTime.Seconds(), "scan/lookup")
		})
	}
}
