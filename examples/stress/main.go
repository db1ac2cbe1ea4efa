// Command stress is the partitioning article's partition stress test: it
// creates a test table, loads it with entities of the PartitionKey under
// test, drives a peak load of inserts and point reads at that one
// partition, and then, for comparison, at the same logical partition
// spread over several bucket partitions (patterns/buckets). Every second
// it prints the entities per second and the latency percentiles against
// the guide's target of 2,000 entities per second per partition; at the
// end, a summary table. It runs against the account in
// AZURE_STORAGE_CONNECTION_STRING when that is set, and otherwise against
// a local Azurite emulator it starts and stops.
//
//	go run ./examples/stress                          # 10 s per phase against Azurite
//	go run ./examples/stress -duration 30s -workers 64 -rate 3000
//
// Each phase stops after -duration or -max-requests requests, whichever
// comes first; Ctrl-C stops the run at once, prints the summary of what
// was measured, and deletes the test table.
//
// On the emulator the numbers measure this machine (Azurite is one Node.js
// process, with no partition servers and no per-partition limit): point it
// at a storage account to see what one partition takes, where throttling
// (503 Server Busy, counted as "busy") shows a partition running hot and
// the service balancing its load.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Target is the guide's scalability target of one partition.
const Target = 2000

// config is the command line.
type config struct {
	Duration    time.Duration // measured, per phase
	Warmup      time.Duration // driven but not measured, before each phase's Duration
	Workers     int           // concurrent operations
	Rate        int           // operations per second in all, 0 for as fast as the workers go
	Reads       float64       // fraction of operations that are point reads
	Preload     int           // entities loaded into each phase's partition first
	Buckets     int           // partitions of the spread phase; 1 skips it
	MaxRequests int           // per phase
	Interval    time.Duration // between progress lines
}

func main() {
	var c config
	flag.DurationVar(&c.Duration, "duration", 10*time.Second, "how long each phase drives and measures load")
	flag.DurationVar(&c.Warmup, "warmup", time.Second, "how long each phase drives load before measuring (connections, caches, the emulator's JIT)")
	flag.IntVar(&c.Workers, "workers", 16, "operations in flight at once")
	flag.IntVar(&c.Rate, "rate", 0, "operations per second to offer in all (0: as fast as the workers go)")
	flag.Float64Var(&c.Reads, "reads", 0.2, "fraction of operations that are point reads (the rest are inserts)")
	flag.IntVar(&c.Preload, "preload", 1000, "entities loaded into the partition before each phase")
	flag.IntVar(&c.Buckets, "buckets", 8, "partitions to spread the same load over in the second phase (1: no second phase)")
	flag.IntVar(&c.MaxRequests, "max-requests", 100000, "most requests a phase sends")
	flag.Parse()
	c.Interval = time.Second
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, c, os.Stdout)
	stop()
	if stopErr := tabletest.StopShared(); err == nil {
		err = stopErr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}

func (c config) check() error {
	switch {
	case c.Duration <= 0 || c.Duration > time.Hour:
		return fmt.Errorf("-duration %v: want more than 0 and at most 1h", c.Duration)
	case c.Warmup < 0 || c.Warmup > time.Hour:
		return fmt.Errorf("-warmup %v: want 0 to 1h", c.Warmup)
	case c.Workers < 1 || c.Workers > 1024:
		return fmt.Errorf("-workers %d: want 1..1024", c.Workers)
	case c.Rate < 0:
		return fmt.Errorf("-rate %d: want 0 or more", c.Rate)
	case c.Reads < 0 || c.Reads > 1:
		return fmt.Errorf("-reads %v: want 0..1", c.Reads)
	case c.Preload < 1 || c.Preload > 100000:
		return fmt.Errorf("-preload %d: want 1..100000 (reads need entities)", c.Preload)
	case c.Buckets < 1 || c.Buckets > buckets.MaxBuckets:
		return fmt.Errorf("-buckets %d: want 1..%d", c.Buckets, buckets.MaxBuckets)
	case c.MaxRequests < 1:
		return fmt.Errorf("-max-requests %d: want 1 or more", c.MaxRequests)
	case c.Interval <= 0:
		return fmt.Errorf("progress interval %v", c.Interval)
	}
	return nil
}

// reading is the test entity: about 200 bytes, like a device's reading.
type reading struct {
	Partition string `table:",pk"` // the logical partition under test
	ID        string `table:",rk"`
	Device    string
	Value     float64
	At        time.Time
	Payload   string
}

// budget counts a phase's requests (every attempt, retries included) and
// the throttled answers, and ends the phase when the budget is spent: a
// request past it is never sent. It is a per-try azcore policy.
type budget struct {
	sent, busy atomic.Int64
	max        atomic.Int64
	mu         sync.Mutex
	stop       context.CancelFunc
}

var errBudget = errors.New("stress: the phase's request budget is spent")

func (b *budget) Do(req *policy.Request) (*http.Response, error) {
	if b.sent.Add(1) > b.max.Load() {
		b.sent.Add(-1)
		b.mu.Lock()
		if b.stop != nil {
			b.stop()
		}
		b.mu.Unlock()
		return nil, errBudget
	}
	resp, err := req.Next()
	if resp != nil && (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) {
		b.busy.Add(1)
	}
	return resp, err
}

// start resets the counters for a phase that ends with stop.
func (b *budget) start(max int, stop context.CancelFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent.Store(0)
	b.busy.Store(0)
	b.max.Store(int64(max))
	b.stop = stop
}

// sample is what the workers measured over some interval.
type sample struct {
	ops, errs int
	lat       []time.Duration
	firstErr  error
}

func (s *sample) add(d time.Duration, err error) {
	if err != nil {
		s.errs++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	s.ops++
	s.lat = append(s.lat, d)
}

// pct returns the p-th percentile of s's latencies (sorted in place).
func (s *sample) pct(p int) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	return s.lat[min(len(s.lat)-1, len(s.lat)*p/100)]
}

// result is one phase's summary.
type result struct {
	name       string
	partitions int
	elapsed    time.Duration
	total      sample
	requests   int64
	busy       int64
	stopped    string // why it ended
}

func run(ctx context.Context, c config, out io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	where := "the account in AZURE_STORAGE_CONNECTION_STRING"
	emulator := os.Getenv("AZURE_STORAGE_CONNECTION_STRING") == ""
	if emulator {
		where = "a local Azurite emulator (its numbers measure this machine, not a partition server)"
	}
	fmt.Fprintln(out, "stress: the partitioning article's partition stress test, against", where)
	cs, err := tabletest.ConnectionString()
	if err != nil {
		return err
	}
	admin, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		return err
	}
	b := &budget{}
	o := table.ClientOptions()
	o.PerRetryPolicies = append(o.PerRetryPolicies, b)
	o.Transport = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Workers, MaxIdleConns: c.Workers}}
	load, err := table.NewServiceClientFromConnectionString(cs, o)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("stress%d", time.Now().UnixNano())
	if err := table.CreateTable(ctx, admin, name); err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := table.DeleteTable(dctx, admin, name); err != nil {
			fmt.Fprintln(out, "deleting the test table:", err)
			return
		}
		fmt.Fprintf(out, "deleted the test table %s\n", name)
	}()
	setup, err := table.New[reading](table.NewClient(admin, name), nil)
	if err != nil {
		return err
	}
	tbl, err := table.New[reading](table.NewClient(load, name), nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "table %s; %d workers, offered load %s, %.0f%% point reads; per phase %v of warm-up, then %v measured, at most %d requests\n",
		name, c.Workers, rateText(c.Rate), c.Reads*100, c.Warmup, c.Duration, c.MaxRequests)

	phases := []struct {
		name    string
		buckets int
	}{{"one", 1}}
	if c.Buckets > 1 {
		phases = append(phases, struct {
			name    string
			buckets int
		}{"spread", c.Buckets})
	}
	var results []result
	for _, p := range phases {
		if ctx.Err() != nil {
			break
		}
		res, err := phase(ctx, c, out, p.name, p.buckets, setup, tbl, b)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	summary(out, results)
	if ctx.Err() != nil {
		fmt.Fprintln(out, "stopped by a signal")
	}
	return nil
}

func rateText(r int) string {
	if r == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d ops/s", r)
}

// phase preloads the logical partition of the phase, then drives load at
// it until the phase's time or request budget ends, or ctx does.
func phase(ctx context.Context, c config, out io.Writer, name string, n int, setup, tbl *table.Table[reading], b *budget) (result, error) {
	res := result{name: name, partitions: n}
	pk := "stress-" + name
	loader, err := buckets.New(setup, &buckets.Options{Buckets: n})
	if err != nil {
		return res, err
	}
	spread, err := buckets.New(tbl, &buckets.Options{Buckets: n})
	if err != nil {
		return res, err
	}
	// Load the partition under test (not timed, not budgeted).
	preloaded := make([]string, c.Preload)
	var ops []table.Op
	for i := range preloaded {
		preloaded[i] = keys.Join("pre", keys.Pad(uint64(i), 6))
		r := newReading(i)
		r.Partition, r.ID = pk, preloaded[i]
		op := loader.InsertOp(r)
		if err := op.Err(); err != nil {
			return res, err
		}
		ops = append(ops, op)
	}
	fmt.Fprintf(out, "\nphase %q: %d entities loaded into %s, then the load\n", name, c.Preload, partitionsText(n))
	if _, err := setup.Submit(ctx, ops, nil); err != nil {
		if ctx.Err() != nil {
			res.stopped = "signal"
			return res, nil
		}
		return res, err
	}

	pctx, cancel := context.WithTimeout(ctx, c.Warmup+c.Duration)
	defer cancel()
	b.start(c.MaxRequests, cancel)
	var mu sync.Mutex
	var tick sample
	res.total.lat = make([]time.Duration, 0, 1024)
	var seq atomic.Int64
	start := time.Now()
	from := start.Add(c.Warmup) // measurements start
	var wg sync.WaitGroup
	for w := range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for {
				k := seq.Add(1)
				if c.Rate > 0 {
					due := start.Add(time.Duration(float64(k-1) / float64(c.Rate) * float64(time.Second)))
					if !sleepUntil(pctx, due) {
						return
					}
				}
				if pctx.Err() != nil {
					return
				}
				t0 := time.Now()
				var err error
				if rnd.Float64() < c.Reads {
					_, err = spread.Get(pctx, pk, preloaded[rnd.IntN(len(preloaded))])
				} else {
					// Ever-increasing RowKeys: the append pattern.
					r := newReading(int(k))
					r.Partition, r.ID = pk, keys.Join(keys.Pad(uint64(time.Now().UnixNano()), 19), keys.Pad(uint64(w), 4), keys.Pad(uint64(k), 9))
					_, err = spread.Insert(pctx, r)
				}
				d := time.Since(t0)
				if pctx.Err() != nil {
					return // the phase ended while this one was in flight: not counted
				}
				if t0.Before(from) {
					continue // warming up
				}
				mu.Lock()
				tick.add(d, err)
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	ticker := time.NewTicker(c.Interval)
	defer ticker.Stop()
	last := from
	report := func(now time.Time) {
		if now.Before(from) {
			return
		}
		mu.Lock()
		s := tick
		tick = sample{}
		mu.Unlock()
		res.total.ops += s.ops
		res.total.errs += s.errs
		res.total.lat = append(res.total.lat, s.lat...)
		if res.total.firstErr == nil {
			res.total.firstErr = s.firstErr
		}
		secs := now.Sub(last).Seconds()
		last = now
		if secs <= 0 {
			return
		}
		rate := float64(s.ops) / secs
		fmt.Fprintf(out, "[%-6s] %5.1fs  %6.0f entities/s  %4.0f/s per partition (%3.0f%% of %d)  p50 %-8v p95 %-8v p99 %-8v errors %d  busy %d\n",
			name, now.Sub(from).Seconds(), rate, rate/float64(n), 100*rate/float64(n)/Target, Target,
			round(s.pct(50)), round(s.pct(95)), round(s.pct(99)), s.errs, b.busy.Load())
	}
loop:
	for {
		select {
		case now := <-ticker.C:
			report(now)
		case <-done:
			break loop
		}
	}
	end := time.Now()
	if end.Sub(last) > c.Interval/10 {
		report(end)
	}
	res.elapsed = max(0, end.Sub(from))
	res.requests, res.busy = b.sent.Load(), b.busy.Load()
	switch {
	case ctx.Err() != nil:
		res.stopped = "signal"
	case b.sent.Load() >= int64(c.MaxRequests):
		res.stopped = "budget"
	default:
		res.stopped = "duration"
	}
	if res.total.firstErr != nil && !errors.Is(res.total.firstErr, errBudget) {
		fmt.Fprintf(out, "first error of the phase: %v\n", res.total.firstErr)
	}
	return res, nil
}

func partitionsText(n int) string {
	if n == 1 {
		return "one partition"
	}
	return fmt.Sprintf("%d bucket partitions", n)
}

func newReading(i int) reading {
	return reading{Device: fmt.Sprintf("device-%04d", i%1000), Value: float64(i) / 10, At: time.Now().UTC(), Payload: strings.Repeat("x", 120)}
}

// sleepUntil waits until t; false when ctx ends first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func summary(out io.Writer, results []result) {
	fmt.Fprintln(out, "\nsummary")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "phase\tpartitions\tentities\tseconds\tentities/s\tper partition\tof 2,000/s\tp50\tp95\tp99\tmax\terrors\trequests\tbusy\tended by\t")
	for _, r := range results {
		rate := 0.0
		if s := r.elapsed.Seconds(); s > 0 {
			rate = float64(r.total.ops) / s
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%.1f\t%.0f\t%.0f\t%.0f%%\t%v\t%v\t%v\t%v\t%d\t%d\t%d\t%s\t\n",
			r.name, r.partitions, r.total.ops, r.elapsed.Seconds(), rate, rate/float64(r.partitions), 100*rate/float64(r.partitions)/Target,
			round(r.total.pct(50)), round(r.total.pct(95)), round(r.total.pct(99)), round(r.total.pct(100)), r.total.errs, r.requests, r.busy, r.stopped)
	}
	w.Flush()
}
