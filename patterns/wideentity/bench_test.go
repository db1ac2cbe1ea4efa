package wideentity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// The benchmarks compare a wide entity of 2,000 Int64 properties through
// wideentity (Parts 10: a header and 10 part rows) with a careful user's
// hand-written split over raw aztables: the properties sorted and cut into
// 8 rows of 250, each a map[string]any with the Edm.Int64 annotations,
// encoding/json, written with one SubmitTransaction of InsertReplace
// actions, read with the ListEntities pager over the RowKey range and
// merged into one map, and one property changed with an UpsertEntity merge
// into the row that holds it. Each iteration runs both sides one after
// another, alternating which goes first, and reports each side's time and
// allocations per operation and their ratio (raw time over wideentity's:
// above 1, wideentity is faster). The raw split has none of wideentity's
// guarantees (no ETag for the whole, orphan rows when it shrinks, no
// version check, a RowKey prefix shared with "rk_..." entities); it is the
// floor of what the work costs with the SDK.

const benchProps = 2000

func benchValues(base int64) map[string]int64 {
	m := make(map[string]int64, benchProps)
	for i := range benchProps {
		m[fmt.Sprintf("P%04d", i)] = base + int64(i)*1_000_003
	}
	return m
}

func benchBag(base int64) table.Dynamic {
	d := table.Dynamic{Properties: make(map[string]any, benchProps)}
	for k, v := range benchValues(base) {
		d.Properties[k] = v
	}
	return d
}

// rawSplit is the careful user's wide entity over aztables.
type rawSplit struct{ c *aztables.Client }

const rawPerRow = 250

func (r rawSplit) write(ctx context.Context, pk, rk string, props map[string]int64) error {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	var acts []aztables.TransactionAction
	for part := 0; part*rawPerRow < len(names); part++ {
		m := map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("%s_%02d", rk, part)}
		for _, n := range names[part*rawPerRow : min(len(names), (part+1)*rawPerRow)] {
			m[n] = strconv.FormatInt(props[n], 10)
			m[n+"@odata.type"] = "Edm.Int64"
		}
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: body})
	}
	_, err := r.c.SubmitTransaction(ctx, acts, nil)
	return err
}

func (r rawSplit) read(ctx context.Context, pk, rk string) (map[string]int64, error) {
	filter := fmt.Sprintf("PartitionKey eq '%s' and RowKey ge '%s_' and RowKey lt '%s`'", pk, rk, rk)
	pager := r.c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	out := map[string]int64{}
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Entities {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, err
			}
			for k, v := range m {
				if m[k+"@odata.type"] != "Edm.Int64" {
					continue
				}
				n, err := strconv.ParseInt(v.(string), 10, 64)
				if err != nil {
					return nil, err
				}
				out[k] = n
			}
		}
	}
	return out, nil
}

func (r rawSplit) merge(ctx context.Context, pk, rk, name string, v int64) error {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "P"))
	body, err := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("%s_%02d", rk, i/rawPerRow),
		name: strconv.FormatInt(v, 10), name + "@odata.type": "Edm.Int64"})
	if err != nil {
		return err
	}
	_, err = r.c.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge})
	return err
}

// side times fn and counts its allocations.
type side struct {
	d      time.Duration
	allocs uint64
}

func (s *side) run(b *testing.B, fn func() error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	err := fn()
	s.d += time.Since(t0)
	runtime.ReadMemStats(&m1)
	s.allocs += m1.Mallocs - m0.Mallocs
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWide2000 writes (a whole rewrite), reads, and merges one
// property of a wide entity of 2,000 properties, wideentity against the
// raw split; see the comment above for what each side does.
func BenchmarkWide2000(b *testing.B) {
	env := tabletest.New(b)
	c := env.Table(nil)
	tbl, _ := table.New[table.Dynamic](c, nil)
	wide, err := wideentity.New(tbl, &wideentity.Options[table.Dynamic]{Parts: 10})
	if err != nil {
		b.Fatal(err)
	}
	raw := rawSplit{c}
	ctx := context.Background()
	if _, err := wide.Insert(ctx, at("wide", "e", benchBag(0))); err != nil {
		b.Fatal(err)
	}
	if err := raw.write(ctx, "raw", "e", benchValues(0)); err != nil {
		b.Fatal(err)
	}
	ops := map[string]struct{ wide, raw func(i int) error }{
		"write": {
			func(i int) error {
				_, err := wide.Update(ctx, at("wide", "e", benchBag(int64(i))), azcore.ETagAny, table.Replace)
				return err
			},
			func(i int) error { return raw.write(ctx, "raw", "e", benchValues(int64(i))) },
		},
		"read": {
			func(int) error {
				e, err := wide.Get(ctx, "wide", "e")
				if err == nil && len(e.Value.Properties) != benchProps {
					err = fmt.Errorf("read %d properties", len(e.Value.Properties))
				}
				return err
			},
			func(int) error {
				m, err := raw.read(ctx, "raw", "e")
				if err == nil && len(m) != benchProps {
					err = fmt.Errorf("read %d properties", len(m))
				}
				return err
			},
		},
		"merge": {
			func(i int) error {
				name := fmt.Sprintf("P%04d", i%benchProps)
				_, err := wide.Update(ctx, at("wide", "e", table.Dynamic{Properties: map[string]any{name: int64(-i)}}), azcore.ETagAny, table.Fields(name))
				return err
			},
			func(i int) error { return raw.merge(ctx, "raw", "e", fmt.Sprintf("P%04d", i%benchProps), int64(-i)) },
		},
	}
	for _, name := range []string{"write", "read", "merge"} {
		op := ops[name]
		b.Run(name, func(b *testing.B) {
			var w, r side
			for i := range b.N {
				if i%2 == 0 {
					w.run(b, func() error { return op.wide(i) })
					r.run(b, func() error { return op.raw(i) })
				} else {
					r.run(b, func() error { return op.raw(i) })
					w.run(b, func() error { return op.wide(i) })
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(w.d.Microseconds())/n/1000, "wide-ms/op")
			b.ReportMetric(float64(r.d.Microseconds())/n/1000, "raw-ms/op")
			b.ReportMetric(float64(r.d)/float64(w.d), "raw/wide")
			b.ReportMetric(float64(w.allocs)/n, "wide-allocs/op")
			b.ReportMetric(float64(r.allocs)/n, "raw-allocs/op")
		})
	}
}
