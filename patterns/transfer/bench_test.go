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

// heapPeak samples the heap every 5 ms until stopped and returns its
// peak above the heap at the start (after a GC): what the operation holds,
// not the benchmark's fixture. objects is the heap's objects, garbage not
// yet collected included (what the operation allocates between
// collections); live is the heap the collections during the operation
// found live (what it holds).
func heapPeak() (stop func() (objects, live uint64)) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(s)
	base := [2]uint64{s[0].Value.Uint64(), s[1].Value.Uint64()}
	var (
		peak [2]uint64
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
			for k := range peak {
				if v := s[k].Value.Uint64(); v > base[k] {
					peak[k] = max(peak[k], v-base[k])
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		wg.Wait()
		return peak[0], peak[1]
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
			objects, _ := stop()
			peaks[j] = max(peaks[j], objects)
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

// fixture returns a table of n entities (benchEntity), loaded 10,000 at a
// time so that the heap holds none of them afterwards.
func fixture(b *testing.B, env *tabletest.Env, n int) (*aztables.Client, *table.Table[table.Dynamic]) {
	ctx := context.Background()
	src := env.Table(nil)
	tbl, err := table.New[table.Dynamic](src, nil)
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 10_000 {
		var ops []table.Op
		for i := lo; i < min(n, lo+10_000); i++ {
			ops = append(ops, tbl.UpsertOp(benchEntity(i), table.Replace))
		}
		if _, err := tbl.Submit(ctx, ops, &table.BatchOptions{Concurrency: 4}); err != nil {
			b.Fatal(err)
		}
	}
	return src, tbl
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
	src, srcTbl := fixture(b, env, n)
	blobs := env.Container(nil)
	if _, err := transfer.Export(ctx, src, blobs, "fixture", nil); err != nil {
		b.Fatal(err)
	}
	exports := 0 // each export under a fresh prefix, whatever -count and -benchtime run
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
			func(int) {
				exports++
				if _, err := transfer.Export(ctx, src, blobs, fmt.Sprint("export", exports), nil); err != nil {
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

// BenchmarkExportHeap measures Export alone, with the defaults (one
// range, 8 MiB chunks): its peak heap above the fixture (objects, garbage
// included, and live), its rate, and the size of the manifest it leaves,
// which grows with the chunks. It loads the fixture and nothing else, for
// the tables too large for BenchmarkTransfer's other sides:
//
//	NODE_OPTIONS=--max-old-space-size=12288 TABLEKIT_BENCH_TRANSFER_N=1000000 \
//	  go test -run '^$' -bench ExportHeap -benchtime 1x -timeout 3h ./patterns/transfer
func BenchmarkExportHeap(b *testing.B) {
	env := tabletest.New(b)
	ctx := context.Background()
	n := benchEntities()
	loading := time.Now()
	src, _ := fixture(b, env, n)
	b.Logf("%d entities loaded in %v", n, time.Since(loading).Round(time.Second))
	blobs := env.Container(nil)
	var (
		elapsed        time.Duration
		objects, live  uint64
		sum            transfer.Summary
		manifestLength int64
	)
	b.ResetTimer()
	for i := range b.N {
		prefix := fmt.Sprintf("export%d-%d", b.N, i)
		stop := heapPeak()
		start := time.Now()
		s, err := transfer.Export(ctx, src, blobs, prefix, nil)
		elapsed += time.Since(start)
		o, l := stop()
		if err != nil {
			b.Fatal(err)
		}
		if s.Entities != int64(n) {
			b.Fatalf("exported %d entities, want %d", s.Entities, n)
		}
		objects, live, sum = max(objects, o), max(live, l), s
		b.StopTimer()
		props, err := blobs.NewBlobClient(prefix+"/manifest.json").GetProperties(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		manifestLength = *props.ContentLength
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "entities/s")
	b.ReportMetric(float64(objects)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(live)/1e6, "peak-live-heap-MB")
	b.ReportMetric(float64(sum.Chunks), "chunks")
	b.ReportMetric(float64(manifestLength), "manifest-bytes")
}
