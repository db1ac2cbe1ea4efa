package logtail_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// BenchmarkLatest reads the 100 newest entries of a log of 1,000 or 10,000
// (and 100,000 with TABLEKIT_BENCH_LARGE=1: seeding its 200,000 entities
// and scanning 100,000 per iteration take about a minute): logtail's one
// range query against a careful user's alternative without inverted keys
// (RowKey = ticks, oldest first): scan the partition, keep the newest 100.
// It reports the time the seeding took (seed-s).
func BenchmarkLatest(b *testing.B) {
	sizes := []int{1000, 10000}
	if large() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			if probing(b) {
				return
			}
			env := tabletest.New(b)
			c := env.Table(nil)
			tb, _ := table.New[login](c, nil)
			l, _ := logtail.New(tb, nil)
			ctx := context.Background()
			base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			var ops, scanOps []table.Op
			for i := range n {
				at := base.Add(time.Duration(i) * time.Second)
				ops = append(ops, tb.WithKeys(func(*login) (string, string) {
					return "tail", keys.InvertedTicks(at) + "-" + keys.Pad(uint64(i), 20) + "-bench"
				}).InsertOp(login{IP: "x"}))
				scanOps = append(scanOps, tb.WithKeys(func(*login) (string, string) {
					return "scan", keys.Pad(uint64(keys.Ticks(at)), 19)
				}).InsertOp(login{IP: "x"}))
			}
			seed := time.Now()
			if _, err := tb.Submit(ctx, append(ops, scanOps...), nil); err != nil {
				b.Fatal(err)
			}
			seeded := time.Since(seed)
			var tailTime, scanTime time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				got, err := l.Latest(ctx, "tail", 100)
				if err != nil || len(got) != 100 {
					b.Fatal(len(got), err)
				}
				t1 := time.Now()
				var all []struct {
					RowKey string
					IP     string
				}
				pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq 'scan'")})
				for pager.More() {
					page, err := pager.NextPage(ctx)
					if err != nil {
						b.Fatal(err)
					}
					for _, raw := range page.Entities {
						var e struct {
							RowKey string
							IP     string
						}
						if err := json.Unmarshal(raw, &e); err != nil {
							b.Fatal(err)
						}
						all = append(all, e)
					}
				}
				slices.SortFunc(all, func(x, y struct {
					RowKey string
					IP     string
				}) int {
					return -keys.Compare(x.RowKey, y.RowKey)
				})
				if len(all) < 100 {
					b.Fatal(len(all))
				}
				tailTime += t1.Sub(t0)
				scanTime += time.Since(t1)
			}
			b.ReportMetric(float64(tailTime.Microseconds())/float64(b.N), "latest-us/op")
			b.ReportMetric(float64(scanTime.Microseconds())/float64(b.N), "scan-sort-us/op")
			b.ReportMetric(float64(scanTime)/float64(tailTime), "scan/latest")
			b.ReportMetric(seeded.Seconds(), "seed-s")
		})
	}
}

// BenchmarkLatestBuckets reads the 100 newest entries of a log of 10,000
// (100,000 with TABLEKIT_BENCH_LARGE=1) spread over 4 or 8 buckets (one
// range query per bucket, in parallel, merged) and of the same log in one
// partition, alternating which goes first, and reports both times and
// their ratio (the price of spreading a hot log's writes).
func BenchmarkLatestBuckets(b *testing.B) {
	sizes := []int{10000}
	if large() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		for _, buckets := range []int{4, 8} {
			b.Run(fmt.Sprintf("entries=%d/buckets=%d", n, buckets), func(b *testing.B) {
				if probing(b) {
					return
				}
				env := tabletest.New(b)
				tb, _ := table.New[login](env.Table(nil), nil)
				plain, _ := logtail.New(tb, nil)
				spread, _ := logtail.New(tb, &logtail.Options{Buckets: buckets})
				ctx := context.Background()
				base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
				var ops []table.Op
				for i := range n {
					at := base.Add(time.Duration(i) * time.Second)
					rk := keys.InvertedTicks(at) + "-" + keys.Pad(^uint64(i), 20) + "-bench"
					hot := keys.Join("hot", keys.Pad(uint64(i%buckets), 3)) // logtail's bucket partitions
					ops = append(ops,
						tb.WithKeys(func(*login) (string, string) { return "tail", rk }).InsertOp(login{IP: "x"}),
						tb.WithKeys(func(*login) (string, string) { return hot, rk }).InsertOp(login{IP: "x"}))
				}
				if _, err := tb.Submit(ctx, ops, nil); err != nil {
					b.Fatal(err)
				}
				var plainTime, spreadTime time.Duration
				latest := func(l *logtail.Log[login], log string, d *time.Duration) {
					t0 := time.Now()
					got, err := l.Latest(ctx, log, 100)
					*d += time.Since(t0)
					if err != nil || len(got) != 100 || !got[0].Time.Equal(base.Add(time.Duration(n-1)*time.Second)) {
						b.Fatal(len(got), err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					if i%2 == 0 {
						latest(plain, "tail", &plainTime)
						latest(spread, "hot", &spreadTime)
					} else {
						latest(spread, "hot", &spreadTime)
						latest(plain, "tail", &plainTime)
					}
				}
				b.ReportMetric(float64(spreadTime.Microseconds())/float64(b.N), "buckets-us/op")
				b.ReportMetric(float64(plainTime.Microseconds())/float64(b.N), "plain-us/op")
				b.ReportMetric(float64(spreadTime)/float64(plainTime), "buckets/plain")
			})
		}
	}
}

// large reports whether the 100,000-entry variants were asked for.
func large() bool { return os.Getenv("TABLEKIT_BENCH_LARGE") == "1" }

// probing reports whether this is the single iteration that package
// testing runs, and discards, before running the b.N that -benchtime Nx
// asks for (golang.org/issue/32051): the benchmarks then skip seeding
// thousands of entries for nothing.
func probing(b *testing.B) bool {
	if b.N != 1 {
		return false
	}
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return false
	}
	s := f.Value.String()
	n, err := strconv.Atoi(strings.TrimSuffix(s, "x"))
	return strings.HasSuffix(s, "x") && err == nil && n > 1
}

func ptr[T any](v T) *T { return &v }

// BenchmarkAppend interleaves one Append and one raw single insert (a
// tagged struct marshalled with encoding/json, the same key scheme) per
// iteration, alternating which goes first, and reports both rates and
// their ratio.
func BenchmarkAppend(b *testing.B) {
	env := tabletest.New(b)
	c := env.Table(nil)
	tb, _ := table.New[login](c, nil)
	l, _ := logtail.New(tb, nil)
	ctx := context.Background()
	var tailTime, rawTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		appendOne := func() {
			t0 := time.Now()
			if _, err := l.Append(ctx, "tail", login{IP: "10.0.0.1", Agent: "bench"}); err != nil {
				b.Fatal(err)
			}
			tailTime += time.Since(t0)
		}
		rawOne := func() {
			t0 := time.Now()
			body, _ := json.Marshal(struct {
				PartitionKey, RowKey, IP, Agent string
			}{"raw", keys.InvertedTicks(t0) + "-" + keys.Pad(uint64(i), 20), "10.0.0.1", "bench"})
			if _, err := c.AddEntity(ctx, body, nil); err != nil {
				b.Fatal(err)
			}
			rawTime += time.Since(t0)
		}
		if i%2 == 0 { // alternate which side goes first
			appendOne()
			rawOne()
		} else {
			rawOne()
			appendOne()
		}
	}
	b.ReportMetric(float64(b.N)/tailTime.Seconds(), "append-ops/s")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw-ops/s")
	b.ReportMetric(float64(rawTime)/float64(tailTime), "append/raw")
}
