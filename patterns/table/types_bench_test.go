package table_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// BenchmarkTypesQuery reads a partition holding 3 entity types (100
// entities each) against the emulator: one Types query returning every row
// as its Go type, against the per-type way, one query per registered type
// (each selecting its type on the server), the three run one after
// another. The sides alternate which goes first in each iteration; each
// side's time and round trips are reported apart.
func BenchmarkTypesQuery(b *testing.B) {
	env := tabletest.New(b)
	ft := &faults.Transport{} // counts requests; injects nothing
	co := table.ClientOptions()
	co.Transport = ft
	ts, err := table.NewTypes(env.Table(co), nil)
	if err != nil {
		b.Fatal(err)
	}
	depts, err1 := table.Register[unit](ts, "Department", nil)
	emps, err2 := table.Register[staffer](ts, "Employee", nil)
	projs, err3 := table.Register[project](ts, "Project", nil)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			b.Fatal(err)
		}
	}
	var ops []table.Op
	for i := range 100 {
		rk := fmt.Sprintf("%03d", i)
		ops = append(ops,
			depts.InsertOp(unit{PartitionKey: "p", RowKey: "d" + rk, Name: "Sales", Manager: "Ann Lee"}),
			emps.InsertOp(staffer{PartitionKey: "p", RowKey: "e" + rk, First: "Jo", Last: "Jones", Age: 29}),
			projs.InsertOp(project{PartitionKey: "p", RowKey: "p" + rk, Title: "Rollout", Tags: []string{"q3"}}))
	}
	ctx := context.Background()
	if _, err := depts.Submit(ctx, ops, nil); err != nil {
		b.Fatal(err)
	}
	q := &table.Query{Filter: table.PartitionKey("p")}
	count := func(n int, err error) int {
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	sides := [2]func() int{
		func() int { // one query, every type
			all, err := table.Collect(ts.Query(ctx, q))
			return count(len(all), err)
		},
		func() int { // one query per type
			d, err := table.Collect(depts.Query(ctx, q))
			n := count(len(d), err)
			e, err := table.Collect(emps.Query(ctx, q))
			n += count(len(e), err)
			p, err := table.Collect(projs.Query(ctx, q))
			return n + count(len(p), err)
		},
	}
	names := [2]string{"types", "per-type"}
	var took [2]time.Duration
	var trips [2]int
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			side := k ^ (i & 1)
			before, start := ft.Count(), time.Now()
			if n := sides[side](); n != 300 {
				b.Fatalf("%s read %d entities, want 300", names[side], n)
			}
			took[side] += time.Since(start)
			trips[side] += ft.Count() - before
		}
	}
	for k, name := range names {
		b.ReportMetric(float64(took[k].Microseconds())/float64(b.N), name+"-us/op")
		b.ReportMetric(float64(trips[k])/float64(b.N), name+"-roundtrips/op")
	}
}
