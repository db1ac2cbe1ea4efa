package transfer_test

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// benchEntities is the table size: 10,000 entities, or
// TABLEKIT_BENCH_TRANSFER_N.
func benchEntities() int {
	if n, err := strconv.Atoi(os.Getenv("TABLEKIT_BENCH_TRANSFER_N")); err == nil && n > 0 {
		return n
	}
	return 10_000
}

// benchEntity is an entity of about 250 bytes in 8 properties, in one of
// 10 partitions.
func benchEntity(i int) table.Dynamic {
	return table.Dynamic{PartitionKey: fmt.Sprintf("part%02d", i%10), RowKey: fmt.Sprintf("row%08d", i),
		Properties: map[string]any{
			"Name": fmt.Sprintf("customer %d", i), "Email": fmt.Sprintf("c%d@example.com", i),
			"Total": int64(i) * 1_000_003, "Count": int32(i % 1000), "Score": float64(i) / 7,
			"Active": i%3 == 0, "Since": time.Unix(int64(i), 0).UTC(), "Note": strings.Repeat("n", 80),
		}}
}

// heapPeak samples the live heap every 5 ms until stopped and returns
// the peak in bytes.
func heapPeak() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var (
		peak uint64
		mu   sync.Mutex
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			peak = max(peak, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkTransfer measures export, import and copy of one table side by
// side with tablekit's own scan and bulk load of the same entities, at the
// same concurrency (one range; 4 transactions in flight), in one run.
//
//	go test -run '^$' -bench Transfer -benchtime 3x ./patterns/transfer
func BenchmarkTransfer(b *testing.B) {
	env := tabletest.New(b)
	ctx := context.Background()
	n := benchEntities()
	ds := make([]table.Dynamic, n)
	for i := range ds {
		ds[i] = benchEntity(i)
	}
	load := func(b *testing.B, c *aztables.Client) int {
		tbl, err := table.New[table.Dynamic](c, nil)
		if err != nil {
			b.Fatal(err)
		}
		ops := make([]table.Op, n)
		for i := range ds {
			ops[i] = tbl.UpsertOp(ds[i], table.Replace)
		}
		res, err := tbl.Submit(ctx, ops, &table.BatchOptions{Concurrency: 4})
		if err != nil {
			b.Fatal(err)
		}
		return res.Transactions
	}
	src := env.Table(nil)
	load(b, src)
	blobs := env.Container(nil)
	if _, err := transfer.Export(ctx, src, blobs, "fixture", nil); err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B, start time.Time, peak uint64) {
		b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "entities/s")
		b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
	}
	b.Run(fmt.Sprintf("entities=%d/scan", n), func(b *testing.B) {
		tbl, err := table.New[table.Dynamic](src, nil)
		if err != nil {
			b.Fatal(err)
		}
		stop := heapPeak()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			got := 0
			for _, err := range tbl.Query(ctx, &table.Query{Select: []string{"*"}}) {
				if err != nil {
					b.Fatal(err)
				}
				got++
			}
			if got != n {
				b.Fatalf("scan read %d entities", got)
			}
		}
		report(b, start, stop())
	})
	b.Run(fmt.Sprintf("entities=%d/export", n), func(b *testing.B) {
		stop := heapPeak()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			if _, err := transfer.Export(ctx, src, blobs, fmt.Sprintf("export%d-%d", b.N, i), nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start, stop())
	})
	targets := func(b *testing.B) []*aztables.Client {
		b.Helper()
		cs := make([]*aztables.Client, b.N)
		for i := range cs {
			cs[i] = env.Table(nil)
		}
		return cs
	}
	b.Run(fmt.Sprintf("entities=%d/bulkload", n), func(b *testing.B) {
		cs := targets(b)
		stop := heapPeak()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			load(b, cs[i])
		}
		report(b, start, stop())
	})
	b.Run(fmt.Sprintf("entities=%d/import", n), func(b *testing.B) {
		cs := targets(b)
		stop := heapPeak()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			if _, err := transfer.Import(ctx, blobs, "fixture", cs[i], nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start, stop())
	})
	b.Run(fmt.Sprintf("entities=%d/copy", n), func(b *testing.B) {
		cs := targets(b)
		stop := heapPeak()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			if _, err := transfer.Copy(ctx, src, cs[i], nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start, stop())
	})
}
