package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// syncBuffer is an io.Writer the test can read while run writes, and that
// calls onLine for every complete line.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func(string)
	part   string
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	s.part += string(p)
	for {
		i := strings.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		if s.onLine != nil {
			s.onLine(s.part[:i])
		}
		s.part = s.part[i+1:]
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

var small = config{Duration: 1500 * time.Millisecond, Warmup: 200 * time.Millisecond, Workers: 4, Reads: 0.3, Preload: 50, Buckets: 4, MaxRequests: 100000, Interval: 500 * time.Millisecond}

// summaryRow returns the summary's columns for a phase.
func summaryRow(t *testing.T, out, phase string) []string {
	t.Helper()
	_, sum, ok := strings.Cut(out, "\nsummary\n")
	if !ok {
		t.Fatalf("no summary in:\n%s", out)
	}
	for _, line := range strings.Split(sum, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == phase {
			return f
		}
	}
	t.Fatalf("no summary row for %q in:\n%s", phase, out)
	return nil
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

// noStressTables fails when a test table was left behind.
func noStressTables(t *testing.T) {
	t.Helper()
	env := tabletest.New(t)
	for name, err := range table.ListTables(context.Background(), env.Tables, "stress") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("table %s left behind", name)
	}
}

// The program is part of the test suite so that it cannot rot: both
// phases run briefly, print progress lines and a summary with entities,
// no errors, and the test table is deleted.
func TestStress(t *testing.T) {
	tabletest.New(t) // fails (never skips in CI) without an emulator
	var out syncBuffer
	if err := run(context.Background(), small, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	progress := regexp.MustCompile(`(?m)^\[(one|spread) *\] +[0-9.]+s +[0-9]+ entities/s .*p50 .* errors 0 `)
	if n := len(progress.FindAllString(s, -1)); n < 4 {
		t.Fatalf("%d progress lines, want at least 2 per phase:\n%s", n, s)
	}
	for _, p := range []struct {
		name       string
		partitions string
	}{{"one", "1"}, {"spread", "4"}} {
		row := summaryRow(t, s, p.name)
		// phase partitions entities seconds entities/s per-partition of p50 p95 p99 max errors requests busy ended-by
		if row[1] != p.partitions || atoi(t, row[2]) < 10 || row[11] != "0" || atoi(t, row[12]) < atoi(t, row[2]) || row[14] != "duration" {
			t.Fatalf("summary row %v:\n%s", row, s)
		}
	}
	if !strings.Contains(s, "deleted the test table") {
		t.Fatalf("the test table was not deleted:\n%s", s)
	}
	noStressTables(t)
}

// A phase stops by itself when its request budget is spent, long before
// its duration, and never sends more than the budget.
func TestStressRequestBudget(t *testing.T) {
	tabletest.New(t)
	c := small
	c.Duration, c.MaxRequests, c.Buckets = time.Minute, 60, 1
	var out syncBuffer
	start := time.Now()
	if err := run(context.Background(), c, &out); err != nil {
		t.Fatal(err)
	}
	row := summaryRow(t, out.String(), "one")
	if row[12] != "60" || row[14] != "budget" || time.Since(start) > 30*time.Second {
		t.Fatalf("summary row %v after %v:\n%s", row, time.Since(start), out.String())
	}
	if strings.Contains(out.String(), "spread") {
		t.Fatalf("-buckets 1 ran a spread phase:\n%s", out.String())
	}
}

// Ctrl-C (the context ending) stops the run cleanly: no error, a summary
// of what was measured, the test table deleted.
func TestStressStopsCleanly(t *testing.T) {
	tabletest.New(t)
	c := small
	c.Duration = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := syncBuffer{onLine: func(line string) {
		if strings.HasPrefix(line, "[one") {
			cancel() // as signal.NotifyContext does on Ctrl-C
		}
	}}
	start := time.Now()
	if err := run(ctx, c, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("stopping took %v", took)
	}
	row := summaryRow(t, s, "one")
	if row[14] != "signal" || !strings.Contains(s, "stopped by a signal") || strings.Contains(s, `phase "spread"`) {
		t.Fatalf("after a stop:\n%s", s)
	}
	if !strings.Contains(s, "deleted the test table") {
		t.Fatalf("the test table was not deleted:\n%s", s)
	}
	noStressTables(t)
}

func TestStressRejectsBadFlags(t *testing.T) {
	for _, c := range []config{
		{Duration: 0, Workers: 1, Preload: 1, Buckets: 1, MaxRequests: 1, Interval: time.Second},
		{Duration: time.Second, Workers: 0, Preload: 1, Buckets: 1, MaxRequests: 1, Interval: time.Second},
		{Duration: time.Second, Workers: 1, Reads: 2, Preload: 1, Buckets: 1, MaxRequests: 1, Interval: time.Second},
		{Duration: time.Second, Workers: 1, Preload: 0, Buckets: 1, MaxRequests: 1, Interval: time.Second},
		{Duration: time.Second, Workers: 1, Preload: 1, Buckets: 0, MaxRequests: 1, Interval: time.Second},
		{Duration: time.Second, Workers: 1, Preload: 1, Buckets: 1, MaxRequests: 0, Interval: time.Second},
	} {
		if err := run(context.Background(), c, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%+v) accepted", c)
		}
	}
}
