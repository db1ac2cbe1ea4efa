package table_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/cpustat"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Benchmarks against the emulator. Each compares, on equal terms, up to
// four sides doing the same work:
//
//   - tablekit: the public API of this package, on a client with
//     tablekit's defaults (table.NewServiceClientFromConnectionString);
//   - raw: what a careful user writes with aztables alone, on a client with
//     aztables' defaults: a struct with json tags and "X@odata.type"
//     annotation fields, encoding/json, and the same concurrency as
//     tablekit;
//   - rawedm: the same with aztables.EDMEntity instead of the struct;
//   - http: the emulator's ceiling (see ceiling_bench_test.go).
//
// Within an iteration the sides run one after another, in reverse order on
// every other iteration, so that the emulator's drift (it slows down as it
// holds more data, and speeds up as its JIT warms) affects all alike.
// Every side writes into a fresh table of equal size, created and deleted
// outside the timed region, and the emulator is warmed up with a few
// unmeasured operations of every side first. Each side's calls are timed on
// their own and reported per side: entities/s (wall), cpu-us/entity (CPU
// time of this process, user plus system, from getrusage: the Go client
// only, since the emulator is another process), allocs/entity and
// B/entity; and as ratios: tablekit/raw (speed, above 1 is faster),
// tablekit/raw-cpu (CPU per entity, below 1 is cheaper) and tablekit/http
// (the fraction of the ceiling reached). No benchmark asserts a timing.
//
// TABLEKIT_BENCH_LARGE=1 adds 100,000-entity bulk loads and scans.

// row is the entity of the emulator benchmarks: 10 properties, about 230
// bytes of JSON.
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

// benchRows returns n rows spread round-robin over parts partitions.
func benchRows(n, parts int) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = newRow(strconv.Itoa(i%parts), i)
	}
	return rows
}

// rawRow is the raw side's entity: the struct a careful user writes for
// encoding/json, with the annotations that keep Int64, Double and DateTime
// from being stored as strings, Int32 or strings.
type rawRow struct {
	PartitionKey string    `json:"PartitionKey"`
	RowKey       string    `json:"RowKey"`
	Name         string    `json:"Name"`
	Email        string    `json:"Email"`
	Age          int32     `json:"Age"`
	Balance      float64   `json:"Balance"`
	BalanceType  string    `json:"Balance@odata.type"`
	Visits       int64     `json:"Visits,string"`
	VisitsType   string    `json:"Visits@odata.type"`
	Active       bool      `json:"Active"`
	Joined       time.Time `json:"Joined"`
	JoinedType   string    `json:"Joined@odata.type"`
	Notes        string    `json:"Notes"`
}

// rawSelect is the projection tablekit's Query sends for row (the keys and
// row's properties), which the raw and http scans send too.
const rawSelect = "PartitionKey,RowKey,Name,Email,Age,Balance,Visits,Active,Joined,Notes"

func toRaw(r row) rawRow {
	return rawRow{PartitionKey: r.PartitionKey, RowKey: r.RowKey, Name: r.Name, Email: r.Email, Age: r.Age,
		Balance: r.Balance, BalanceType: "Edm.Double", Visits: r.Visits, VisitsType: "Edm.Int64",
		Active: r.Active, Joined: r.Joined, JoinedType: "Edm.DateTime", Notes: r.Notes}
}

func rawJSON(r row) ([]byte, error) { return json.Marshal(toRaw(r)) }

// rawEDM encodes r as aztables.EDMEntity with typed values.
func rawEDM(r row) ([]byte, error) {
	return json.Marshal(aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: r.PartitionKey, RowKey: r.RowKey}, Properties: map[string]any{
		"Name": r.Name, "Email": r.Email, "Age": r.Age, "Balance": r.Balance, "Visits": aztables.EDMInt64(r.Visits),
		"Active": r.Active, "Joined": aztables.EDMDateTime(r.Joined), "Notes": r.Notes,
	}})
}

func mustJSON(b *testing.B, v any) []byte {
	b.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// byPartition groups rows by PartitionKey, in order of first appearance,
// keeping their order within each partition.
func byPartition(rows []row) [][]row {
	index := map[string]int{}
	var parts [][]row
	for _, r := range rows {
		i, ok := index[r.PartitionKey]
		if !ok {
			i = len(parts)
			index[r.PartitionKey] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], r)
	}
	return parts
}

// rawLoad is the bulk loader a careful user writes with aztables: group by
// partition, then conc goroutines each take a partition and send its
// entities as 100-operation transactions, one after another.
func rawLoad(ctx context.Context, c *aztables.Client, rows []row, conc int, encode func(row) ([]byte, error)) error {
	parts := byPartition(rows)
	return eachPartition(len(parts), conc, func(p int) error {
		part := parts[p]
		actions := make([]aztables.TransactionAction, 0, table.Storage.MaxBatchOps)
		for len(part) > 0 {
			n := min(table.Storage.MaxBatchOps, len(part))
			actions = actions[:0]
			for _, r := range part[:n] {
				body, err := encode(r)
				if err != nil {
					return err
				}
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
			}
			if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
				return err
			}
			part = part[n:]
		}
		return nil
	})
}

// tkLoad is the same load with tablekit.
func tkLoad(ctx context.Context, tb *table.Table[row], rows []row, conc int) error {
	ops := make([]table.Op, len(rows))
	for i, r := range rows {
		ops[i] = tb.InsertOp(r)
	}
	_, err := tb.Submit(ctx, ops, &table.BatchOptions{Concurrency: conc})
	return err
}

// bench holds what a benchmark needs: the account and one client per side.
type bench struct {
	b     *testing.B
	env   *tabletest.Env
	tkSvc *aztables.ServiceClient // tablekit's defaults
	raw   *aztables.ServiceClient // aztables' defaults
	http  *rawHTTP

	mu     sync.Mutex
	tables map[string]bool // created and not yet dropped
}

func newBench(b *testing.B) *bench {
	b.Helper()
	env := tabletest.New(b)
	tkSvc, err := table.NewServiceClientFromConnectionString(env.ConnectionString, nil)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := aztables.NewServiceClientFromConnectionString(env.ConnectionString, nil)
	if err != nil {
		b.Fatal(err)
	}
	h, err := newRawHTTP(env.ConnectionString)
	if err != nil {
		b.Fatal(err)
	}
	bn := &bench{b: b, env: env, tkSvc: tkSvc, raw: raw, http: h, tables: map[string]bool{}}
	b.Cleanup(func() {
		for name := range bn.tables {
			bn.drop(name)
		}
	})
	return bn
}

// table creates a fresh table and returns its name. Call it outside the
// timed region.
func (bn *bench) table() string {
	bn.b.Helper()
	name := bn.env.Name()
	if err := table.CreateTable(context.Background(), bn.env.Tables, name); err != nil {
		bn.b.Fatal(err)
	}
	bn.mu.Lock()
	bn.tables[name] = true
	bn.mu.Unlock()
	return name
}

// drop deletes a table made by table: the emulator slows down as it holds
// more entities.
func (bn *bench) drop(name string) {
	bn.mu.Lock()
	delete(bn.tables, name)
	bn.mu.Unlock()
	_ = table.DeleteTable(context.Background(), bn.env.Tables, name)
}

func (bn *bench) tk(name string) *table.Table[row] {
	bn.b.Helper()
	tb, err := table.New[row](table.NewClient(bn.tkSvc, name), nil)
	if err != nil {
		bn.b.Fatal(err)
	}
	return tb
}

// settle collects the previous side's garbage outside the timed region,
// so that each side's measurement holds mostly its own collections.
func (bn *bench) settle() {
	bn.b.StopTimer()
	runtime.GC()
	bn.b.StartTimer()
}

// probing reports whether this is the single iteration that package
// testing runs, and discards, before running the b.N that -benchtime Nx
// asks for (golang.org/issue/32051). The emulator benchmarks then return
// at once instead of loading tens of thousands of entities for nothing;
// their real run warms the emulator up itself. With -benchtime 1x the
// single iteration is the result, and it is measured.
func (bn *bench) probing() bool {
	if bn.b.N != 1 {
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

// large reports whether the 100,000-entity variants were asked for.
func large() bool { return os.Getenv("TABLEKIT_BENCH_LARGE") == "1" }

// side accumulates the measured calls of one side of a benchmark.
type side struct {
	name          string
	wall, cpu     time.Duration
	cpuOK         bool
	allocs, bytes uint64
	n             int // entities handled
}

// measure runs f, which handles n entities, and adds its wall time, the
// process's CPU time and its heap allocations to s.
func (s *side) measure(b *testing.B, n int, f func() error) {
	b.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocs, bytes := ms.Mallocs, ms.TotalAlloc
	cpu0, ok0 := cpustat.Process()
	start := time.Now()
	err := f()
	wall := time.Since(start)
	cpu1, ok1 := cpustat.Process()
	runtime.ReadMemStats(&ms)
	if err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	s.wall += wall
	s.cpu += cpu1 - cpu0
	s.cpuOK = ok0 && ok1
	s.allocs += ms.Mallocs - allocs
	s.bytes += ms.TotalAlloc - bytes
	s.n += n
}

func (s *side) rate() float64 { return float64(s.n) / s.wall.Seconds() }

func (s *side) cpuPer() float64 { return s.cpu.Seconds() * 1e6 / float64(s.n) }

// report reports s's metrics, named after s.
func (s *side) report(b *testing.B) {
	if s.n == 0 {
		return
	}
	b.ReportMetric(s.rate(), s.name+"-entities/s")
	if s.cpuOK {
		b.ReportMetric(s.cpuPer(), s.name+"-cpu-us/entity")
	}
	b.ReportMetric(float64(s.allocs)/float64(s.n), s.name+"-allocs/entity")
	b.ReportMetric(float64(s.bytes)/float64(s.n), s.name+"-B/entity")
}

// compare reports how s fares against base: its speed ratio (above 1 is
// faster) and, with cpu, its CPU-per-entity ratio (below 1 is cheaper).
func (s *side) compare(b *testing.B, base *side, cpu bool) {
	if s.n == 0 || base.n == 0 {
		return
	}
	b.ReportMetric(s.rate()/base.rate(), s.name+"/"+base.name)
	if cpu && s.cpuOK && base.cpuOK && base.cpu > 0 {
		b.ReportMetric(s.cpuPer()/base.cpuPer(), s.name+"/"+base.name+"-cpu")
	}
}

// inOrder calls fs in order on even iterations and in reverse order on odd
// ones: over an even number of iterations every side has the same average
// position.
func inOrder(i int, fs ...func()) {
	for j := range fs {
		if i%2 == 1 {
			j = len(fs) - 1 - j
		}
		fs[j]()
	}
}

// BenchmarkPointOps compares single inserts and point reads, one call of
// each side per iteration. Inserts go to one fresh table per side; reads
// read 200 entities, which tablekit wrote for tablekit and raw aztables
// wrote for raw and http.
func BenchmarkPointOps(b *testing.B) {
	ctx := context.Background()
	b.Run("insert", func(b *testing.B) {
		bn := newBench(b)
		if bn.probing() {
			return
		}
		tkName, rawName, httpName := bn.table(), bn.table(), bn.table()
		tb, c := bn.tk(tkName), bn.raw.NewClient(rawName)
		tk := func(r row) error { _, err := tb.Insert(ctx, r); return err }
		raw := func(r row) error {
			body, err := rawJSON(r)
			if err == nil {
				_, err = c.AddEntity(ctx, body, nil)
			}
			return err
		}
		for i := range 20 { // warm-up
			r := newRow("warm", i)
			if err := tk(r); err != nil {
				b.Fatal(err)
			}
			if err := raw(r); err != nil {
				b.Fatal(err)
			}
			if err := bn.http.insert(ctx, httpName, mustJSON(b, toRaw(r))); err != nil {
				b.Fatal(err)
			}
		}
		bodies := make([][]byte, b.N)
		for i := range bodies {
			bodies[i] = mustJSON(b, toRaw(newRow("p", i)))
		}
		sTK, sRaw, sHTTP := &side{name: "tablekit"}, &side{name: "raw"}, &side{name: "http"}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := newRow("p", i)
			inOrder(i,
				func() { sTK.measure(b, 1, func() error { return tk(r) }) },
				func() { sRaw.measure(b, 1, func() error { return raw(r) }) },
				func() { sHTTP.measure(b, 1, func() error { return bn.http.insert(ctx, httpName, bodies[i]) }) })
		}
		reportSides(b, sTK, sRaw, sHTTP)
	})
	b.Run("get", func(b *testing.B) {
		bn := newBench(b)
		if bn.probing() {
			return
		}
		const n = 200
		tkName, rawName := bn.table(), bn.table()
		tb, c := bn.tk(tkName), bn.raw.NewClient(rawName)
		rows := benchRows(n, 1)
		if err := tkLoad(ctx, tb, rows, 4); err != nil {
			b.Fatal(err)
		}
		if err := rawLoad(ctx, c, rows, 4, rawJSON); err != nil {
			b.Fatal(err)
		}
		pk := rows[0].PartitionKey
		var sink int32
		tk := func(rk string) error {
			v, err := value(tb.Get(ctx, pk, rk, nil))
			sink += v.Age
			return err
		}
		raw := func(rk string) error {
			resp, err := c.GetEntity(ctx, pk, rk, nil)
			if err != nil {
				return err
			}
			var v rawRow
			err = json.Unmarshal(resp.Value, &v)
			sink += v.Age
			return err
		}
		for i := range 20 { // warm-up
			rk := rows[i].RowKey
			for _, f := range []func() error{func() error { return tk(rk) }, func() error { return raw(rk) },
				func() error { return bn.http.get(ctx, rawName, pk, rk) }} {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
		}
		sTK, sRaw, sHTTP := &side{name: "tablekit"}, &side{name: "raw"}, &side{name: "http"}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rk := rows[i%n].RowKey
			inOrder(i,
				func() { sTK.measure(b, 1, func() error { return tk(rk) }) },
				func() { sRaw.measure(b, 1, func() error { return raw(rk) }) },
				func() { sHTTP.measure(b, 1, func() error { return bn.http.get(ctx, rawName, pk, rk) }) })
		}
		if sink == 0 {
			b.Fatal("read nothing")
		}
		reportSides(b, sTK, sRaw, sHTTP)
	})
}

// reportSides reports every side, tablekit against raw, and every side
// against http (the ceiling). The first side is tablekit, the second raw.
func reportSides(b *testing.B, sides ...*side) {
	for _, s := range sides {
		s.report(b)
	}
	sides[0].compare(b, sides[1], true)
	for _, s := range sides {
		if s.name == "http" {
			for _, o := range sides {
				if o != s {
					o.compare(b, s, false)
				}
			}
		}
	}
}

// BenchmarkBulkLoad loads entities over 10 partitions into a fresh table
// per side, with four transactions in flight (-c4: tablekit's Submit with
// Concurrency 4; raw's four goroutines taking a partition each, sending
// its 100-op SubmitTransactions in order; http's four senders of prepared
// transactions) and, at 10,000 entities, one at a time (-c1), with raw
// aztables.EDMEntity beside the tagged struct. tablekit-c4/raw-c1 is the
// comparison of an earlier BENCHMARKS.md (unequal concurrency), kept to
// show the difference.
func BenchmarkBulkLoad(b *testing.B) {
	ctx := context.Background()
	sizes := []int{1000, 10000}
	if large() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			bn := newBench(b)
			if bn.probing() {
				return
			}
			rows := benchRows(n, 10)
			// A variant's prepare runs outside the timed region: it makes
			// the clients (and, for http, encodes the transactions) for a
			// fresh table and returns the load to time.
			type variant struct {
				s       *side
				prepare func(tbl string, rows []row) func() error
			}
			tk := func(conc int) func(string, []row) func() error {
				return func(tbl string, rows []row) func() error {
					tb := bn.tk(tbl)
					return func() error { return tkLoad(ctx, tb, rows, conc) }
				}
			}
			raw := func(conc int, encode func(row) ([]byte, error)) func(string, []row) func() error {
				return func(tbl string, rows []row) func() error {
					c := bn.raw.NewClient(tbl)
					return func() error { return rawLoad(ctx, c, rows, conc, encode) }
				}
			}
			http := func(conc int) func(string, []row) func() error {
				return func(tbl string, rows []row) func() error {
					prep := bn.http.prepareBatches(b, tbl, rows)
					return func() error { return bn.http.load(ctx, prep, conc) }
				}
			}
			vs := []variant{
				{&side{name: "tablekit-c4"}, tk(4)},
				{&side{name: "raw-c4"}, raw(4, rawJSON)},
				{&side{name: "http-c4"}, http(4)},
			}
			if n == 10000 {
				vs = append(vs,
					variant{&side{name: "rawedm-c4"}, raw(4, rawEDM)},
					variant{&side{name: "tablekit-c1"}, tk(1)},
					variant{&side{name: "raw-c1"}, raw(1, rawJSON)},
					variant{&side{name: "http-c1"}, http(1)})
			}

			// Warm-up: 200 entities (two partitions) with every variant.
			warmRows := benchRows(200, 2)
			for _, v := range vs {
				tbl := bn.table()
				if err := v.prepare(tbl, warmRows)(); err != nil {
					b.Fatalf("warm-up %s: %v", v.s.name, err)
				}
				bn.drop(tbl)
			}

			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tables := make([]string, len(vs))
				fs := make([]func(), len(vs))
				for j, v := range vs {
					tables[j] = bn.table()
					load := v.prepare(tables[j], rows)
					fs[j] = func() {
						bn.settle()
						v.s.measure(b, n, load)
					}
				}
				b.StartTimer()
				inOrder(i, fs...)
				b.StopTimer()
				for _, t := range tables {
					bn.drop(t)
				}
				b.StartTimer()
			}
			find := func(name string) *side {
				for _, v := range vs {
					if v.s.name == name {
						return v.s
					}
				}
				return &side{}
			}
			for _, v := range vs {
				v.s.report(b)
			}
			for _, c := range []string{"c4", "c1"} {
				tk, raw, h := find("tablekit-"+c), find("raw-"+c), find("http-"+c)
				tk.compare(b, raw, true)
				tk.compare(b, h, false)
				raw.compare(b, h, false)
			}
			find("tablekit-c4").compare(b, find("rawedm-c4"), true)
			find("tablekit-c4").compare(b, find("raw-c1"), false)
		})
	}
}

// BenchmarkStream reads a whole partition: tablekit's Query (its default
// projection: the keys and row's properties) against raw aztables'
// ListEntities pager with the same $select and filter, each entity decoded
// with json.Unmarshal into rawRow, and http's pages (read, not decoded).
// tablekit reads a partition tablekit wrote; raw and http one raw wrote.
// After the timed iterations, one unmeasured scan per side measures memory:
// the peak live heap (sampled after a collection every 500 entities) and
// the peak resident set (VmHWM of /proc/self/status, reset before the scan
// by writing 5 to /proc/self/clear_refs after returning freed memory to
// the OS; where the reset is refused, the growth of VmHWM during the scan
// is reported as hwm-growth-KB instead).
func BenchmarkStream(b *testing.B) {
	ctx := context.Background()
	sizes := []int{1000, 10000}
	if large() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			bn := newBench(b)
			if bn.probing() {
				return
			}
			tkName, rawName := bn.table(), bn.table()
			tb, c := bn.tk(tkName), bn.raw.NewClient(rawName)
			rows := benchRows(n, 1)
			if err := tkLoad(ctx, tb, rows, 4); err != nil {
				b.Fatal(err)
			}
			if err := rawLoad(ctx, c, rows, 4, rawJSON); err != nil {
				b.Fatal(err)
			}
			pk := rows[0].PartitionKey
			filter := "PartitionKey eq '" + pk + "'"
			var sink int64
			// Each scan calls every(count) after each entity, and stops
			// early when it returns false.
			tkScan := func(every func(int) bool) (int, error) {
				count := 0
				for v, err := range tb.Query(ctx, &table.Query{Filter: table.PartitionKey(pk)}) {
					if err != nil {
						return count, err
					}
					count++
					sink += v.Visits
					if !every(count) {
						break
					}
				}
				return count, nil
			}
			rawScan := func(every func(int) bool) (int, error) {
				count := 0
				pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Select: ptr(rawSelect)})
				for pager.More() {
					page, err := pager.NextPage(ctx)
					if err != nil {
						return count, err
					}
					for _, e := range page.Entities {
						var v rawRow
						if err := json.Unmarshal(e, &v); err != nil {
							return count, err
						}
						count++
						sink += v.Visits
						if !every(count) {
							return count, nil
						}
					}
				}
				return count, nil
			}
			httpScan := func(func(int) bool) (int, error) { return bn.http.scan(ctx, rawName, filter, rawSelect) }
			sides := []struct {
				s    *side
				scan func(func(int) bool) (int, error)
			}{{&side{name: "tablekit"}, tkScan}, {&side{name: "raw"}, rawScan}, {&side{name: "http"}, httpScan}}
			all := func(int) bool { return true }
			for _, sd := range sides { // warm-up: the first page
				if _, err := sd.scan(func(k int) bool { return k < table.MaxPageSize }); err != nil {
					b.Fatalf("warm-up %s: %v", sd.s.name, err)
				}
			}

			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fs := make([]func(), len(sides))
				for j, sd := range sides {
					fs[j] = func() {
						bn.settle()
						sd.s.measure(b, n, func() error {
							got, err := sd.scan(all)
							if err == nil && got != n {
								err = fmt.Errorf("read %d entities, want %d", got, n)
							}
							return err
						})
					}
				}
				inOrder(i, fs...)
			}
			b.StopTimer()
			reportSides(b, sides[0].s, sides[1].s, sides[2].s)
			for _, sd := range sides[:2] {
				scanMemory(b, sd.s.name, sd.scan)
			}
			if sink == 0 {
				b.Fatal("read nothing")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// scanMemory runs scan twice, unmeasured, and reports its peak live heap
// and peak resident set.
func scanMemory(b *testing.B, name string, scan func(every func(int) bool) (int, error)) {
	b.Helper()
	// Resident set: return freed memory to the OS, reset the high-water
	// mark to the current resident set, scan, read the high-water mark.
	debug.FreeOSMemory()
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	rss0, ok0 := procStatusKB("VmRSS")
	hwm0, _ := procStatusKB("VmHWM")
	if _, err := scan(func(int) bool { return true }); err != nil {
		b.Fatal(err)
	}
	hwm1, ok1 := procStatusKB("VmHWM")
	switch {
	case ok0 && ok1 && reset:
		b.ReportMetric(float64(hwm1), name+"-peak-rss-KB")
		b.ReportMetric(float64(hwm1-rss0), name+"-rss-growth-KB")
	case ok0 && ok1:
		b.ReportMetric(float64(hwm1-hwm0), name+"-hwm-growth-KB")
	}

	// Live heap: collect every 500 entities and keep the largest heap
	// above the heap before the scan.
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, uint64(0)
	if _, err := scan(func(k int) bool {
		if k%500 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
		}
		return true
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(peak)/1024, name+"-peak-heap-KB")
}

// procStatusKB returns a "kB" field of /proc/self/status (Linux only).
func procStatusKB(field string) (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
