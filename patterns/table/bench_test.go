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

func BenchmarkInsert(b *testing.B) {
	ctx := context.Background()
	b.Run("tablekit", func(b *testing.B) {
		_, tb := benchTable(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := tb.Insert(ctx, newRow("p", i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
	})
	b.Run("raw", func(b *testing.B) {
		c, _ := benchTable(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			body, err := rawEntity(newRow("p", i))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.AddEntity(ctx, body, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
	})
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	c, tb := benchTable(b)
	const n = 200
	var ops []table.Op
	for i := 0; i < n; i++ {
		ops = append(ops, tb.InsertOp(newRow("p", i)))
	}
	if _, err := tb.Submit(ctx, ops, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("tablekit", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := tb.Get(ctx, "p", keys.Pad(uint64(i%n), 8), nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			resp, err := c.GetEntity(ctx, "p", keys.Pad(uint64(i%n), 8), nil)
			if err != nil {
				b.Fatal(err)
			}
			var e aztables.EDMEntity
			if err := json.Unmarshal(resp.Value, &e); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
	})
}

// BenchmarkBulkLoad loads 10,000 entities over 10 partitions per iteration.
func BenchmarkBulkLoad(b *testing.B) {
	const total, parts = 10000, 10
	ctx := context.Background()
	rows := make([]row, total)
	for i := range rows {
		rows[i] = newRow(fmt.Sprint(i%parts), i)
	}
	report := func(b *testing.B, n int) {
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
	}
	b.Run("tablekit", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			_, tb := benchTable(b)
			b.StartTimer()
			ops := make([]table.Op, len(rows))
			for j, r := range rows {
				ops[j] = tb.InsertOp(r)
			}
			if _, err := tb.Submit(ctx, ops, nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, total)
	})
	b.Run("tablekit-sequential", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			_, tb := benchTable(b)
			b.StartTimer()
			ops := make([]table.Op, len(rows))
			for j, r := range rows {
				ops[j] = tb.InsertOp(r)
			}
			if _, err := tb.Submit(ctx, ops, &table.BatchOptions{Concurrency: 1}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, total)
	})
	// The hand-written loop: group by partition, 100-op SubmitTransaction.
	b.Run("raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c, _ := benchTable(b)
			b.StartTimer()
			byPK := map[string][]aztables.TransactionAction{}
			for _, r := range rows {
				body, err := rawEntity(r)
				if err != nil {
					b.Fatal(err)
				}
				byPK[r.PartitionKey] = append(byPK[r.PartitionKey], aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
			}
			for _, acts := range byPK {
				for len(acts) > 0 {
					n := min(100, len(acts))
					if _, err := c.SubmitTransaction(ctx, acts[:n], nil); err != nil {
						b.Fatal(err)
					}
					acts = acts[n:]
				}
			}
		}
		report(b, total)
	})
	// Per-entity inserts, for comparison (1,000 entities per iteration).
	b.Run("single-inserts", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			_, tb := benchTable(b)
			b.StartTimer()
			for _, r := range rows[:1000] {
				if _, err := tb.Insert(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, 1000)
	})
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
