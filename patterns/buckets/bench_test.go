package buckets_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// rawPartition is a careful user's hand-made bucket partition: the hour
// and an FNV-1a hash of the RowKey modulo 8.
func rawPartition(pk, rk string) string {
	h := fnv.New32a()
	h.Write([]byte(rk))
	return fmt.Sprintf("%s_%d", pk, h.Sum32()%8)
}

type rawAccess struct {
	PartitionKey, RowKey string
	Employee, Resource   string
}

// BenchmarkHotInsert drives the same concurrent insert load (32 goroutines,
// 2,000 single inserts per side per iteration) at one logical partition
// three ways, alternating which goes first: a Spread with 1 bucket (the
// hot partition), a Spread with 8 buckets, and raw aztables with the
// hand-made 8 buckets of rawPartition (AddEntity of a tagged struct
// marshalled with encoding/json). It reports each side's entities/s.
//
// The emulator has no partition servers and no per-partition limit, so
// this measures what spreading costs the client, not what it buys on the
// service (2,000 entities/s per partition; see examples/stress).
func BenchmarkHotInsert(b *testing.B) {
	if probing(b) {
		return
	}
	env := tabletest.New(b)
	ctx := context.Background()
	one, _ := table.New[access](env.Table(nil), nil)
	eight, _ := table.New[access](env.Table(nil), nil)
	hot, _ := buckets.New(one, &buckets.Options{Buckets: 1})
	spread, _ := buckets.New(eight, &buckets.Options{Buckets: 8})
	raw := env.Table(&aztables.ClientOptions{})
	const workers, per = 32, 2000
	var seq atomic.Int64
	run := func(insert func(rk string) error) time.Duration {
		var wg sync.WaitGroup
		var next atomic.Int64
		t0 := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= per {
					rk := keys.Pad(uint64(seq.Add(1)), 12) // ever increasing: the append pattern
					if err := insert(rk); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	sides := []struct {
		name string
		do   func(rk string) error
		took time.Duration
	}{
		{"one", func(rk string) error {
			_, err := hot.Insert(ctx, access{Hour: "2014-07-31T18", Key: rk, Employee: "000123", Resource: "door"})
			return err
		}, 0},
		{"buckets8", func(rk string) error {
			_, err := spread.Insert(ctx, access{Hour: "2014-07-31T18", Key: rk, Employee: "000123", Resource: "door"})
			return err
		}, 0},
		{"raw8", func(rk string) error {
			body, _ := json.Marshal(rawAccess{rawPartition("2014-07-31T18", rk), rk, "000123", "door"})
			_, err := raw.AddEntity(ctx, body, nil)
			return err
		}, 0},
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range sides {
			s := &sides[(i+j)%len(sides)] // rotate which side goes first
			s.took += run(s.do)
		}
	}
	for _, s := range sides {
		b.ReportMetric(float64(per*b.N)/s.took.Seconds(), s.name+"-entities/s")
	}
	b.ReportMetric(float64(sides[0].took)/float64(sides[1].took), "buckets8/one-speed")
	b.ReportMetric(float64(sides[2].took)/float64(sides[1].took), "buckets8/raw8-speed")
}

// BenchmarkRangeMerge reads a logical partition of 10,000 entities back in
// RowKey order three ways, each from its own table: Range over one
// partition (Spread with 1 bucket: one query, ten pages), Range over 8
// buckets (8 queries in parallel, merged lazily), and raw aztables over the
// hand-made 8 buckets (8 pagers in goroutines, encoding/json, then a sort:
// what a careful user writes). It reports each side's time and the ratios.
func BenchmarkRangeMerge(b *testing.B) {
	if probing(b) {
		return
	}
	env := tabletest.New(b)
	ctx := context.Background()
	const n = 10000
	one, _ := table.New[access](env.Table(nil), nil)
	eight, _ := table.New[access](env.Table(nil), nil)
	hot, _ := buckets.New(one, &buckets.Options{Buckets: 1})
	spread, _ := buckets.New(eight, &buckets.Options{Buckets: 8})
	rawC := env.Table(&aztables.ClientOptions{})
	rawT, _ := table.New(rawC, &table.Options[rawAccess]{Keys: func(a *rawAccess) (string, string) { return a.PartitionKey, a.RowKey }})
	var ops1, ops8, opsRaw []table.Op
	for i := range n {
		rk := keys.Pad(uint64(i), 12)
		a := access{Hour: "h", Key: rk, Employee: keys.Pad(uint64(i%500), 6), Resource: "door"}
		op1, op8 := hot.InsertOp(a), spread.InsertOp(a)
		ops1, ops8 = append(ops1, op1), append(ops8, op8)
		opsRaw = append(opsRaw, rawT.InsertOp(rawAccess{rawPartition("h", rk), rk, a.Employee, a.Resource}))
	}
	for _, s := range []struct {
		tb  func([]table.Op) error
		ops []table.Op
	}{
		{func(o []table.Op) error { _, err := one.Submit(ctx, o, nil); return err }, ops1},
		{func(o []table.Op) error { _, err := eight.Submit(ctx, o, nil); return err }, ops8},
		{func(o []table.Op) error { _, err := rawT.Submit(ctx, o, nil); return err }, opsRaw},
	} {
		if err := s.tb(s.ops); err != nil {
			b.Fatal(err)
		}
	}
	readSpread := func(s *buckets.Spread[access]) {
		k, last := 0, ""
		for e, err := range s.Range(ctx, "h", "", "", nil) {
			if err != nil || e.RowKey <= last {
				b.Fatal(err, e.RowKey, last)
			}
			k, last = k+1, e.RowKey
		}
		if k != n {
			b.Fatal(k)
		}
	}
	readRaw := func() {
		var mu sync.Mutex
		var all []rawAccess
		var wg sync.WaitGroup
		for bkt := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := fmt.Sprintf("PartitionKey eq 'h_%d'", bkt)
				pager := rawC.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
				var mine []rawAccess
				for pager.More() {
					page, err := pager.NextPage(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					for _, raw := range page.Entities {
						var a rawAccess
						if err := json.Unmarshal(raw, &a); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, a)
					}
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		slices.SortFunc(all, func(x, y rawAccess) int { return keys.Compare(x.RowKey, y.RowKey) })
		if len(all) != n {
			b.Fatal(len(all))
		}
	}
	sides := []struct {
		name string
		read func()
		took time.Duration
	}{
		{"one", func() { readSpread(hot) }, 0},
		{"buckets8", func() { readSpread(spread) }, 0},
		{"raw8", readRaw, 0},
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range sides {
			s := &sides[(i+j)%len(sides)]
			t0 := time.Now()
			s.read()
			s.took += time.Since(t0)
		}
	}
	for _, s := range sides {
		b.ReportMetric(float64(s.took.Microseconds())/1000/float64(b.N), s.name+"-ms/op")
	}
	b.ReportMetric(float64(sides[1].took)/float64(sides[0].took), "buckets8/one-time")
	b.ReportMetric(float64(sides[2].took)/float64(sides[1].took), "raw8/buckets8-time")
}

// probing reports whether this is the single iteration that package
// testing runs, and discards, before running the b.N that -benchtime Nx
// asks for (golang.org/issue/32051): the benchmarks then skip their
// seeding and load for nothing.
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
