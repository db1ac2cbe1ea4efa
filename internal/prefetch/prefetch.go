// Package prefetch runs a function over the items of a sequence with
// bounded concurrency and yields the results lazily, in the sequence's
// order: the blob reads of patterns/largeentity (an entity's values, a
// range of entities) and patterns/bloblog (the blobs of a time range).
package prefetch

import (
	"context"
	"iter"
	"sync"
)

// Map yields f(item) for every item of in, in in's order, with at most n
// calls of f running or finished but not yet yielded at any time (n < 1
// means 1). Calls start as soon as a slot is free, ahead of the consumer,
// so the consumer waits only for results it needs. The first error (of in
// or of f) is yielded and ends the sequence; so does breaking out of the
// loop. Either way the context given to the running calls is cancelled
// and Map returns only after every call has returned.
func Map[In, Out any](ctx context.Context, in iter.Seq2[In, error], n int, f func(context.Context, In) (Out, error)) iter.Seq2[Out, error] {
	n = max(n, 1)
	type result struct {
		v   Out
		err error
	}
	return func(yield func(Out, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait() // after cancel (deferred below, runs first)
		defer cancel()
		slots := make(chan struct{}, n)
		futures := make(chan chan result, n+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(futures)
			for item, err := range in {
				fut := make(chan result, 1)
				if err != nil {
					fut <- result{err: err}
					futures <- fut
					return
				}
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				futures <- fut
				wg.Add(1)
				go func() {
					defer wg.Done()
					v, err := f(ctx, item)
					fut <- result{v, err}
				}()
			}
		}()
		for fut := range futures {
			r := <-fut
			if r.err == nil {
				<-slots
			}
			if !yield(r.v, r.err) || r.err != nil {
				return
			}
		}
	}
}

// Slice is a sequence of the items of s, for Map.
func Slice[In any](s []In) iter.Seq2[In, error] {
	return func(yield func(In, error) bool) {
		for _, v := range s {
			if !yield(v, nil) {
				return
			}
		}
	}
}
