package rotation_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestWritersAcrossABoundary: 8 writers insert 40 logins each with times on
// both sides of midnight, into periods whose tables do not exist yet (so
// they race to create them), with one in five requests' responses lost.
// Each login is stored at most once, in the table of its period; every
// insert reported applied is stored; an insert whose every attempt lost
// its response may end unknown (a late attempt could still land), and is
// then stored or not.
func TestWritersAcrossABoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t, aug1.Add(30*time.Second)) // July 31 open (Grace 1 h)
	r := f.tables(t, nil)
	// Every fifth POST loses its response. (A fault's Match is asked once
	// per pending fault, so the choice is made once per request.)
	var posts atomic.Int32
	chosen := map[*http.Request]bool{} // the transport calls Match under its lock
	fifth := func(req *http.Request) bool {
		if c, ok := chosen[req]; ok || !isPost(req) {
			return c
		}
		chosen[req] = posts.Add(1)%5 == 0
		return chosen[req]
	}
	for range 60 {
		f.ft.Inject(faults.Fault{Match: fifth, LoseResponse: true})
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	applied, unknown := map[string][]string{}, map[string]bool{}
	var mu sync.Mutex
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				// Alternately just before and just after midnight.
				at := aug1.Add(time.Duration(i%2*2-1) * time.Duration(w*40+i+1) * time.Millisecond)
				l := loginAt(fmt.Sprint("w", w), at, fmt.Sprint(w, "-", i))
				_, err := r.Insert(ctx, at, l)
				mu.Lock()
				switch {
				case err == nil:
					applied[r.Name(at)] = append(applied[r.Name(at)], l.User+"/"+l.IP)
				case errors.Is(err, table.ErrOutcomeUnknown):
					unknown[r.Name(at)+" "+l.User+"/"+l.IP] = true
				default:
					errs <- fmt.Errorf("writer %d, login %d at %v: %w", w, i, at, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(applied) != 2 {
		t.Fatalf("logins fell in %d periods, want 2", len(applied))
	}
	total := 0
	for _, at := range []time.Time{jul31, aug1} {
		got := stored(t, r, at)
		if len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("table %s holds a login twice", r.Name(at))
		}
		for _, a := range applied[r.Name(at)] {
			if !slices.Contains(got, a) {
				t.Fatalf("login %s, reported applied, is not in %s", a, r.Name(at))
			}
		}
		for _, g := range got {
			if !slices.Contains(applied[r.Name(at)], g) && !unknown[r.Name(at)+" "+g] {
				t.Fatalf("table %s holds %s, which was not written there", r.Name(at), g)
			}
		}
		total += len(got)
	}
	if len(unknown) > 2 || total < 320-len(unknown) {
		t.Fatalf("%d stored, %d unknown of 320", total, len(unknown))
	}
	t.Logf("320 inserts, one in five of %d POSTs lost: %d unknown", posts.Load(), len(unknown))
	if got := periodNames(t, r); !slices.Equal(got, []string{"2024-07-31T00", "2024-08-01T00"}) {
		t.Fatalf("Periods = %v", got)
	}
}

// TestSweepRacingWriters: writers keep inserting into yesterday's period
// (open while within Grace) and today's while the clock passes the end of
// yesterday's Grace and a Sweep deletes it. Every write to today succeeds;
// every write to yesterday is applied (before the delete: it went with
// its period) or refused with ErrExpired; yesterday's table is never
// created again.
func TestSweepRacingWriters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, aug1.Add(30*time.Minute))
	r := f.tables(t, nil)
	ctx := context.Background()
	yesterday, today := jul31.Add(23*time.Hour), aug1.Add(time.Hour)
	for _, at := range []time.Time{yesterday, today} {
		if err := r.Prepare(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var applied, expired atomic.Int64
	progress := make(chan struct{}, 1) // a writer's write to yesterday ended
	errs := make(chan error, 16)
	var todayMu sync.Mutex
	var todayWant []string
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				at := yesterday.Add(time.Duration(w*100000+i) * time.Microsecond)
				_, err := r.Insert(ctx, at, loginAt(fmt.Sprint("w", w), at, fmt.Sprint(i)))
				switch {
				case err == nil:
					applied.Add(1)
				case errors.Is(err, rotation.ErrExpired):
					expired.Add(1)
				default:
					errs <- fmt.Errorf("write to yesterday: %w", err)
					return
				}
				select {
				case progress <- struct{}{}:
				default:
				}
				at = today.Add(time.Duration(w*100000+i) * time.Microsecond)
				l := loginAt(fmt.Sprint("w", w), at, fmt.Sprint(i))
				if _, err := r.Insert(ctx, at, l); err != nil {
					errs <- fmt.Errorf("write to today: %w", err)
					return
				}
				todayMu.Lock()
				todayWant = append(todayWant, l.User+"/"+l.IP)
				todayMu.Unlock()
			}
		}()
	}
	// Let the writers run, then close yesterday (past Grace and the clock
	// skew margin) and sweep it while they go on.
	for applied.Load() < 20 {
		<-progress
	}
	f.clock.Set(aug1.Add(2 * time.Hour))
	s, err := r.Sweep(ctx, &rotation.SweepOptions{Before: aug1})
	if err != nil || len(s.Deleted) != 1 || s.Deleted[0].Name != r.Name(yesterday) {
		t.Fatalf("Sweep = %+v, %v", s, err)
	}
	for expired.Load() < 20 {
		<-progress
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := periodNames(t, r); !slices.Equal(got, []string{"2024-08-01T00"}) {
		t.Fatalf("Periods after the race = %v: yesterday's table was created again", got)
	}
	slices.Sort(todayWant)
	if got := stored(t, r, today); !slices.Equal(got, todayWant) {
		t.Fatalf("today holds %d logins, want %d", len(got), len(todayWant))
	}
	t.Logf("writes to yesterday: %d applied before the Sweep, %d refused after", applied.Load(), expired.Load())
}

// TestWriteMeetsItsSweptTable: the deterministic version of the race. The
// Sweep runs (on another client) just as a write to the period reaches the
// transport: the write finds no table, checks the clock again, and fails
// with ErrExpired instead of creating the swept table again.
func TestWriteMeetsItsSweptTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, aug1.Add(30*time.Minute))
	r := f.tables(t, nil)
	ctx := context.Background()
	at := jul31.Add(23 * time.Hour)
	if _, err := r.Insert(ctx, at, loginAt("u", at, "kept")); err != nil {
		t.Fatal(err)
	}
	sweeper, err := rotation.New[login](f.env.Tables, f.prefix, &rotation.Options{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var swept rotation.Swept
	var sweepErr error
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: func(req *http.Request) bool {
		if req.Method != http.MethodPost || !strings.Contains(req.URL.Path, r.Name(at)) {
			return false
		}
		f.clock.Set(aug1.Add(2 * time.Hour))
		swept, sweepErr = sweeper.Sweep(context.Background(), &rotation.SweepOptions{Before: aug1})
		return true // then forwarded: the table is gone
	}})
	if _, err := r.Insert(ctx, at, loginAt("u", at, "late")); !errors.Is(err, rotation.ErrExpired) {
		t.Fatalf("Insert into a period swept under it = %v", err)
	}
	if sweepErr != nil || len(swept.Deleted) != 1 {
		t.Fatalf("Sweep = %+v, %v", swept, sweepErr)
	}
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("%d requests: the write must not create the table again", n)
	}
	if got := periodNames(t, r); len(got) != 0 {
		t.Fatalf("Periods = %v", got)
	}
	// The same with the clock not yet past Grace for the writer would be
	// a clock skew beyond MaxClockSkew: Sweep refuses such cutoffs.
	if _, err := sweeper.Sweep(ctx, &rotation.SweepOptions{Before: aug1.Add(2 * time.Hour)}); !errors.Is(err, rotation.ErrInvalid) {
		t.Fatalf("Sweep of an open period = %v", err)
	}
}

// TestCrashPoints stops the process (cancels the context) at each point of
// the crash table in doc.go and checks what is left.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, aug1.Add(12*time.Hour))
	r := f.tables(t, nil)
	ctx := context.Background()
	crashAt := func(match func(*http.Request) bool, afterServer bool) (context.Context, context.CancelFunc) {
		cctx, cancel := context.WithCancel(ctx)
		if afterServer {
			f.ft.Inject(faults.Fault{Match: match, LoseResponse: true, AfterServer: cancel})
		} else {
			f.ft.Inject(faults.Fault{Match: func(req *http.Request) bool {
				if match(req) {
					cancel()
					return true
				}
				return false
			}, Err: context.Canceled})
		}
		return cctx, cancel
	}
	at := aug1.Add(time.Hour)
	// Insert, stopped after the insert answered TableNotFound (before the
	// create reaches the service): nothing written, no table.
	cctx, cancel := crashAt(isCreate, false)
	if _, err := r.Insert(cctx, at, loginAt("u", at, "1")); err == nil {
		t.Fatal("Insert succeeded after its context ended")
	}
	cancel()
	if got := periodNames(t, r); len(got) != 0 {
		t.Fatalf("stopped before the create: Periods = %v", got)
	}
	// Stopped after the create: an empty table, used by the next write.
	cctx, cancel = crashAt(isCreate, true)
	if _, err := r.Insert(cctx, at, loginAt("u", at, "2")); err == nil {
		t.Fatal("Insert succeeded after its context ended")
	}
	cancel()
	if got := stored(t, r, at); len(got) != 0 || len(periodNames(t, r)) != 1 {
		t.Fatalf("stopped after the create: %v stored", got)
	}
	f.ft.Reset()
	if _, err := r.Insert(ctx, at, loginAt("u", at, "3")); err != nil || f.ft.Count() != 1 {
		t.Fatalf("next Insert: %v in %d round trips", err, f.ft.Count())
	}
	// Stopped during the second insert of a first write, after the service
	// stored it: unknown, and stored once.
	next := aug1.AddDate(0, 0, 1)
	var posts atomic.Int32
	cctx, cancel = crashAt(func(req *http.Request) bool {
		return isPost(req) && !isCreate(req) && posts.Add(1) == 2
	}, true)
	if _, err := r.Insert(cctx, next, loginAt("u", next, "4")); !errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("Insert stopped after the service stored it = %v", err)
	}
	cancel()
	if got := stored(t, r, next); !slices.Equal(got, []string{"u/4"}) {
		t.Fatalf("stored %v", got)
	}
	// Submit stopped after the create: an empty table.
	third := aug1.AddDate(0, 0, 2)
	cctx, cancel = crashAt(isCreate, true)
	if _, err := r.Submit(cctx, third, []table.Op{r.Table(third).InsertOp(loginAt("u", third, "5"))}, nil); err == nil {
		t.Fatal("Submit succeeded after its context ended")
	}
	cancel()
	if got := stored(t, r, third); len(got) != 0 {
		t.Fatalf("Submit stopped after the create stored %v", got)
	}

	// Sweep over 4 periods, stopped between deletes, then with a delete in
	// flight; each rerun finishes the work.
	f.clock.Set(aug1.AddDate(0, 0, 10))
	for _, d := range []int{3, 4} {
		day := aug1.AddDate(0, 0, d)
		f.clock.Set(day)
		if err := r.Prepare(ctx, day); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Set(aug1.AddDate(0, 0, 10))
	if got := periodNames(t, r); len(got) != 5 {
		t.Fatalf("Periods before the Sweep = %v", got)
	}
	var deletes atomic.Int32
	isDelete := func(req *http.Request) bool { return req.Method == http.MethodDelete }
	cctx, cancel = crashAt(func(req *http.Request) bool { return isDelete(req) && deletes.Add(1) == 2 }, false)
	s, err := r.Sweep(cctx, &rotation.SweepOptions{Before: aug1.AddDate(0, 0, 9)})
	cancel()
	if err == nil || len(s.Deleted) != 1 {
		t.Fatalf("Sweep stopped at its second delete = %+v, %v", s, err)
	}
	if got := periodNames(t, r); len(got) != 4 {
		t.Fatalf("after a Sweep stopped between deletes: %v", got)
	}
	cctx, cancel = crashAt(isDelete, true)
	s, err = r.Sweep(cctx, &rotation.SweepOptions{Before: aug1.AddDate(0, 0, 9)})
	cancel()
	if err == nil || len(s.Deleted) != 0 {
		t.Fatalf("Sweep stopped with a delete in flight = %+v, %v", s, err)
	}
	if got := periodNames(t, r); len(got) != 3 {
		t.Fatalf("after a Sweep stopped in flight: %v (the delete reached the service)", got)
	}
	s, err = r.Sweep(ctx, &rotation.SweepOptions{Before: aug1.AddDate(0, 0, 9)})
	if err != nil || len(s.Deleted) != 3 {
		t.Fatalf("rerun Sweep = %+v, %v", s, err)
	}
	if got := periodNames(t, r); len(got) != 0 {
		t.Fatalf("after the rerun: %v", got)
	}
}
