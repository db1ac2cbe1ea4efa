package table_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestTypesModel mixes an older program (version 1 of every type) and a
// newer one (version 2 with upgrades, Get writing back) on one partition:
// random inserts and upserts of both versions of employees and
// departments, Modify, Get, deletes and Migrate runs (some cancelled
// part-way), while the newer program's write responses are lost at random.
// After every step one mixed query must return exactly the model: every
// row as its current Go type, with its logical value. 40 steps in make
// test, 3,000 in make soak.
func TestTypesModel(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, true)
	ctx := context.Background()
	type entry struct {
		dept        bool
		first, last string // employee: the name; department: Name, Manager
		age         int32
	}
	model := map[string]entry{}
	var ops [8]int
	modelcheck.Run(t, 40, 3000, func(t *testing.T, rnd *rand.Rand, step int) {
		rk := fmt.Sprintf("r%d", rnd.IntN(6))
		first, last := fmt.Sprintf("F%d", step), fmt.Sprintf("L%d", step)
		if rnd.IntN(3) == 0 {
			r.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
		}
		cur, exists := model[rk]
		op := rnd.IntN(8)
		var err error
		switch op {
		case 0: // the older program writes an employee
			_, err = r.oldEmps.Upsert(ctx, empV1{PartitionKey: "p", RowKey: rk, FullName: first + " " + last, Age: int32(step)}, table.Replace)
			if err == nil {
				model[rk] = entry{first: first, last: last, age: int32(step)}
			}
		case 1: // the newer program writes an employee
			_, err = r.emps.Upsert(ctx, staffer{PartitionKey: "p", RowKey: rk, First: first, Last: last, Age: int32(step)}, table.Replace)
			if err == nil {
				model[rk] = entry{first: first, last: last, age: int32(step)}
			}
		case 2: // either program writes a department
			if rnd.IntN(2) == 0 {
				_, err = r.oldDepts.Upsert(ctx, deptV1{PartitionKey: "p", RowKey: rk, Name: first, Head: last}, table.Replace)
			} else {
				_, err = r.depts.Upsert(ctx, unit{PartitionKey: "p", RowKey: rk, Name: first, Manager: last}, table.Replace)
			}
			if err == nil {
				model[rk] = entry{dept: true, first: first, last: last}
			}
		case 3: // Modify an employee (whatever its stored version)
			if !exists || cur.dept {
				return
			}
			_, err = r.emps.Modify(ctx, "p", rk, func(e *staffer) error { e.Age++; return nil }, nil)
			if err == nil {
				cur.age++
				model[rk] = cur
			}
		case 4: // Get through the type's Table (writing back an old row)
			if !exists {
				return
			}
			if cur.dept {
				var d unit
				d, err = value(r.depts.Get(ctx, "p", rk, nil))
				if err == nil && (d.Name != cur.first || d.Manager != cur.last) {
					t.Fatalf("step %d: Get %s = %+v, model %+v", step, rk, d, cur)
				}
			} else {
				var e staffer
				e, err = value(r.emps.Get(ctx, "p", rk, nil))
				if err == nil && (e.First != cur.first || e.Last != cur.last || e.Age != cur.age) {
					t.Fatalf("step %d: Get %s = %+v, model %+v", step, rk, e, cur)
				}
			}
		case 5: // the older program deletes
			err = r.oldEmps.Delete(ctx, "p", rk, "*")
			if err == nil || errors.Is(err, table.ErrNotFound) {
				err = nil
				delete(model, rk)
			}
		case 6, 7: // Migrate, cancelled after its first page now and then
			cctx, cancel := context.WithCancel(ctx)
			q := &table.Query{Filter: table.PartitionKey("p"), PageSize: 1 + rnd.IntN(4)}
			stop := op == 7
			p, merr := r.types.Migrate(cctx, &table.MigrateOptions{Query: q, Progress: func(table.MigrateProgress) {
				if stop {
					cancel()
				}
			}})
			if stop && errors.Is(merr, context.Canceled) && p.Next != "" {
				q.Cursor = p.Next
				_, merr = r.types.Migrate(ctx, &table.MigrateOptions{Query: q})
			}
			cancel()
			err = merr
		}
		if err != nil {
			t.Fatalf("step %d, op %d on %s: %v", step, op, rk, err)
		}
		ops[op]++
		r.ft.Reset()

		// One mixed query returns exactly the model.
		seen := 0
		for v, err := range r.types.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}) {
			if err != nil {
				t.Fatalf("step %d: query: %v", step, err)
			}
			seen++
			switch x := v.(type) {
			case unit:
				if m := model[x.RowKey]; !m.dept || x.Name != m.first || x.Manager != m.last {
					t.Fatalf("step %d: %s read as %+v, model %+v", step, x.RowKey, x, m)
				}
			case staffer:
				if m, ok := model[x.RowKey]; !ok || m.dept || x.First != m.first || x.Last != m.last || x.Age != m.age {
					t.Fatalf("step %d: %s read as %+v, model %+v", step, x.RowKey, x, m)
				}
			default:
				t.Fatalf("step %d: unexpected %T", step, v)
			}
		}
		if seen != len(model) {
			t.Fatalf("step %d: %d rows, model %d", step, seen, len(model))
		}
	})
	t.Logf("outcomes: ops by kind %v", ops)
}
