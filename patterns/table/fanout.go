package table

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/tablekit/tablekit/internal/fanout"

	"github.com/tablekit/tablekit/keys"
)

// FanOutOptions configures FanOut. A nil *FanOutOptions
// means defaults.
type FanOutOptions struct {
	// Concurrency is the most requests in flight at once. Default: 8.
	Concurrency int
	// Ordered merges the results in the service's key order (PartitionKey,
	// then RowKey, compared as keys.Compare does), as one query over all the
	// ranges would return them; entities with the same keys (from different
	// tables) come in the order of their queries. Default (false): results
	// come as they arrive, each query's results in the service's order. On
	// a service whose results come in no key order (Profile.Sorted false:
	// Cosmos DB), each query is read whole, without its Limit, and sorted
	// before the merge, and then cut to its Limit: right, at the cost of
	// the whole range in round trips and memory.
	Ordered bool
	// ByRowKey merges by RowKey first, then PartitionKey (then query
	// order): for one logical partition spread over several partitions
	// (the bucket partitions of patterns/buckets or of a bucketed
	// patterns/logtail log), whose rows belong in one RowKey order as if
	// they shared a partition. It implies Ordered.
	ByRowKey bool
}

// source is one query over one table. A nil Query reads the whole table.
type source[T any] struct {
	Table *Table[T]
	Query *Query
}

// FanOut runs several queries concurrently (typically one per partition or
// key range: the guide's parallel queries across partitions, or the buckets
// of keys.Bucket) and merges their results into one sequence. Each query
// costs one round trip per page, as with Query; at most Concurrency are in
// flight. The first error ends the sequence, and so does the end of ctx
// (with its error); breaking out of the loop stops all queries. Each query's
// Limit applies to that query.
func (t *Table[T]) FanOut(ctx context.Context, queries []*Query, opts *FanOutOptions) iter.Seq2[T, error] {
	srcs := make([]source[T], len(queries))
	for i, q := range queries {
		srcs[i] = source[T]{Table: t, Query: q}
	}
	ordered := opts != nil && (opts.Ordered || opts.ByRowKey)
	return func(yield func(T, error) bool) {
		fanOut(ctx, srcs, opts, ordered, func(v *T, _ [3]string, err error) bool {
			if err != nil {
				var zero T
				return yield(zero, err)
			}
			return yield(*v, nil)
		})
	}
}

func init() {
	fanout.Register(func(t any) any { return t.(merger).mergeFunc() })
}

// merger is a *Table[T] of any T, for internal/fanout.
type merger interface{ mergeFunc() any }

// mergeFunc returns fanOutEntities for T, over parallel slices of tables
// and queries (internal/keycursor.FanOut).
func (t *Table[T]) mergeFunc() any {
	return func(ctx context.Context, tables []*Table[T], queries []*Query, opts *FanOutOptions) iter.Seq2[Entity[T], error] {
		srcs := make([]source[T], len(tables))
		for i := range tables {
			srcs[i] = source[T]{Table: tables[i], Query: queries[i]}
		}
		return fanOutEntities(ctx, srcs, opts)
	}
}

// fanOutEntities is FanOut over queries of one or several tables of the
// same type (a table per period, as patterns/rotation keeps), yielding each
// entity in its envelope (Entity: the keys it is stored under, its ETag).
// The sources' tables may belong to different clients; costs, concurrency,
// order and errors are those of FanOut. A source without a Table ends the
// sequence with an ErrInvalidFilter before any request.
func fanOutEntities[T any](ctx context.Context, sources []source[T], opts *FanOutOptions) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		for i, s := range sources {
			if s.Table == nil {
				yield(Entity[T]{}, &Error{Op: "query", Err: fmt.Errorf("%w: source %d has no table", ErrInvalidFilter, i)})
				return
			}
		}
		fanOut(ctx, sources, opts, true, func(v *T, k [3]string, err error) bool {
			if err != nil {
				return yield(Entity[T]{}, err)
			}
			return yield(entityOf(k, *v), nil)
		})
	}
}

// fanOut runs the sources' queries and passes their entities (with their
// keys when wantKeys) to yield, merged as opts asks.
func fanOut[T any](ctx context.Context, srcs []source[T], opts *FanOutOptions, wantKeys bool, yield func(*T, [3]string, error) bool) {
	if opts == nil {
		opts = &FanOutOptions{}
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = 8
	}
	ordered := opts.Ordered || opts.ByRowKey
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred below, runs first)
	defer cancel()
	slots := make(chan struct{}, conc)
	// Ordered: one channel per query, for the merge to compare heads.
	// Unordered: all queries share one channel.
	streams := make([]chan keyedPage[T], len(srcs))
	shared := make(chan keyedPage[T], len(srcs))
	for i, s := range srcs {
		q := s.Query
		if q == nil {
			q = &Query{}
		}
		out := shared
		if ordered {
			streams[i] = make(chan keyedPage[T], 1)
			out = streams[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ordered {
				defer close(out)
			}
			if ordered && !s.Table.profile.Sorted {
				s.Table.produceSorted(ctx, q, opts.ByRowKey, slots, out)
				return
			}
			s.Table.produce(ctx, q, wantKeys, slots, out)
		}()
	}
	if !ordered {
		go func() { wg.Wait(); close(shared) }()
	}
	// Producers stop quietly when the context ends, so a merge can run
	// out of pages early: unless the loop already ended (a break, or an
	// error yielded), the end of a cancelled parent is an error.
	ended := false
	watch := func(v *T, k [3]string, err error) bool {
		if err != nil {
			ended = true
		}
		if !yield(v, k, err) {
			ended = true
			return false
		}
		return true
	}
	if ordered {
		mergeOrdered(streams, opts.ByRowKey, watch)
	} else {
		mergeUnordered(shared, watch)
	}
	if err := parent.Err(); err != nil && !ended {
		yield(nil, [3]string{}, &Error{Op: "query", Err: err})
	}
}

// keyedPage is one page of one query's results (with the entities' stored
// keys when asked for, and where the next page starts), or its error.
type keyedPage[T any] struct {
	items []T
	keys  [][3]string
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

// produceSorted is produce for a service whose results come in no defined
// order (Profile.Sorted false): it reads every page of q without its Limit,
// sorts the entities by key as an ordered merge expects them (RowKey first
// when byRowKey), keeps the first Limit, and sends them as one page. The
// merge is then right at the cost of reading the whole range into memory.
func (t *Table[T]) produceSorted(ctx context.Context, q *Query, byRowKey bool, slots chan struct{}, out chan<- keyedPage[T]) {
	all := *q
	all.Limit = 0
	pages := make(chan keyedPage[T], 1)
	go func() { defer close(pages); t.produce(ctx, &all, true, slots, pages) }()
	var page keyedPage[T]
	for p := range pages {
		if p.err != nil {
			page = p
			break
		}
		page.items = append(page.items, p.items...)
		page.keys = append(page.keys, p.keys...)
	}
	for range pages { // drain after an error: produce stops at it
	}
	if page.err == nil {
		sortByKeys(&page, byRowKey)
		if q.Limit > 0 && len(page.items) > q.Limit {
			page.items, page.keys = page.items[:q.Limit], page.keys[:q.Limit]
		}
	}
	select {
	case out <- page:
	case <-ctx.Done():
	}
}

// sortByKeys sorts a page's entities by PartitionKey then RowKey (RowKey
// first when byRowKey), as Table Storage returns them.
func sortByKeys[T any](p *keyedPage[T], byRowKey bool) {
	first, second := 0, 1
	if byRowKey {
		first, second = 1, 0
	}
	idx := make([]int, len(p.items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ka, kb := p.keys[a], p.keys[b]
		return cmp.Or(keys.Compare(ka[first], kb[first]), keys.Compare(ka[second], kb[second]))
	})
	items, ks := make([]T, len(idx)), make([][3]string, len(idx))
	for i, j := range idx {
		items[i], ks[i] = p.items[j], p.keys[j]
	}
	p.items, p.keys = items, ks
}

func mergeUnordered[T any](pages <-chan keyedPage[T], yield func(*T, [3]string, error) bool) {
	for p := range pages {
		if p.err != nil {
			yield(nil, [3]string{}, p.err)
			return
		}
		for i := range p.items {
			var k [3]string
			if p.keys != nil {
				k = p.keys[i]
			}
			if !yield(&p.items[i], k, nil) {
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

// headHeap orders the streams' heads by their keys: PartitionKey then
// RowKey, or RowKey then PartitionKey (byRowKey); ties by stream.
type headHeap[T any] struct {
	heads    []*cursorHead[T]
	byRowKey bool
}

func (h *headHeap[T]) Len() int { return len(h.heads) }
func (h *headHeap[T]) Less(i, j int) bool {
	a, b := h.heads[i].page.keys[h.heads[i].i], h.heads[j].page.keys[h.heads[j].i]
	first, second := 0, 1
	if h.byRowKey {
		first, second = 1, 0
	}
	if c := keys.Compare(a[first], b[first]); c != 0 {
		return c < 0
	}
	if c := keys.Compare(a[second], b[second]); c != 0 {
		return c < 0
	}
	return h.heads[i].stream < h.heads[j].stream
}
func (h *headHeap[T]) Swap(i, j int) { h.heads[i], h.heads[j] = h.heads[j], h.heads[i] }
func (h *headHeap[T]) Push(x any)    { h.heads = append(h.heads, x.(*cursorHead[T])) }
func (h *headHeap[T]) Pop() any {
	old := h.heads
	x := old[len(old)-1]
	h.heads = old[:len(old)-1]
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

func mergeOrdered[T any](streams []chan keyedPage[T], byRowKey bool, yield func(*T, [3]string, error) bool) {
	fail := func(err error) { yield(nil, [3]string{}, err) }
	h := &headHeap[T]{byRowKey: byRowKey}
	for s := range streams {
		c := &cursorHead[T]{stream: s}
		ok, err := c.next(streams)
		if err != nil {
			fail(err)
			return
		}
		if ok {
			h.heads = append(h.heads, c)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		c := h.heads[0]
		if !yield(&c.page.items[c.i], c.page.keys[c.i], nil) {
			return
		}
		c.i++
		ok, err := c.next(streams)
		switch {
		case err != nil:
			fail(err)
			return
		case ok:
			heap.Fix(h, 0)
		default:
			heap.Pop(h)
		}
	}
}
