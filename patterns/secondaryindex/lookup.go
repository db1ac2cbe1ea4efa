package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// LookupOptions configures a lookup. A nil *LookupOptions means defaults.
type LookupOptions struct {
	// Fetch reads each primary instead of returning what the copy holds:
	// +1 point query per entity (in parallel, at most Concurrency at once,
	// results still in index order; an entity deleted since its copy was
	// read is left out). KeysOnly indexes always fetch.
	Fetch bool
	// Concurrency bounds the parallel fetches. Default: 8.
	Concurrency int
	// PageSize is the most copies read per round trip. Default: 1000.
	PageSize int
	// Select projects the copies read by Find and Range to these
	// properties (server-side, $select): the other fields of each Value
	// stay zero. It does not apply to fetched primaries.
	Select []string
}

// Lookup finds the entity of partition pk whose unique index has value
// (its parts): 1 point query of the copy, +1 to fetch the primary
// (KeysOnly or Fetch). The copy is read from pk's index partition (pk
// itself, or Index.Partition(pk)); in a partition shared by several
// primary partitions (an organisation-wide index), pk "" finds the value
// in any of them. ErrNotFound when no entity (of pk) has the value;
// ErrCorrupt when the copy is not one the index could have written.
func (s *Store[T]) Lookup(ctx context.Context, pk, index string, value []string, opts *LookupOptions) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opLookup, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	ix, err := s.indexNamed(index)
	if err != nil {
		return Entity[T]{}, err
	}
	if !ix.Unique {
		return Entity[T]{}, fmt.Errorf("%w: index %q is not unique: use Find", ErrInvalid, index)
	}
	cpk, lo, _, err := s.bounds(ix, pk, value, value)
	if err != nil {
		return Entity[T]{}, err
	}
	d, err := s.copyTable(ix).Get(ctx, cpk, lo, nil)
	if err != nil {
		return Entity[T]{}, err
	}
	e, err := s.decodeCopy(ix, d.Value)
	switch {
	case err != nil:
		return Entity[T]{}, err
	case !inScope(pk, e):
		return Entity[T]{}, fmt.Errorf("%w: index %q: no entity of partition %q has value %q", ErrNotFound, index, pk, value)
	case !s.fetches(ix, opts):
		return e, nil
	}
	return s.Get(ctx, e.PartitionKey, e.RowKey)
}

// inScope reports whether e, read from a copy, is an entity of partition
// pk ("": of any partition). Only a shared index partition holds copies
// of other partitions (refOf checked the rest).
func inScope[T any](pk string, e Entity[T]) bool {
	return pk == "" || e.PartitionKey == pk
}

// Find returns the entities of partition pk whose index value starts with
// value (all its parts, or the first few of a compound value), in index
// order: 1 range query per page of copies, plus the fetches. The copies
// are read from pk's index partition, as Lookup's; in a partition shared
// by several primary partitions the copies of the others are read and
// skipped, and pk "" returns the entities of all of them. A copy the index
// could not have written ends the sequence with ErrCorrupt.
func (s *Store[T]) Find(ctx context.Context, pk, index string, value []string, opts *LookupOptions) iter.Seq2[Entity[T], error] {
	return obs.Seq2(s.obs, ctx, opFind, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entity[T], error] {
		return s.rangeOf(ctx, pk, index, value, value, opts)
	})
}

// Range returns the entities of partition pk whose index value is from
// from to to, both included (as prefixes: to ["Jones"] includes "Jones",
// "Smith"]), in index order: 1 range query per page of copies, plus the
// fetches. pk is as for Find.
func (s *Store[T]) Range(ctx context.Context, pk, index string, from, to []string, opts *LookupOptions) iter.Seq2[Entity[T], error] {
	return obs.Seq2(s.obs, ctx, opRange, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entity[T], error] {
		return s.rangeOf(ctx, pk, index, from, to, opts)
	})
}

// rangeOf is Range, without its span.
func (s *Store[T]) rangeOf(ctx context.Context, pk, index string, from, to []string, opts *LookupOptions) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		ix, err := s.indexNamed(index)
		if err != nil {
			yield(Entity[T]{}, err)
			return
		}
		cpk, lo, hi, err := s.bounds(ix, pk, from, to)
		if err != nil {
			yield(Entity[T]{}, err)
			return
		}
		var o LookupOptions
		if opts != nil {
			o = *opts
		}
		f := table.And(table.PartitionKey(cpk), table.RowKeyRange(lo, hi))
		var sel []string
		if len(o.Select) > 0 {
			sel = append(slices.Clone(o.Select), RefProperty)
		}
		copies := func(yield func(Entity[T], error) bool) {
			for d, err := range s.copyTable(ix).Query(ctx, &table.Query{Filter: f, PageSize: o.PageSize, Select: sel}) {
				var e Entity[T]
				if err == nil {
					e, err = s.decodeCopy(ix, d)
				}
				if err == nil && !inScope(pk, e) {
					continue
				}
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
		if !s.fetches(ix, opts) {
			for e, err := range copies {
				if !yield(e, err) || err != nil {
					return
				}
			}
			return
		}
		// The primaries, read ahead in parallel and yielded in index order;
		// nil for one deleted since its copy was read (left out).
		fetch := func(ctx context.Context, c Entity[T]) (*Entity[T], error) {
			e, err := s.Get(ctx, c.PartitionKey, c.RowKey)
			switch {
			case errors.Is(err, table.ErrNotFound):
				return nil, nil
			case err != nil:
				return nil, fmt.Errorf("secondaryindex: fetching %q/%q: %w", c.PartitionKey, c.RowKey, err)
			}
			return &e, nil
		}
		conc := o.Concurrency
		if conc <= 0 {
			conc = 8
		}
		for e, err := range prefetch.Map(ctx, copies, conc, fetch) {
			if err != nil {
				yield(Entity[T]{}, err)
				return
			}
			if e != nil && !yield(*e, nil) {
				return
			}
		}
	}
}

// bounds returns the copies' partition and the RowKey range of values from
// to to (inclusive, as prefixes).
func (s *Store[T]) bounds(ix *Index[T], pk string, from, to []string) (cpk, lo, hi string, err error) {
	cpk = copyPartition(ix, pk)
	if len(from) == 0 || len(to) == 0 {
		return "", "", "", fmt.Errorf("%w: index %q: a lookup needs at least one value part", ErrInvalid, ix.Name)
	}
	lo = keys.Join(append([]string{ix.Name}, from...)...)
	_, hi = keys.PrefixRange(append([]string{ix.Name}, to...)...)
	for _, k := range []string{cpk, lo} {
		if err := keys.Validate(k); err != nil {
			return "", "", "", fmt.Errorf("%w: index %q: %w", ErrInvalid, ix.Name, err)
		}
	}
	return cpk, lo, hi, nil
}

func (s *Store[T]) fetches(ix *Index[T], opts *LookupOptions) bool {
	return ix.Holds == KeysOnly || opts != nil && opts.Fetch
}

// Verify reads the primary of e (a lookup's result read from a copy) and
// reports whether the copy was current: the primary exists and still has
// the copy's value. It returns the primary as read. 1 round trip.
func (s *Store[T]) Verify(ctx context.Context, index string, e Entity[T]) (_ Entity[T], _ bool, err error) {
	ctx, sp := s.obs.Start(ctx, opVerify, s.tbl.Name(), e.PartitionKey)
	defer func() { sp.End(err) }()
	ix, err := s.indexNamed(index)
	if err != nil {
		return Entity[T]{}, false, err
	}
	cur, err := s.Get(ctx, e.PartitionKey, e.RowKey)
	if err != nil {
		if errors.Is(err, table.ErrNotFound) {
			return Entity[T]{}, false, nil
		}
		return Entity[T]{}, false, err
	}
	enc, err := s.encode(cur.Value)
	if err != nil {
		return cur, false, err
	}
	r, ok := enc.copies[ix.Name]
	return cur, ok && e.copyKey != "" && r.rk == e.copyKey, nil
}
