package transfer_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
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
// the peak above the live heap at the start (after a GC): what the
// operation holds, not the benchmark's fixture.
func heapPeak() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var (
		peak uint64
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
			if v := s[0].Value.Uint64(); v > base {
				peak = max(peak, v-base)
			}
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

// side runs ops one after another, in an order rotated every iteration
// (so that no side always runs first on a warmer or fuller emulator),
// and reports each op's entities/s and peak heap, and each op's rate
// relative to the first op (the baseline).
func side(b *testing.B, n int, names []string, ops []func(i int)) {
	elapsed := make([]time.Duration, len(ops))
	peaks := make([]uint64, len(ops))
	b.ResetTimer()
	for i := range b.N {
		for k := range ops {
			j := (k + i) % len(ops)
			stop := heapPeak()
			start := time.Now()
			ops[j](i)
			elapsed[j] += time.Since(start)
			peaks[j] = max(peaks[j], stop())
		}
	}
	base := float64(n*b.N) / elapsed[0].Seconds()
	for j, name := range names {
		rate := float64(n*b.N) / elapsed[j].Seconds()
		b.ReportMetric(rate, name+"-entities/s")
		b.ReportMetric(float64(peaks[j])/1e6, name+"-peak-heap-MB")
		if j > 0 {
			b.ReportMetric(rate/base, name+"/"+names[0])
		}
	}
}

// BenchmarkTransfer measures export, import and copy of one table side by
// side with tablekit's own scan and bulk load of the same entities, at the
// same concurrency (one range; 4 transactions in flight), alternating in
// one run: read (scan, export) and write (bulk load, import, copy).
//
//	go test -run '^$' -bench Transfer -benchtime 3x ./patterns/transfer
func BenchmarkTransfer(b *testing.B) {
	env := tabletest.New(b)
	ctx := context.Background()
	n := benchEntities()
	var ds []table.Dynamic // the write side's entities, made when it starts
	load := func(c *aztables.Client) {
		tbl, err := table.New[table.Dynamic](c, nil)
		if err != nil {
			b.Fatal(err)
		}
		ops := make([]table.Op, n)
		for i := range ds {
			ops[i] = tbl.UpsertOp(ds[i], table.Replace)
		}
		if _, err := tbl.Submit(ctx, ops, &table.BatchOptions{Concurrency: 4}); err != nil {
			b.Fatal(err)
		}
	}
	src := env.Table(nil)
	srcTbl, err := table.New[table.Dynamic](src, nil)
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 10_000 { // loaded in parts: the read side's heap holds no fixture
		var ops []table.Op
		for i := lo; i < min(n, lo+10_000); i++ {
			ops = append(ops, srcTbl.UpsertOp(benchEntity(i), table.Replace))
		}
		if _, err := srcTbl.Submit(ctx, ops, &table.BatchOptions{Concurrency: 4}); err != nil {
			b.Fatal(err)
		}
	}
	blobs := env.Container(nil)
	if _, err := transfer.Export(ctx, src, blobs, "fixture", nil); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("entities=%d/read", n), func(b *testing.B) {
		side(b, n, []string{"scan", "export"}, []func(int){
			func(int) {
				got := 0
				for _, err := range srcTbl.Query(ctx, &table.Query{Select: []string{"*"}}) {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				if got != n {
					b.Fatalf("scan read %d entities", got)
				}
			},
			func(i int) {
				if _, err := transfer.Export(ctx, src, blobs, fmt.Sprintf("export%d-%d", b.N, i), nil); err != nil {
					b.Fatal(err)
				}
			},
		})
	})
	// Each write goes to a fresh table, deleted after it (untimed), so
	// the emulator holds the same data for every op.
	into := func(write func(c *aztables.Client)) func(int) {
		return func(int) {
			b.StopTimer()
			name := env.Name()
			c := env.CreateTable(name, nil)
			b.StartTimer()
			write(c)
			b.StopTimer()
			if err := table.DeleteTable(ctx, env.Tables, name); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.Run(fmt.Sprintf("entities=%d/write", n), func(b *testing.B) {
		if ds == nil {
			ds = make([]table.Dynamic, n)
			for i := range ds {
				ds[i] = benchEntity(i)
			}
		}
		side(b, n, []string{"bulkload", "import", "copy"}, []func(int){
			into(load),
			into(func(c *aztables.Client) {
				if _, err := transfer.Import(ctx, blobs, "fixture", c, nil); err != nil {
					b.Fatal(err)
				}
			}),
			into(func(c *aztables.Client) {
				if _, err := transfer.Copy(ctx, src, c, nil); err != nil {
					b.Fatal(err)
				}
			}),
		})
	})
}
