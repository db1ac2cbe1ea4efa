package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// BenchmarkSharedExport exports one table of TABLEKIT_BENCH_TRANSFER_N
// entities (default 10,000; 10 partitions) shared by 1, 2 and 4 worker
// processes of this program through a queue of 8 ranges (on a machine of
// two cores shared with the emulator, so a figure to report, not a
// promise of scaling). Each op is one whole export: export -queue, then
// the processes' work until the queue is empty.
//
//	go test -run '^$' -bench SharedExport -benchtime 2x ./examples/transfer
func BenchmarkSharedExport(b *testing.B) {
	env := tabletest.New(b)
	ctx := context.Background()
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("TABLEKIT_BENCH_TRANSFER_N")); err == nil && v > 0 {
		n = v
	}
	bin := filepath.Join(b.TempDir(), "transfer")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	srcName := env.Name()
	src := env.CreateTable(srcName, nil)
	tbl, err := table.New[table.Dynamic](src, nil)
	if err != nil {
		b.Fatal(err)
	}
	var ops []table.Op
	for i := range n {
		ops = append(ops, tbl.UpsertOp(table.Dynamic{PartitionKey: fmt.Sprintf("part%02d", i%10), RowKey: fmt.Sprintf("row%08d", i),
			Properties: map[string]any{"Name": fmt.Sprintf("customer %d", i), "Total": int64(i), "Note": strings.Repeat("n", 150)}}, table.Replace))
	}
	if _, err := tbl.Submit(ctx, ops, &table.BatchOptions{Concurrency: 4}); err != nil {
		b.Fatal(err)
	}
	name := func(u string) string { return u[strings.LastIndex(u, "/")+1:] }
	ctr := name(env.Container(nil).URL())
	conn := env.ConnectionString
	for _, procs := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("entities=%d/processes=%d", n, procs), func(b *testing.B) {
			var elapsed time.Duration
			for i := range b.N {
				b.StopTimer()
				q, poison := name(env.Queue(nil).URL()), name(env.Queue(nil).URL())
				common := []string{"-src", conn, "-src-table", srcName, "-blob", conn, "-container", ctr,
					"-prefix", fmt.Sprintf("p%d-%d-%d", procs, b.N, i), "-queue", conn, "-queue-name", q, "-poison-name", poison}
				b.StartTimer()
				start := time.Now()
				if out, err := exec.Command(bin, append([]string{"export", "-ranges", "8"}, common...)...).CombinedOutput(); err != nil {
					b.Fatalf("export -queue: %v\n%s", err, out)
				}
				var wg sync.WaitGroup
				errs := make(chan string, procs)
				for range procs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if out, err := exec.Command(bin, append([]string{"work", "-concurrency", "1"}, common...)...).CombinedOutput(); err != nil {
							errs <- fmt.Sprintf("work: %v\n%s", err, out)
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
				close(errs)
				for e := range errs {
					b.Fatal(e)
				}
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "entities/s")
		})
	}
}
