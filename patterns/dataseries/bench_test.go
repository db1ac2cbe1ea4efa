package dataseries_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// BenchmarkAdd measures increments of one slot of one series with 1 and 8
// concurrent writers (each Add a read and a conditional merge, retried on
// conflict), and reports adds/s and the round trips per add.
func BenchmarkAdd(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			tbl := testrig.NewTable[table.Dynamic](b, tabletest.New(b).Table(nil))
			s, _ := dataseries.New[int64](tbl, dataseries.Hours(), &dataseries.Options{Retry: &testrig.Contention})
			ctx := context.Background()
			if _, err := s.Add(ctx, "p", "r", "H00", 0); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			t0 := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += writers {
						if _, err := s.Add(ctx, "p", "r", "H01", 1); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "adds/s")
			if v, err := s.Get(ctx, "p", "r"); err != nil || v.Value["H01"] != int64(b.N) {
				b.Fatalf("stored %d, want %d (%v)", v.Value["H01"], b.N, err)
			}
		})
	}
}
