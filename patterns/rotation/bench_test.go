package rotation_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// benchRig is a rotation over the benchmark's emulator, through a counting
// transport, with a clock far enough ahead that every period of the
// seeding is closed (and so can be swept).
type benchRig struct {
	env   *tabletest.Env
	ft    *faults.Transport
	svc   *aztables.ServiceClient // tablekit's client options, through ft
	raw   *aztables.ServiceClient // aztables' defaults, through ft
	r     *rotation.Tables[login]
	clock *clock
}

func newBenchRig(b *testing.B) *benchRig {
	env := tabletest.New(b)
	rig := &benchRig{env: env, ft: &faults.Transport{}, clock: &clock{now: jul30}}
	o := table.ClientOptions()
	o.Transport = rig.ft
	rig.svc, _ = aztables.NewServiceClientFromConnectionString(env.ConnectionString, o)
	rig.raw, _ = aztables.NewServiceClientFromConnectionString(env.ConnectionString, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: rig.ft}})
	r, err := rotation.New[login](rig.svc, env.Prefix(), &rotation.Options{Now: rig.clock.Now, Grace: 365 * 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	rig.r = r
	return rig
}

// seed loads n logins of 100 users into the period of day, with Submit.
func (rig *benchRig) seed(b *testing.B, day time.Time, n int) {
	b.Helper()
	ops := make([]table.Op, n)
	tb := rig.r.Table(day)
	for i := range n {
		at := day.Add(time.Duration(i) * time.Millisecond)
		ops[i] = tb.InsertOp(loginAt(keys.Pad(uint64(i%100), 3), at, "10.0.0.1"))
	}
	if _, err := rig.r.Submit(context.Background(), day, ops, &table.BatchOptions{Concurrency: 4}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDropVsDelete deletes a period of 10,000 logins (100,000 with
// TABLEKIT_BENCH_LARGE=1) three ways, each on its own freshly seeded table
// per iteration (seeding not timed): rotation's Sweep (one list and one
// table delete), table.Submit of delete ops after a keys-only query (what a
// careful user of patterns/table writes: logtail's Trim does the same), and
// the same by hand with raw aztables (the ListEntities pager with
// $select=PartitionKey,RowKey and 100-delete SubmitTransaction calls, 4 at
// a time). It reports each side's time and requests and the ratios.
func BenchmarkDropVsDelete(b *testing.B) {
	sizes := []int{10000}
	if large() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			if probing(b) {
				return
			}
			rig := newBenchRig(b)
			ctx := context.Background()
			var dropT, submitT, rawT, seedT time.Duration
			var dropReq, submitReq, rawReq int
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				days := []time.Time{jul30.AddDate(0, 0, 3*i), jul30.AddDate(0, 0, 3*i+1), jul30.AddDate(0, 0, 3*i+2)}
				t0 := time.Now()
				for _, d := range days {
					rig.clock.Set(d)
					rig.seed(b, d, n)
				}
				seedT += time.Since(t0)
				rig.clock.Set(days[2].AddDate(2, 0, 0))
				b.StartTimer()

				// Drop: Sweep the first day's period.
				rig.ft.Reset()
				t0 = time.Now()
				s, err := rig.r.Sweep(ctx, &rotation.SweepOptions{Before: days[1]})
				dropT += time.Since(t0)
				dropReq += rig.ft.Count()
				if err != nil || len(s.Deleted) != 1 {
					b.Fatal(s, err)
				}

				// table.Submit of deletes, after a keys-only query.
				rig.ft.Reset()
				t0 = time.Now()
				tb := rig.r.Table(days[1])
				var ops []table.Op
				for k, err := range tb.QueryEntities(ctx, &table.Query{Select: []string{"PartitionKey"}}) {
					if err != nil {
						b.Fatal(err)
					}
					ops = append(ops, tb.DeleteOp(k.PartitionKey, k.RowKey, azcore.ETagAny))
				}
				if _, err := tb.Submit(ctx, ops, &table.BatchOptions{Concurrency: 4}); err != nil || len(ops) != n {
					b.Fatal(len(ops), err)
				}
				submitT += time.Since(t0)
				submitReq += rig.ft.Count()

				// Raw aztables: pager with $select, transactions of 100.
				rig.ft.Reset()
				t0 = time.Now()
				rawDelete(b, rig.raw.NewClient(rig.r.Name(days[2])), n)
				rawT += time.Since(t0)
				rawReq += rig.ft.Count()

				b.StopTimer()
				for _, d := range days[1:] {
					_ = table.DeleteTable(ctx, rig.env.Tables, rig.r.Name(d))
				}
				b.StartTimer()
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(per(dropT), "drop-ms/op")
			b.ReportMetric(per(submitT), "submit-ms/op")
			b.ReportMetric(per(rawT), "raw-ms/op")
			b.ReportMetric(float64(dropReq)/float64(b.N), "drop-requests/op")
			b.ReportMetric(float64(submitReq)/float64(b.N), "submit-requests/op")
			b.ReportMetric(float64(rawReq)/float64(b.N), "raw-requests/op")
			b.ReportMetric(float64(submitT)/float64(dropT), "submit/drop")
			b.ReportMetric(float64(rawT)/float64(dropT), "raw/drop")
			b.ReportMetric(seedT.Seconds()/float64(b.N), "seed-s/op")
		})
	}
}

// rawDelete deletes every entity of c as a careful user of aztables would:
// a keys-only pager, and the keys of each page in transactions of 100
// deletes (one partition each), 4 in flight.
func rawDelete(b *testing.B, c *aztables.Client, want int) {
	b.Helper()
	ctx := context.Background()
	sel := "PartitionKey,RowKey"
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: &sel})
	byPK := map[string][]aztables.TransactionAction{}
	n := 0
	var batches [][]aztables.TransactionAction
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, raw := range page.Entities {
			var k struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(raw, &k); err != nil {
				b.Fatal(err)
			}
			body, _ := json.Marshal(k)
			byPK[k.PartitionKey] = append(byPK[k.PartitionKey], aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: body})
			if len(byPK[k.PartitionKey]) == 100 {
				batches = append(batches, byPK[k.PartitionKey])
				delete(byPK, k.PartitionKey)
			}
			n++
		}
	}
	for _, rest := range byPK {
		batches = append(batches, rest)
	}
	sem := make(chan struct{}, 4)
	errs := make(chan error, len(batches))
	for _, batch := range batches {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := c.SubmitTransaction(ctx, batch, nil)
			errs <- err
		}()
	}
	for range batches {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	if n != want {
		b.Fatalf("raw deleted %d, want %d", n, want)
	}
}

// BenchmarkInsert interleaves one rotation Insert and one raw AddEntity of
// a tagged struct marshalled with encoding/json into the table named for
// the same day (what a careful user writes by hand), alternating which
// goes first, into tables that exist; it reports both rates and the ratio.
func BenchmarkInsert(b *testing.B) {
	rig := newBenchRig(b)
	ctx := context.Background()
	day := jul30
	rig.clock.Set(day)
	if err := rig.r.Prepare(ctx, day); err != nil {
		b.Fatal(err)
	}
	raw := rig.raw.NewClient(rig.r.Name(day))
	var rotT, rawT time.Duration
	b.ResetTimer()
	for i := range b.N {
		at := day.Add(time.Duration(i) * time.Millisecond)
		ins := func() {
			t0 := time.Now()
			if _, err := rig.r.Insert(ctx, at, loginAt("rotation", at, "10.0.0.1")); err != nil {
				b.Fatal(err)
			}
			rotT += time.Since(t0)
		}
		add := func() {
			t0 := time.Now()
			body, _ := json.Marshal(struct{ PartitionKey, RowKey, IP string }{"raw", keys.Pad(uint64(keys.Ticks(at)), 19), "10.0.0.1"})
			if _, err := raw.AddEntity(ctx, body, nil); err != nil {
				b.Fatal(err)
			}
			rawT += time.Since(t0)
		}
		if i%2 == 0 {
			ins()
			add()
		} else {
			add()
			ins()
		}
	}
	b.ReportMetric(float64(b.N)/rotT.Seconds(), "insert-ops/s")
	b.ReportMetric(float64(b.N)/rawT.Seconds(), "raw-ops/s")
	b.ReportMetric(float64(rawT)/float64(rotT), "insert/raw")
}

// large reports whether the 100,000-entity variant was asked for.
func large() bool { return os.Getenv("TABLEKIT_BENCH_LARGE") == "1" }

// probing reports whether this is the single iteration that package
// testing runs, and discards, before running the b.N that -benchtime Nx
// asks for (golang.org/issue/32051): the benchmark then skips seeding.
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
