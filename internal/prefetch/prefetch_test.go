package prefetch_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablekit/tablekit/internal/prefetch"
)

// gate counts the calls in flight and lets each one finish only when the
// test releases it.
type gate struct {
	inFlight, peak atomic.Int32
	release        chan struct{}
	started        chan int
}

func newGate() *gate { return &gate{release: make(chan struct{}), started: make(chan int, 100)} }

func (g *gate) call(ctx context.Context, i int) (int, error) {
	n := g.inFlight.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	g.started <- i
	defer g.inFlight.Add(-1)
	select {
	case <-g.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if i == 13 {
		return 0, errors.New("thirteen")
	}
	return i * i, nil
}

// Results come in order, at most n calls run ahead of the consumer, and
// the consumer never waits for a call it does not need yet.
func TestOrderAndBound(t *testing.T) {
	g := newGate()
	in := []int{5, 1, 4, 2, 3, 0, 6, 7}
	var got []int
	next, stop := pullAll(prefetch.Map(context.Background(), prefetch.Slice(in), 3, g.call))
	defer stop()
	// Three calls start before anything is consumed, and no fourth.
	started := []int{<-g.started, <-g.started, <-g.started}
	slices.Sort(started)
	if !slices.Equal(started, []int{1, 4, 5}) {
		t.Fatalf("started %v, want the first three items", started)
	}
	if len(g.started) != 0 {
		t.Fatal("a fourth call started before a result was consumed")
	}
	close(g.release)
	for {
		v, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if want := []int{25, 1, 16, 4, 9, 0, 36, 49}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if p := g.peak.Load(); p > 3 {
		t.Fatalf("%d calls in flight at once, want at most 3", p)
	}
}

func pullAll(seq func(func(int, error) bool)) (func() (int, error, bool), func()) {
	ch := make(chan struct {
		v   int
		err error
	})
	done := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(ch)
		seq(func(v int, err error) bool {
			select {
			case ch <- struct {
				v   int
				err error
			}{v, err}:
				return true
			case <-done:
				return false
			}
		})
	}()
	next := func() (int, error, bool) {
		r, ok := <-ch
		return r.v, r.err, ok
	}
	return next, func() { once.Do(func() { close(done) }) }
}

// An error of f ends the sequence after the results before it; breaking
// out cancels the calls still running and returns only when they have.
func TestErrorAndBreak(t *testing.T) {
	g := newGate()
	close(g.release)
	var got []int
	var last error
	for v, err := range prefetch.Map(context.Background(), prefetch.Slice([]int{11, 12, 13, 14, 15}), 2, g.call) {
		if err != nil {
			last = err
			break
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{121, 144}) || last == nil || last.Error() != "thirteen" {
		t.Fatalf("got %v, %v", got, last)
	}

	g = newGate()
	n := 0
	for range prefetch.Map(context.Background(), prefetch.Slice([]int{1, 2, 3, 4}), 4, func(ctx context.Context, i int) (int, error) {
		if i == 1 {
			return 1, nil
		}
		return g.call(ctx, i) // blocks until cancelled
	}) {
		n++
		break
	}
	if n != 1 || g.inFlight.Load() != 0 {
		t.Fatalf("after break: %d yielded, %d calls still running", n, g.inFlight.Load())
	}
}

// An error of the input sequence is yielded after the results before it.
func TestInputError(t *testing.T) {
	in := func(yield func(int, error) bool) {
		if yield(2, nil) {
			yield(0, errors.New("page failed"))
		}
	}
	var got []int
	var last error
	for v, err := range prefetch.Map(context.Background(), in, 4, func(_ context.Context, i int) (int, error) { return i * 10, nil }) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{20}) || last == nil {
		t.Fatalf("got %v, %v", got, last)
	}
}
