package transfer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/patterns/table"
)

// Copy copies the entities of the table of src (every row, the patterns'
// reserved rows and properties included) into the table of dst, page by
// page without a local file, across accounts and services: upserts that
// replace, so copying again gives the same table and an interrupted copy
// is resumed by running it again. Each entity is checked against dst's
// profile before it is sent; one dst cannot hold (a RowKey over 255 bytes
// or a property named id on Cosmos DB, an entity too large) is listed in
// Summary.Rejects and never sent, the others are written, and the error
// is ErrRejected. A transaction the service refuses because of one of its
// entities applies nothing; that entity is rejected and the others sent
// again. With opts.Ranges it reads several PartitionKey ranges at once.
// Safe for concurrent use.
//
// Round trips: 1 per page read (at most 1,000 entities) and, per page, a
// transaction per 100 consecutive entities of one partition (more when
// they pass the profile's transaction size), Concurrency at once per
// range, plus the probes of a split.
func Copy(ctx context.Context, src, dst *aztables.Client, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	o := opts.orDefault()
	cp, err := newCopier(src, dst, opts, &o)
	if err != nil {
		return sum, err
	}
	ranges, err := split(ctx, cp.s, o.From, o.To, o.Since, o.Ranges, o.Concurrency)
	if err != nil {
		return sum, err
	}
	err = parallel(ctx, ranges, o.Concurrency, cp.copyRange)
	sum = cp.finish(sum)
	if err != nil {
		return sum, err
	}
	if sum.Rejected > 0 {
		return sum, fmt.Errorf("%w: %d entities (see Summary.Rejects)", ErrRejected, sum.Rejected)
	}
	return sum, nil
}

// copier copies ranges of a table to another.
type copier struct {
	s, d     *table.Table[table.Dynamic]
	o        *Options
	rej      *listed
	carry    *carrier // nil: no blobs
	w        *writer
	progress *tracker
}

// newCopier checks a copy's arguments, before any request.
func newCopier(src, dst *aztables.Client, opts, o *Options) (*copier, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	s, err := source(src)
	if err != nil {
		return nil, err
	}
	d, err := target(dst)
	if err != nil {
		return nil, err
	}
	if err := checkSince(s, o.Since); err != nil {
		return nil, err
	}
	if err := o.bothBlobs(); err != nil {
		return nil, err
	}
	cp := &copier{s: s, d: d, o: o, rej: &listed{max: o.MaxListed}, progress: newTracker(o.Progress, 0)}
	if o.Blobs != nil {
		from, to := o.Blobs.prefixOr(s.Name()), o.TargetBlobs.prefixOr(d.Name())
		if from == to && o.Blobs.Container.URL() == o.TargetBlobs.Container.URL() {
			return nil, fmt.Errorf("%w: Blobs and TargetBlobs are one container with one Prefix (%.40q): the two tables would point at the same blobs, which either Store's Delete or Sweep would delete under the other", ErrInvalid, from)
		}
		cp.carry = newCarrier(o, from, fromTable(o.Blobs), toStore(o.TargetBlobs.Container, to), rereader(s))
	}
	cp.w = &writer{t: d, opts: o, rej: cp.rej}
	return cp, nil
}

// copyRange copies the entities of range r: its pages are read in order
// and cut into groups of one partition's consecutive rows, at most a
// transaction's 100, which Concurrency writers write as they come, so that
// as many transactions are in flight across page boundaries as within a
// page (a page written whole before the next would leave the last
// transactions of each page without company). Memory: a page and
// Concurrency groups.
func (cp *copier) copyRange(ctx context.Context, r span) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type group struct {
		rows  []table.Dynamic
		bytes int64
	}
	groups := make(chan group)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) { once.Do(func() { first = err; cancel() }) }
	for range cp.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range groups {
				err := writeCarried(ctx, cp.carry, cp.w, g.rows)
				if err == nil {
					err = cp.o.step("page")
				}
				if err != nil {
					fail(err)
					continue // drain, so that the reader never blocks
				}
				cp.progress.add(int64(len(g.rows)), g.bytes)
			}
		}()
	}
	send := func(g group) bool {
		select {
		case groups <- g:
			return true
		case <-ctx.Done():
			return false
		}
	}
read:
	for page, err := range cp.s.Pages(ctx, query(r.From, r.To, cp.o.Since, "")) {
		if err != nil {
			fail(wrap(err, "reading %s", cp.s.Name()))
			break
		}
		var line []byte
		var g group
		for i := range page.Items {
			d := &page.Items[i]
			if len(g.rows) == carryBatch || len(g.rows) > 0 && g.rows[0].PartitionKey != d.PartitionKey {
				if !send(g) {
					break read
				}
				g = group{}
			}
			line, _ = appendLine(line[:0], d, true) // for the byte count; a value that cannot encode is rejected by the op
			g.rows, g.bytes = append(g.rows, *d), g.bytes+int64(len(line))
		}
		if len(g.rows) > 0 && !send(g) {
			break
		}
	}
	close(groups)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// finish fills sum from what the copy wrote, rejected and carried.
func (cp *copier) finish(sum Summary) Summary {
	sum = finish(sum, cp.w, cp.rej, cp.carry)
	cp.progress.mu.Lock()
	sum.Bytes = cp.progress.bytes
	cp.progress.mu.Unlock()
	return sum
}

// parallel runs fn for each item, at most concurrency at once, and
// returns the first error (cancelling the others).
func parallel[E any](ctx context.Context, items []E, concurrency int, fn func(context.Context, E) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, concurrency)
	)
	for _, r := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, r); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// scan yields the entities of t in ranges, concurrency ranges at once,
// to fn, one call at a time.
func scan(ctx context.Context, t *table.Table[table.Dynamic], ranges []span, since time.Time, concurrency int, fn func(*table.Dynamic) error) error {
	var mu sync.Mutex
	return parallel(ctx, ranges, concurrency, func(ctx context.Context, r span) error {
		for page, err := range t.Pages(ctx, query(r.From, r.To, since, "")) {
			if err != nil {
				return wrap(err, "reading %s", t.Name())
			}
			mu.Lock()
			for i := range page.Items {
				if err := fn(&page.Items[i]); err != nil {
					mu.Unlock()
					return err
				}
			}
			mu.Unlock()
		}
		return nil
	})
}
