package table_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Benchmarks against the emulator, each comparing tablekit with the raw
// aztables code a careful user would write for the same work. Sub-benchmarks
// named tablekit and raw are paired by `make bench`.

type row struct {
	PartitionKey, RowKey string
	Name, Email          string
	Age                  int32
	Balance              float64
	Visits               int64
	Active               bool
	Joined               time.Time
	Notes                string
}

func newRow(pk string, i int) row {
	return row{PartitionKey: pk, RowKey: keys.Pad(uint64(i), 8), Name: "Jo Jones", Email: "jonesj@contoso.com", Age: 29,
		Balance: 1234.5, Visits: 1 << 40, Active: true, Joined: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), Notes: "note"}
}

// rawEntity is the careful raw equivalent: an EDMEntity with typed values.
func rawEntity(r row) ([]byte, error) {
	return json.Marshal(aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: r.PartitionKey, RowKey: r.RowKey}, Properties: map[string]any{
		"Name": r.Name, "Email": r.Email, "Age": r.Age, "Balance": r.Balance, "Visits": aztables.EDMInt64(r.Visits),
		"Active": r.Active, "Joined": aztables.EDMDateTime(r.Joined), "Notes": r.Notes,
	}})
}

func benchTable(b *testing.B) (*aztables.Client, *table.Table[row]) {
	b.Helper()
	env := tabletest.New(b)
	c := env.Table(nil)
	tb, err := table.New[row](c)
	if err != nil {
		b.Fatal(err)
	}
	return c, tb
}

// BenchmarkPointOps interleaves one tablekit call and one raw call per
// iteration and times each, so that the emulator's drift (it speeds up and
// slows down over a run by more than 10%) affects both alike. It reports
// both rates and their ratio.
func BenchmarkPointOps(b *testing.B) {
	ctx := context.Background()
	paired := func(b *testing.B, tk, raw func(i int) error) {
		var tkTime, rawTime time.Duration
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := tk(i); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if err := raw(i); err != nil {
				b.Fatal(err)
			}
			tkTime, rawTime = tkTime+mid.Sub(start), rawTime+time.Since(mid)
		}
		b.ReportMetric(float64(b.N)/tkTime.Seconds(), "tablekit-ops/s")
		b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw-ops/s")
		b.ReportMetric(rawTime.Seconds()/tkTime.Seconds(), "tablekit/raw")
	}
	b.Run("insert", func(b *testing.B) {
		c, tb := benchTable(b)
		paired(b, func(i int) error {
			_, err := tb.Insert(ctx, newRow("tk", i))
			return err
		}, func(i int) error {
			body, err := rawEntity(newRow("raw", i))
			if err == nil {
				_, err = c.AddEntity(ctx, body, nil)
			}
			return err
		})
	})
	b.Run("get", func(b *testing.B) {
		c, tb := benchTable(b)
		const n = 200
		var ops []table.Op
		for i := 0; i < n; i++ {
			ops = append(ops, tb.InsertOp(newRow("p", i)))
		}
		if _, err := tb.Submit(ctx, ops, nil); err != nil {
			b.Fatal(err)
		}
		paired(b, func(i int) error {
			_, err := tb.Get(ctx, "p", keys.Pad(uint64(i%n), 8), nil)
			return err
		}, func(i int) error {
			resp, err := c.GetEntity(ctx, "p", keys.Pad(uint64((i+n/2)%n), 8), nil)
			if err != nil {
				return err
			}
			var e aztables.EDMEntity
			return json.Unmarshal(resp.Value, &e)
		})
	})
}

// BenchmarkBulkLoad loads 10,000 entities over 10 partitions per variant
// and iteration, interleaving the variants within each iteration (so the
// emulator's drift affects all alike): the planner with its default
// concurrency (4), the planner with Concurrency 1, and the hand-written loop
// a careful user would write (group by partition, 100-op SubmitTransaction,
// one after another). Single inserts are measured on 1,000 entities, first
// in each iteration.
func BenchmarkBulkLoad(b *testing.B) {
	const total, parts = 10000, 10
	ctx := context.Background()
	rows := make([]row, total)
	for i := range rows {
		rows[i] = newRow(fmt.Sprint(i%parts), i)
	}
	planner := func(tb *table.Table[row], conc int) error {
		ops := make([]table.Op, len(rows))
		for j, r := range rows {
			ops[j] = tb.InsertOp(r)
		}
		_, err := tb.Submit(ctx, ops, &table.BatchOptions{Concurrency: conc})
		return err
	}
	raw := func(c *aztables.Client) error {
		byPK := map[string][]aztables.TransactionAction{}
		for _, r := range rows {
			body, err := rawEntity(r)
			if err != nil {
				return err
			}
			byPK[r.PartitionKey] = append(byPK[r.PartitionKey], aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
		}
		for _, acts := range byPK {
			for len(acts) > 0 {
				n := min(100, len(acts))
				if _, err := c.SubmitTransaction(ctx, acts[:n], nil); err != nil {
					return err
				}
				acts = acts[n:]
			}
		}
		return nil
	}
	env := tabletest.New(b)
	fresh := func() (*aztables.Client, *table.Table[row], func()) {
		name := env.Name()
		if err := table.CreateTable(ctx, env.Tables, name); err != nil {
			b.Fatal(err)
		}
		c := env.Tables.NewClient(name)
		tb, err := table.New[row](c)
		if err != nil {
			b.Fatal(err)
		}
		return c, tb, func() { _ = table.DeleteTable(ctx, env.Tables, name) }
	}
	var tkTime, seqTime, rawTime, singleTime time.Duration
	for i := 0; i < b.N; i++ {
		// Fresh tables each iteration, deleted after it: the emulator slows
		// down as it holds more entities.
		b.StopTimer()
		_, t1, d1 := fresh()
		_, t2, d2 := fresh()
		c3, _, d3 := fresh()
		_, t4, d4 := fresh()
		b.StartTimer()
		start := time.Now()
		for _, r := range rows[:1000] { // first: the emulator is freshest
			if _, err := t4.Insert(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		t := time.Now()
		singleTime += t.Sub(start)
		if err := planner(t1, 0); err != nil {
			b.Fatal(err)
		}
		t, start = time.Now(), t
		tkTime += t.Sub(start)
		if err := planner(t2, 1); err != nil {
			b.Fatal(err)
		}
		t, start = time.Now(), t
		seqTime += t.Sub(start)
		if err := raw(c3); err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(t)
		b.StopTimer()
		d1()
		d2()
		d3()
		d4()
		b.StartTimer()
	}
	rate := func(n int, d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(rate(total, tkTime), "tablekit-entities/s")
	b.ReportMetric(rate(total, seqTime), "tablekit-seq-entities/s")
	b.ReportMetric(rate(total, rawTime), "raw-entities/s")
	b.ReportMetric(rate(1000, singleTime), "single-entities/s")
	b.ReportMetric(rawTime.Seconds()/tkTime.Seconds(), "tablekit/raw")
	b.ReportMetric(rawTime.Seconds()/seqTime.Seconds(), "tablekit-seq/raw")
}

// BenchmarkStream reads whole partitions and reports allocations and the
// peak live heap per entity: constant when no earlier page is retained.
func BenchmarkStream(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			_, tb := benchTable(b)
			ops := make([]table.Op, n)
			for i := range ops {
				ops[i] = tb.InsertOp(newRow("p", i))
			}
			if _, err := tb.Submit(ctx, ops, nil); err != nil {
				b.Fatal(err)
			}
			var base, peak uint64
			var ms runtime.MemStats
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				base = ms.HeapAlloc
				count := 0
				for _, err := range tb.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}) {
					if err != nil {
						b.Fatal(err)
					}
					if count++; count%500 == 0 {
						b.StopTimer()
						runtime.GC()
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
						b.StartTimer()
					}
				}
				if count != n {
					b.Fatalf("streamed %d entities, want %d", count, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
			b.ReportMetric(float64(peak)/1024, "peak-live-KB")
		})
	}
}
