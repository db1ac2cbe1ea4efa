package indexentity_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// BenchmarkLookup finds the employees of one last name in a partition of
// n employees three ways, alternating which goes first:
//
//   - ids: FindIDs, one point read of the index entity (the ids only);
//   - index: Find, that read and a point read per match, 8 at a time;
//   - scan: the query without an index, PartitionKey eq 'Sales' and
//     LastName eq '...' (a partition scan), read whole.
//
// Two names: Jones, one employee in 100 (100 last names, evenly), so the
// matches grow with the partition; and Rare, 10 employees whatever n. It
// reports the milliseconds of each and the ratios scan/index and scan/ids
// (above 1: the index is faster). The partition is bulk-loaded with
// table.Submit and the index entities written directly, and every side runs
// once, all outside the timer (the 100,000 employees load in about 7 s).
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			ctx := context.Background()
			employees, err := table.New[Employee](tabletest.New(b).Table(nil), nil)
			if err != nil {
				b.Fatal(err)
			}
			idx, err := indexentity.New(employees, "LastName", lastName, nil)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			lists := map[string][]indexentity.ID{}
			ops := make([]table.Op, 0, n)
			for i := range n {
				last := fmt.Sprintf("Name%02d", i%100)
				switch {
				case i%100 == 0:
					last = "Jones"
				case i%(n/10) == 1:
					last = "Rare"
				}
				e := emp("Sales", i, last)
				ops = append(ops, employees.InsertOp(e))
				lists[last] = append(lists[last], indexentity.ID{PartitionKey: "Sales", RowKey: e.ID})
			}
			if _, err := employees.Submit(ctx, ops, nil); err != nil {
				b.Fatal(err)
			}
			for last, ids := range lists {
				if err := indexentity.SeedList(ctx, idx, "Sales", last, ids); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("loaded %d employees and %d index entities in %v", n, len(lists), time.Since(t0).Round(time.Millisecond))
			type side struct {
				name string
				run  func() (int, error)
				want int
			}
			var sides []side
			for _, last := range []string{"Jones", "Rare"} {
				scan := &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.Eq("LastName", last))}
				want := len(lists[last])
				sides = append(sides,
					side{last + "-ids", func() (int, error) { ids, err := idx.FindIDs(ctx, "Sales", last); return len(ids), err }, want},
					side{last + "-index", func() (int, error) { es, err := table.Collect(idx.Find(ctx, "Sales", last)); return len(es), err }, want},
					side{last + "-scan", func() (int, error) { es, err := table.Collect(employees.Query(ctx, scan)); return len(es), err }, want})
			}
			for _, side := range sides { // warm the connections and the emulator, unmeasured
				if _, err := side.run(); err != nil {
					b.Fatal(err)
				}
			}
			spent := make([]time.Duration, len(sides))
			order := make([]int, len(sides))
			b.ResetTimer()
			for i := range b.N {
				for s := range order {
					order[s] = s
				}
				if i%2 == 1 {
					slices.Reverse(order)
				}
				for _, s := range order {
					start := time.Now()
					got, err := sides[s].run()
					spent[s] += time.Since(start)
					if err != nil || got != sides[s].want {
						b.Fatalf("%s: %d found, %v; want %d", sides[s].name, got, err, sides[s].want)
					}
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / float64(time.Millisecond) }
			for s := range sides {
				b.ReportMetric(ms(spent[s]), sides[s].name+"-ms")
			}
			for s := 0; s < len(sides); s += 3 {
				last := sides[s].name[:len(sides[s].name)-len("-ids")]
				b.ReportMetric(float64(spent[s+2])/float64(spent[s+1]), last+"-scan/index")
				b.ReportMetric(float64(spent[s+2])/float64(spent[s]), last+"-scan/ids")
			}
		})
	}
}

// BenchmarkContention measures adds per second to one hot index entity:
// writers goroutines insert b.N employees named Jones into one partition,
// each Insert a read of the index entity and a transaction, again on a
// conflict. The retry policy is DefaultRetry (retry.Default's delays, full
// jitter) against the same delays with the guide's ±20% jitter. It reports
// adds/s, the conflicts per add and the most conflicts one add met.
func BenchmarkContention(b *testing.B) {
	for _, writers := range []int{1, 4, 16} {
		for _, jitter := range []string{"guide", "full"} {
			b.Run(fmt.Sprintf("writers=%d/jitter=%s", writers, jitter), func(b *testing.B) {
				ctx := context.Background()
				employees, err := table.New[Employee](tabletest.New(b).Table(nil), nil)
				if err != nil {
					b.Fatal(err)
				}
				p := indexentity.DefaultRetryForTest
				p.FullJitter = jitter == "full"
				p.MaxRetries = 1000 // measure the rate; the default gives up after 10
				idx, err := indexentity.New(employees, "LastName", lastName, &indexentity.Options{Retry: &p})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := idx.Insert(ctx, emp("Sales", 999999, "Jones")); err != nil { // the index entity exists
					b.Fatal(err)
				}
				var conflicts, most, next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
							res, err := idx.Insert(ctx, emp("Sales", i, "Jones"))
							if err != nil {
								b.Error(err)
								return
							}
							conflicts.Add(int64(res.Conflicts))
							for c := most.Load(); int64(res.Conflicts) > c && !most.CompareAndSwap(c, int64(res.Conflicts)); c = most.Load() {
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				ids, err := idx.FindIDs(ctx, "Sales", "Jones")
				if err != nil || len(ids) != b.N+1 {
					b.Fatalf("the list holds %d ids, want %d (%v)", len(ids), b.N+1, err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "adds/s")
				b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/add")
				b.ReportMetric(float64(most.Load()), "max-conflicts")
			})
		}
	}
}

// BenchmarkContentionBurst measures the drain time of a burst: writers
// goroutines each add one employee named Jones to one hot index entity at
// the same instant, and an iteration ends when all have committed (the
// situation of the retry package's contention simulation, where jitter
// decides how fast the writers spread out). Same policies as
// BenchmarkContention. It reports the milliseconds per burst and the
// conflicts per add.
func BenchmarkContentionBurst(b *testing.B) {
	for _, writers := range []int{4, 16} {
		for _, jitter := range []string{"guide", "full"} {
			b.Run(fmt.Sprintf("writers=%d/jitter=%s", writers, jitter), func(b *testing.B) {
				ctx := context.Background()
				employees, err := table.New[Employee](tabletest.New(b).Table(nil), nil)
				if err != nil {
					b.Fatal(err)
				}
				p := indexentity.DefaultRetryForTest
				p.FullJitter = jitter == "full"
				p.MaxRetries = 1000
				idx, err := indexentity.New(employees, "LastName", lastName, &indexentity.Options{Retry: &p})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := idx.Insert(ctx, emp("Sales", 999999, "Jones")); err != nil {
					b.Fatal(err)
				}
				var conflicts atomic.Int64
				var spent time.Duration
				b.ResetTimer()
				for i := range b.N {
					start := make(chan struct{})
					var wg sync.WaitGroup
					for w := range writers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							<-start
							res, err := idx.Insert(ctx, emp("Sales", i*writers+w, "Jones"))
							if err != nil {
								b.Error(err)
							}
							conflicts.Add(int64(res.Conflicts))
						}()
					}
					t0 := time.Now()
					close(start)
					wg.Wait()
					spent += time.Since(t0)
				}
				b.StopTimer()
				b.ReportMetric(float64(spent)/float64(b.N)/float64(time.Millisecond), "burst-ms")
				b.ReportMetric(float64(conflicts.Load())/float64(b.N*writers), "conflicts/add")
			})
		}
	}
}
