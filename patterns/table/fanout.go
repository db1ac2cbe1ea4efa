package table

import (
	"container/heap"
	"context"
	"iter"
	"sync"

	"github.com/tablekit/tablekit/keys"
)

// FanOutOptions configures FanOut. A nil *FanOutOptions means defaults.
type FanOutOptions struct {
	// Concurrency is the most requests in flight at once. Default: 8.
	Concurrency int
	// Ordered merges the results in the service's key order (PartitionKey,
	// then RowKey, compared as keys.Compare does), as one query over all the
	// ranges would return them. Default (false): results come as they
	// arrive, each query's results in order.
	Ordered bool
}

// FanOut runs several queries concurrently (typically one per partition or
// key range: the guide's parallel queries across partitions, or the buckets
// of keys.Bucket) and merges their results into one sequence. Each query
// costs one round trip per page, as with Query; at most Concurrency are in
// flight. The first error ends the sequence, and so does the end of ctx
// (with its error); breaking out of the loop stops all queries. Each query's
// Limit applies to that query.
func (t *Table[T]) FanOut(ctx context.Context, queries []*Query, opts *FanOutOptions) iter.Seq2[T, error] {
	if opts == nil {
		opts = &FanOutOptions{}
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = 8
	}
	return func(yield func(T, error) bool) {
		parent := ctx
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait() // after cancel (deferred below, runs first)
		defer cancel()
		slots := make(chan struct{}, conc)
		// Ordered: one channel per query, for the merge to compare heads.
		// Unordered: all queries share one channel.
		streams := make([]chan keyedPage[T], len(queries))
		shared := make(chan keyedPage[T], len(queries))
		for i, q := range queries {
			if q == nil {
				q = &Query{}
			}
			out := shared
			if opts.Ordered {
				streams[i] = make(chan keyedPage[T], 1)
				out = streams[i]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if opts.Ordered {
					defer close(out)
				}
				t.produce(ctx, q, opts.Ordered, slots, out)
			}()
		}
		if !opts.Ordered {
			go func() { wg.Wait(); close(shared) }()
		}
		// Producers stop quietly when the context ends, so a merge can run
		// out of pages early: unless the loop already ended (a break, or an
		// error yielded), the end of a cancelled parent is an error.
		ended := false
		watch := func(v T, err error) bool {
			if err != nil {
				ended = true
			}
			if !yield(v, err) {
				ended = true
				return false
			}
			return true
		}
		if opts.Ordered {
			mergeOrdered(streams, watch)
		} else {
			mergeUnordered(shared, watch)
		}
		if err := parent.Err(); err != nil && !ended {
			var zero T
			yield(zero, &Error{Op: "query", Err: err})
		}
	}
}

// keyedPage is one page of one query's results (with the entities' stored
// keys when asked for, and where the next page starts), or its error.
type keyedPage[T any] struct {
	items []T
	keys  [][2]string
	next  Cursor
	err   error
}

// produce sends q's pages to out, fetching while it holds one of slots.
func (t *Table[T]) produce(ctx context.Context, q *Query, wantKeys bool, slots chan struct{}, out chan<- keyedPage[T]) {
	at := q.Cursor
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		p, ks, err := t.fetch(ctx, q, at, wantKeys)
		<-slots
		select {
		case out <- keyedPage[T]{items: p.Items, keys: ks, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || p.Next == "" {
			return
		}
		at = p.Next
	}
}

func mergeUnordered[T any](pages <-chan keyedPage[T], yield func(T, error) bool) {
	for p := range pages {
		if p.err != nil {
			var zero T
			yield(zero, p.err)
			return
		}
		for _, v := range p.items {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// cursorHead is the current position in one stream, for the ordered merge.
type cursorHead[T any] struct {
	stream int
	page   keyedPage[T]
	i      int
}

type headHeap[T any] []*cursorHead[T]

func (h headHeap[T]) Len() int { return len(h) }
func (h headHeap[T]) Less(i, j int) bool {
	a, b := h[i].page.keys[h[i].i], h[j].page.keys[h[j].i]
	if c := keys.Compare(a[0], b[0]); c != 0 {
		return c < 0
	}
	if c := keys.Compare(a[1], b[1]); c != 0 {
		return c < 0
	}
	return h[i].stream < h[j].stream
}
func (h headHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *headHeap[T]) Push(x any)   { *h = append(*h, x.(*cursorHead[T])) }
func (h *headHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// next advances c to a non-empty page of its stream; false at its end.
func (c *cursorHead[T]) next(streams []chan keyedPage[T]) (bool, error) {
	for c.i >= len(c.page.items) {
		p, ok := <-streams[c.stream]
		if !ok {
			return false, nil
		}
		if p.err != nil {
			return false, p.err
		}
		c.page, c.i = p, 0
	}
	return true, nil
}

func mergeOrdered[T any](streams []chan keyedPage[T], yield func(T, error) bool) {
	fail := func(err error) {
		var zero T
		yield(zero, err)
	}
	h := headHeap[T]{}
	for s := range streams {
		c := &cursorHead[T]{stream: s}
		ok, err := c.next(streams)
		if err != nil {
			fail(err)
			return
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		c := h[0]
		if !yield(c.page.items[c.i], nil) {
			return
		}
		c.i++
		ok, err := c.next(streams)
		switch {
		case err != nil:
			fail(err)
			return
		case ok:
			heap.Fix(&h, 0)
		default:
			heap.Pop(&h)
		}
	}
}
