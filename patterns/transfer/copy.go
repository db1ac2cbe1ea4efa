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
// Round trips: 1 per page read (at most 1,000 entities) and, per page,
// ceil(n/100) transactions per partition of its n entities (more when
// they pass the profile's transaction size), plus the probes of a split.
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
		cp.carry = newCarrier(o, cp.rej, o.Blobs.prefixOr(s.Name()), fromTable(o.Blobs),
			toStore(o.TargetBlobs.Container, o.TargetBlobs.prefixOr(d.Name())), rereader(s), false)
	}
	cp.w = &writer{t: d, opts: o, rej: cp.rej}
	return cp, nil
}

// copyRange copies the entities of range r, one page written while the
// next is read (and the one after fetched ahead by Pages): at most one
// write in flight per range.
func (cp *copier) copyRange(ctx context.Context, r span) error {
	var pending chan error
	wait := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending
		pending = nil
		return err
	}
	for page, err := range cp.s.Pages(ctx, query(r.From, r.To, cp.o.Since, "")) {
		if err != nil {
			_ = wait()
			return wrap(err, "reading %s", cp.s.Name())
		}
		items, err := cp.carry.carry(ctx, page.Items)
		if err != nil {
			_ = wait()
			return err
		}
		var n int64
		var line []byte
		for i := range items {
			line, _ = appendLine(line[:0], &items[i], true) // for the byte count; a value that cannot encode is rejected by the op
			n += int64(len(line))
		}
		if err := wait(); err != nil {
			return err
		}
		done := make(chan error, 1)
		pending = done
		go func(items []table.Dynamic) {
			err := cp.w.write(ctx, items)
			if err == nil {
				err = cp.o.step("page")
			}
			if err == nil {
				cp.progress.add(int64(len(items)), n)
			}
			done <- err
		}(items)
	}
	return wait()
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
