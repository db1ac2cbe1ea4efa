package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// The whole program, as `go run ./examples/directory` runs it.
func TestDirectory(t *testing.T) {
	tabletest.New(t) // fails (never skips in CI) without an emulator
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"ErrDuplicate", "Jo Smith", "HR now: Kim Lee, Max Lee", "Sales: 000224 moved to HR; 000223 renamed", "Directory complete."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, out.String())
		}
	}
}

// dying is a transport that stops forwarding after a number of requests,
// as a process that dies there: every later request fails before it is
// sent (and with lose, the last one forwarded applies but its response is
// lost). Disarmed, it forwards everything.
type dying struct {
	next  policy.Transporter
	mu    sync.Mutex
	n     int // requests since armed
	after int // -1: disarmed
	lose  bool
	dead  chan struct{} // closed at the first request failed since armed
}

// parallel is how many crash scenarios run at once (each on its own
// rig; most of their time is spent waiting).
const parallel = 20

var errDead = fmt.Errorf("the process died here: %w", syscall.ECONNREFUSED)

func (d *dying) arm(after int, lose bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n, d.after, d.lose, d.dead = 0, after, lose, make(chan struct{})
}

// died is closed once the armed transport has failed a request.
func (d *dying) died() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

func (d *dying) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (d *dying) Do(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	d.n++
	n, after, lose := d.n, d.after, d.lose
	if after >= 0 && n == after+1 {
		close(d.dead)
	}
	d.mu.Unlock()
	switch {
	case after < 0 || n <= after:
		return d.next.Do(req)
	case n == after+1 && lose:
		resp, err := d.next.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, faults.ErrLost
	}
	return nil, errDead
}

// dirRig is a directory over a test rig, with a dying transport under the
// rig's faults.
type dirRig struct {
	*testrig.Rig
	c     Clients
	d     *Directory
	w     *eventual.Worker
	death *dying
}

func newDirRig(t *testing.T, withOffices bool) *dirRig {
	t.Helper()
	r := &dirRig{Rig: testrig.New(t)}
	next := r.Faults.Next
	if next == nil {
		next = http.DefaultClient
	}
	r.death = &dying{next: next, after: -1}
	r.Faults.Next = r.death
	r.c = Clients{People: r.Table(), Offices: r.Table(), Queue: r.Queue(), Poison: r.CleanQueue(), Photos: r.Container()}
	var err error
	// A commit window that a loaded machine running many rigs at once
	// still meets (3 s was not, beside another make test: reserving alone
	// took 3.5 s); an unreleased reservation waits it out.
	if r.d, err = open(r.c, 8*time.Second, withOffices); err != nil {
		t.Fatal(err)
	}
	r.d.Retry = testrig.Fast
	if r.w, err = r.d.Worker(&eventual.WorkerOptions{VisibilityTimeout: time.Second, Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 100 * time.Millisecond}, Backoff: &retry.Policy{}, MaxDeliveries: 50}); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return r
}

// drain runs the worker until the queue is empty.
func (r *dirRig) drain(ctx context.Context) error {
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.w.Run(rctx) }()
	err := r.w.Drain(ctx)
	stop()
	if rerr := <-done; err == nil {
		err = rerr
	}
	return err
}

func employee(id string) Employee {
	return Employee{Department: "Sales", ID: id, FirstName: "Jo", LastName: "Jones", Email: id + "@contoso.com", Office: "Seattle", Photo: photo(id, 70<<10)}
}

// state describes everything the directory holds of employee id, in
// both departments: the employee (names and photo), its change-log
// entries; and it fails unless every index is exactly right (Check over
// every partition, the office index included), no intent is pending and
// none was poisoned.
func (r *dirRig) state(ctx context.Context, id string) (string, error) {
	var parts []string
	for _, dept := range []string{"Sales", "HR"} {
		e, err := r.d.People.Get(ctx, dept, id)
		switch {
		case errors.Is(err, table.ErrNotFound):
			parts = append(parts, dept+": none")
		case err != nil:
			return "", err
		default:
			parts = append(parts, fmt.Sprintf("%s: %s %s, photo %v", dept, e.Value.FirstName, e.Value.LastName, bytes.Equal(e.Value.Photo, employee(id).Photo)))
		}
		entries, err := r.d.Log.Latest(ctx, dept, 100)
		if err != nil {
			return "", err
		}
		var log []string
		for _, e := range entries {
			if e.Value.Employee == id {
				log = append(log, e.Value.What)
			}
		}
		parts = append(parts, dept+" log: "+strings.Join(log, "; "))
	}
	drift, err := r.d.People.Check(ctx, "")
	if err != nil || !drift.Clean() {
		return "", fmt.Errorf("drift %+v, %v", drift, err)
	}
	office, err := r.d.InOffice(ctx, "Seattle")
	if err != nil {
		return "", err
	}
	for _, e := range office {
		if e.RowKey == id {
			parts = append(parts, "office: "+e.PartitionKey)
		}
	}
	pending, err := table.Collect(r.d.Queue.Pending(ctx, nil))
	if err != nil || len(pending) > 0 {
		return "", fmt.Errorf("pending intents %+v, %v", pending, err)
	}
	if p, err := r.d.Queue.Poisoned(ctx, 32); err != nil || len(p) > 0 {
		return "", fmt.Errorf("poisoned intents %+v, %v", p, err)
	}
	return strings.Join(parts, " | "), nil
}

// op is one of the directory's multi-pattern writes, on employee id
// (hired first, but for the hire itself).
type op struct {
	name  string
	hired bool
	run   func(ctx context.Context, d *Directory, id string) error
}

var ops = []op{
	{"hire", false, func(ctx context.Context, d *Directory, id string) error { return d.Hire(ctx, employee(id)) }},
	{"rename", true, func(ctx context.Context, d *Directory, id string) error {
		return d.Rename(ctx, "Sales", id, "Jo", "Smith")
	}},
	{"move", true, func(ctx context.Context, d *Directory, id string) error { return d.Move(ctx, "Sales", id, "HR") }},
	{"fire", true, func(ctx context.Context, d *Directory, id string) error { return d.Fire(ctx, "Sales", id) }},
}

// The round trips of each write, with the office index (its intent) and
// without (the same-partition writes alone: the benchmarks' shape).
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		offices bool
		want    map[string]int
	}{
		// hire: photo upload + Commit (reserve, transaction, release);
		// rename, fire: read + Commit; move: read + photo read + upload +
		// Commit of two intents (2 reserves, transaction, 2 releases).
		{true, map[string]int{"hire": 4, "rename": 4, "move": 8, "fire": 4}},
		// hire: upload + transaction; rename, fire: read + transaction;
		// move: read + photo read + upload + Commit of one intent.
		{false, map[string]int{"hire": 2, "rename": 2, "move": 6, "fire": 2}},
	} {
		r := newDirRig(t, c.offices)
		for i, o := range ops {
			id := fmt.Sprintf("%06d", i)
			if o.hired {
				if err := r.d.Hire(ctx, employee(id)); err != nil {
					t.Fatal(err)
				}
			}
			r.Faults.Reset()
			if err := o.run(ctx, r.d, id); err != nil {
				t.Fatalf("%s: %v", o.name, err)
			}
			if n := r.Faults.Count(); n != c.want[o.name] {
				t.Errorf("offices %v, %s: %d round trips, want %d", c.offices, o.name, n, c.want[o.name])
			}
		}
	}
}

// Crash points: each write stopped before each of its requests (and at
// each request whose response is then lost), as a process that dies
// there; then a worker drains the queue. Every time, the employee, its
// copies (the office index's too), its photo and its change log are
// exactly as before the write, or exactly as after it (as the write
// leaves them without a crash): all or nothing.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type scenario struct {
		o    op
		k    int
		lose bool
		r    *dirRig
		id   string
	}
	var scenarios []*scenario
	want := map[string][2]string{} // per write: the state before, after
	for _, o := range ops {
		// The requests the write makes without a crash, and what it leaves.
		probe := newDirRig(t, true)
		if o.hired {
			if err := probe.d.Hire(ctx, employee("p")); err != nil {
				t.Fatal(err)
			}
		}
		if err := probe.drain(ctx); err != nil {
			t.Fatal(err)
		}
		before, err := probe.state(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		probe.death.arm(1<<30, false)
		if err := o.run(ctx, probe.d, "p"); err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		n := probe.death.count()
		probe.death.arm(-1, false)
		if err := probe.drain(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := probe.state(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		want[o.name] = [2]string{before, after}
		for k := range n {
			for _, lose := range []bool{false, true} {
				scenarios = append(scenarios, &scenario{o: o, k: k, lose: lose, r: newDirRig(t, true), id: "p"})
			}
		}
	}
	var mu sync.Mutex
	applied := map[string]int{}
	var wg sync.WaitGroup
	slots := make(chan struct{}, parallel)
	for _, s := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			name := fmt.Sprintf("%s stopped at request %d (response lost: %v)", s.o.name, s.k+1, s.lose)
			d := s.r.d
			if s.o.hired {
				if err := hire(ctx, d, employee(s.id)); err != nil {
					t.Errorf("%s: set-up: %v", name, err)
					return
				}
			}
			s.r.death.arm(s.k, s.lose)
			opErr := s.o.run(ctx, d, s.id)
			s.r.death.arm(-1, false) // the process restarts
			if err := s.r.drain(ctx); err != nil {
				t.Errorf("%s: drain: %v", name, err)
				return
			}
			got, err := s.r.state(ctx, s.id)
			switch {
			case err != nil:
				t.Errorf("%s: %v (the write: %v)", name, err, opErr)
			case got == want[s.o.name][1]:
				mu.Lock()
				applied[s.o.name]++
				mu.Unlock()
			case got != want[s.o.name][0]:
				t.Errorf("%s: the write (%v) left\n  %s\nwhich is neither the state before it\n  %s\nnor after it\n  %s", name, opErr, got, want[s.o.name][0], want[s.o.name][1])
			case opErr == nil:
				t.Errorf("%s: the write reported success and changed nothing", name)
			}
		}()
	}
	wg.Wait()
	for _, o := range ops {
		n := 0
		for _, s := range scenarios {
			if s.o.name == o.name {
				n++
			}
		}
		t.Logf("%s: %d crash points, %d applied, %d not", o.name, n, applied[o.name], n-applied[o.name])
	}
}

// hire hires e as a test's set-up: a Hire whose commit window passed
// while reserving (a loaded machine) applied nothing, and is tried again,
// as a caller would.
func hire(ctx context.Context, d *Directory, e Employee) error {
	for try := 0; ; try++ {
		err := d.Hire(ctx, e)
		if !errors.Is(err, eventual.ErrCommitWindow) || try == 3 {
			return err
		}
	}
}

// The worker's half of a move (removing the employee from the department
// it left, with its copies and a log entry, and keeping the office index)
// stopped at each of its requests, then run again: the move completes
// exactly once.
func TestWorkerCrashPoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(r *dirRig) error {
		if err := hire(ctx, r.d, employee("p")); err != nil {
			return err
		}
		if err := r.drain(ctx); err != nil {
			return err
		}
		for try := 0; ; try++ {
			err := r.d.Move(ctx, "Sales", "p", "HR")
			if !errors.Is(err, eventual.ErrCommitWindow) || try == 3 {
				return err
			}
		}
	}
	probe := newDirRig(t, true)
	if err := setup(probe); err != nil {
		t.Fatal(err)
	}
	probe.death.arm(1<<30, false)
	if err := probe.drain(ctx); err != nil {
		t.Fatal(err)
	}
	n := probe.death.count()
	probe.death.arm(-1, false)
	want, err := probe.state(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the worker's drain of a move: %d requests", n)
	// make test stops the worker at every third request; make soak (and
	// TABLEKIT_SOAK=1) at each, with and without a lost response.
	step, loses := 3, []bool{false}
	if os.Getenv(modelcheck.SoakEnv) != "" {
		step, loses = 1, []bool{false, true}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, parallel)
	for k := 0; k < n; k += step {
		for _, lose := range loses {
			r := newDirRig(t, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				slots <- struct{}{}
				defer func() { <-slots }()
				name := fmt.Sprintf("the worker stopped at request %d (response lost: %v)", k+1, lose)
				if err := setup(r); err != nil {
					t.Errorf("%s: set-up: %v", name, err)
					return
				}
				r.death.arm(k, lose)
				rctx, stop := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- r.w.Run(rctx) }()
				<-r.death.died() // the process dies here
				stop()
				<-done
				r.death.arm(-1, false) // and restarts
				if err := r.drain(ctx); err != nil {
					t.Errorf("%s: drain: %v", name, err)
					return
				}
				if got, err := r.state(ctx, "p"); err != nil || got != want {
					t.Errorf("%s: %s, %v; want %s", name, got, err, want)
				}
			}()
		}
	}
	wg.Wait()
}
