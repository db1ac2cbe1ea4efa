package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/largerows"

	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/largeentity"
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
	// PageSize is the most copies read per round trip, 1 to
	// table.MaxPageSize (another is ErrInvalid, nothing sent). Default (0):
	// 1,000.
	PageSize int
	// Select projects the copies read by Find and Range to these
	// properties (server-side, $select): the other fields of each Value
	// stay zero. It does not apply to fetched primaries.
	Select []string
}

// Lookup finds the entity of partition pk whose unique index has value,
// as T holds it (see Index.On: a value of the property's type, or a []any
// of one value per property; another type is ErrInvalid naming the index
// and the type wanted, nothing sent): 1 point query of the copy, +1 to fetch the primary
// (KeysOnly or Fetch). The copy is read from pk's index partition (pk
// itself, or Index.Partition(pk)); in a partition shared by several
// primary partitions (an organisation-wide index), pk "" finds the value
// in any of them. table.ErrNotFound when no entity (of pk) has the value;
// ErrCorrupt when the copy is not one the index could have written.
func (s *Store[T]) Lookup(ctx context.Context, pk, index string, value any, opts *LookupOptions) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opLookup, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	ix, err := s.indexNamed(index)
	if err != nil {
		return Entity[T]{}, err
	}
	if !ix.Unique {
		return Entity[T]{}, fmt.Errorf("%w: index %q is not unique: use Find", ErrInvalid, index)
	}
	parts, ok, err := ix.partsOf(value, false)
	if err != nil {
		return Entity[T]{}, err
	}
	if !ok {
		return Entity[T]{}, fmt.Errorf("%w: index %q: no entity can have value %v", table.ErrNotFound, index, value)
	}
	cpk, lo, _, err := s.bounds(ix, pk, parts, parts)
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
		return Entity[T]{}, fmt.Errorf("%w: index %q: no entity of partition %q has value %q", table.ErrNotFound, index, pk, value)
	case !s.fetches(ix, opts):
		return e, nil
	}
	return s.get(ctx, e.PartitionKey, e.RowKey, nil) // keys from a checked copy
}

// inScope reports whether e, read from a copy, is an entity of partition
// pk ("": of any partition). Only a shared index partition holds copies
// of other partitions (refOf checked the rest).
func inScope[T any](pk string, e Entity[T]) bool {
	return pk == "" || e.PartitionKey == pk
}

// Find returns the entities of partition pk whose index value is value,
// as T holds it (see Index.On: a value of the property's type, or a []any
// of one value per property, or of the first few, for the entities whose
// first properties have them; another type is ErrInvalid naming the index
// and the type wanted, nothing sent), in index order: 1 range query per page of copies, plus the fetches. The copies
// are read from pk's index partition, as Lookup's; in a partition shared
// by several primary partitions the copies of the others are read and
// skipped, and pk "" returns the entities of all of them. A copy the index
// could not have written ends the sequence with ErrCorrupt.
func (s *Store[T]) Find(ctx context.Context, pk, index string, value any, opts *LookupOptions) iter.Seq2[Entity[T], error] {
	return obs.Seq2(s.obs, ctx, opFind, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entity[T], error] {
		return s.rangeOf(ctx, pk, index, value, value, opts)
	})
}

// Range returns the entities of partition pk whose index value is from
// from to to, both included, each given as Find's value (for a compound
// value, a prefix includes every value that starts with it: to
// []any{"Jones"} includes ["Jones", "Smith"]), in index order: 1 range query per page of copies, plus the
// fetches. pk is as for Find. On a service whose queries return rows in
// no key order (Cosmos DB) the copies of the range are read whole and
// sorted before the first entity is returned (same round trips; memory
// for the whole range, not a page); Find likewise.
func (s *Store[T]) Range(ctx context.Context, pk, index string, from, to any, opts *LookupOptions) iter.Seq2[Entity[T], error] {
	return obs.Seq2(s.obs, ctx, opRange, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entity[T], error] {
		return s.rangeOf(ctx, pk, index, from, to, opts)
	})
}

// rangeOf is Range, without its span.
func (s *Store[T]) rangeOf(ctx context.Context, pk, index string, from, to any, opts *LookupOptions) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		ix, q, err := s.rangeQuery(pk, index, from, to, "", opts)
		if err != nil || q == nil {
			if err != nil {
				yield(Entity[T]{}, err)
			}
			return
		}
		// In index order on every service: an ordered fan-out of one query
		// streams pages on Table Storage and, on a service without key
		// order (Cosmos DB), reads the range whole and sorts it first.
		rows := s.copyTable(ix).FanOut(ctx, []*table.Query{q}, &table.FanOutOptions{Ordered: true})
		for e, err := range s.fromCopies(ctx, pk, ix, opts, rows) {
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// RangePage returns one page of Range (Find's too, with from and to the
// value): the entities of one page of copies, read from cursor ("" for the
// first page), and the cursor of the next page (Next, empty at the end).
// The cursor is a [table.Cursor]: a string to keep anywhere and resume
// from in another process, with the same pk, index, from, to and Select;
// plain, it shows the next copy's RowKey (an indexed value), sealed with
// the table's CursorKey nothing (see the package documentation, "Trust").
// 1 round trip for the page (up to opts.PageSize copies), + the fetches
// (KeysOnly, or Fetch: 1 per entity, in parallel). A page may be short, or
// empty, with a Next. On a service whose queries return rows in no key
// order (Cosmos DB) a page's entities come in the service's order: every
// entity exactly once across the pages, not in index order (Range sorts).
func (s *Store[T]) RangePage(ctx context.Context, pk, index string, from, to any, cursor table.Cursor, opts *LookupOptions) (_ table.Page[Entity[T]], err error) {
	ctx, sp := s.obs.Start(ctx, opRangePage, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	ix, q, err := s.rangeQuery(pk, index, from, to, cursor, opts)
	if err != nil || q == nil {
		return table.Page[Entity[T]]{}, err
	}
	rows, err := s.copyTable(ix).QueryPage(ctx, q)
	if err != nil {
		return table.Page[Entity[T]]{}, invalid.Mark(ErrInvalid, err)
	}
	page := table.Page[Entity[T]]{Next: rows.Next}
	for e, err := range s.fromCopies(ctx, pk, ix, opts, prefetch.Slice(rows.Items)) {
		if err != nil {
			return table.Page[Entity[T]]{}, err
		}
		page.Items = append(page.Items, e)
	}
	return page, nil
}

// rangeQuery is the query of the copies of Range and RangePage; nil
// when no entity can have a value in the range (Key gives no copy for a
// bound).
func (s *Store[T]) rangeQuery(pk, index string, from, to any, cursor table.Cursor, opts *LookupOptions) (*Index[T], *table.Query, error) {
	ix, err := s.indexNamed(index)
	if err != nil {
		return nil, nil, err
	}
	lo, okLo, err := ix.partsOf(from, true)
	if err != nil {
		return nil, nil, err
	}
	hi, okHi, err := ix.partsOf(to, true)
	if err != nil || !okLo || !okHi {
		return nil, nil, err
	}
	cpk, loKey, hiKey, err := s.bounds(ix, pk, lo, hi)
	if err != nil {
		return nil, nil, err
	}
	q := &table.Query{Filter: table.And(table.PartitionKey(cpk), table.RowKeyRange(loKey, hiKey)), Cursor: cursor}
	if opts != nil {
		if err := checkPageSize(opts.PageSize); err != nil {
			return nil, nil, err
		}
		q.PageSize = opts.PageSize
		if len(opts.Select) > 0 {
			q.Select = append(slices.Clone(opts.Select), RefProperty)
		}
	}
	return ix, q, nil
}

// fromCopies yields the entities of partition pk ("" for any) that rows,
// copies of index ix, name: the copies themselves, or the primaries
// fetched in parallel and yielded in index order when ix or opts asks for
// them (one deleted since its copy was read is left out). A copy ix could
// not have written ends the sequence with ErrCorrupt.
func (s *Store[T]) fromCopies(ctx context.Context, pk string, ix *Index[T], opts *LookupOptions, rows iter.Seq2[table.Dynamic, error]) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		copies := func(yield func(Entity[T], error) bool) {
			for d, err := range rows {
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
		fetch := func(ctx context.Context, c Entity[T]) (*Entity[T], error) {
			e, err := s.get(ctx, c.PartitionKey, c.RowKey, nil) // keys from a checked copy
			switch {
			case errors.Is(err, table.ErrNotFound):
				return nil, nil
			case err != nil:
				return nil, fmt.Errorf("secondaryindex: fetching %q/%q: %w", c.PartitionKey, c.RowKey, err)
			}
			return &e, nil
		}
		for e, err := range prefetch.Map(ctx, copies, concurrency(opts), fetch) {
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

func concurrency(opts *LookupOptions) int {
	if opts != nil && opts.Concurrency > 0 {
		return opts.Concurrency
	}
	return 8
}

// ListOptions configures List and ListPage. A nil *ListOptions means
// defaults.
type ListOptions struct {
	// PageSize is the most entities read per round trip, 1 to
	// table.MaxPageSize (another is ErrInvalid, nothing sent). Default (0):
	// 1,000.
	PageSize int
	// Select projects the entities to these properties (server-side,
	// $select): the other fields of each Value stay zero, and a large
	// value (Options.Large) that is not selected is not read. Default:
	// every property.
	Select []string
	// Concurrency bounds the parallel reads of large values. Default: 8.
	Concurrency int
}

// List returns the entities of partition pk, in id order, each as Get
// returns it: keys as T has them (RowKey the id, never the primary row's
// "empid!..." key), the primary's ETag, the value with its large values
// (Options.Large, read in parallel ahead of the loop, Concurrency at a
// time; only those selected with opts.Select). 1 range query per page of
// up to opts.PageSize entities, + 1 read per large value; on a service
// whose queries return rows in no key order (Cosmos DB) the partition's
// primaries are read whole and sorted before the first is returned. Other
// rows of the partition (copies, other Stores' and patterns' rows) are
// not read.
func (s *Store[T]) List(ctx context.Context, pk string, opts *ListOptions) iter.Seq2[Entity[T], error] {
	return obs.Seq2(s.obs, ctx, opList, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entity[T], error] {
		return s.list(ctx, pk, opts)
	})
}

// list is List, without its span.
func (s *Store[T]) list(ctx context.Context, pk string, opts *ListOptions) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		q, conc, err := s.listQuery(pk, "", opts)
		if err != nil {
			yield(Entity[T]{}, err)
			return
		}
		// In id order on every service: an ordered fan-out of one query
		// streams pages on Table Storage and, on a service without key
		// order (Cosmos DB), reads the partition's primaries whole and
		// sorts them first.
		rows := s.tbl.FanOut(ctx, []*table.Query{q}, &table.FanOutOptions{Ordered: true})
		for e, err := range prefetch.Map(ctx, rows, conc, s.listed(q.Select)) {
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

// ListPage returns one page of List, from cursor ("" for the first page),
// and the cursor of the next page (Next, empty at the end): a
// [table.Cursor], a string to keep anywhere and resume from in another
// process, with the same pk and Select; plain, it shows the next entity's
// keys, sealed with the table's CursorKey nothing (see the package
// documentation, "Trust"). 1 round trip for the page (up to opts.PageSize
// entities), + 1 read per large value, Concurrency at a time. A page may
// be short, or empty, with a Next. On a service whose queries return rows
// in no key order (Cosmos DB) a page's entities come in the service's
// order: every entity exactly once across the pages, not in id order (List
// sorts).
func (s *Store[T]) ListPage(ctx context.Context, pk string, cursor table.Cursor, opts *ListOptions) (_ table.Page[Entity[T]], err error) {
	ctx, sp := s.obs.Start(ctx, opListPage, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	q, conc, err := s.listQuery(pk, cursor, opts)
	if err != nil {
		return table.Page[Entity[T]]{}, err
	}
	rows, err := s.tbl.QueryPage(ctx, q)
	if err != nil {
		return table.Page[Entity[T]]{}, invalid.Mark(ErrInvalid, err)
	}
	page := table.Page[Entity[T]]{Next: rows.Next}
	for e, err := range prefetch.Map(ctx, prefetch.Slice(rows.Items), conc, s.listed(q.Select)) {
		if err != nil {
			return table.Page[Entity[T]]{}, err
		}
		if e != nil {
			page.Items = append(page.Items, *e)
		}
	}
	return page, nil
}

// listQuery is the query of List and ListPage: partition pk's primary
// rows, projected on the selection with the pointers of the large values
// it names.
func (s *Store[T]) listQuery(pk string, cursor table.Cursor, opts *ListOptions) (*table.Query, int, error) {
	if err := fieldmodel.CheckKeys(pk, ""); err != nil { // empty or reserved PartitionKeys too
		return nil, 0, fmt.Errorf("secondaryindex: list: %w", invalid.Mark(ErrInvalid, err))
	}
	lo, hi := keys.PrefixRange(s.primary)
	q := &table.Query{Filter: table.And(table.PartitionKey(pk), table.RowKeyRange(lo, hi)), Cursor: cursor}
	conc := 8
	if opts != nil {
		if err := checkPageSize(opts.PageSize); err != nil {
			return nil, 0, err
		}
		q.PageSize = opts.PageSize
		if opts.Select != nil {
			q.Select = slices.Clone(opts.Select)
			for _, name := range opts.Select {
				if s.large != nil && s.large.Offloads(name) {
					q.Select = append(q.Select, largeentity.PointerPrefix+name)
				}
			}
		}
		if opts.Concurrency > 0 {
			conc = opts.Concurrency
		}
	}
	return q, conc, nil
}

// listed decodes a primary row read by a query and reads its large
// values; when they changed meanwhile, it reads the entity again
// (projected on sel), nil when it was deleted since.
func (s *Store[T]) listed(sel []string) func(context.Context, table.Dynamic) (*Entity[T], error) {
	return func(ctx context.Context, d table.Dynamic) (*Entity[T], error) {
		e, blobs, err := s.decode(ctx, d)
		if err != nil || blobs == nil {
			return &e, err
		}
		err = s.large.Fetch(ctx, &e.Value, blobs)
		if errors.Is(err, largerows.ErrChanged) {
			e, err = s.get(ctx, e.PartitionKey, e.RowKey, sel)
			if errors.Is(err, table.ErrNotFound) {
				return nil, nil
			}
		}
		if err != nil {
			return nil, err
		}
		return &e, nil
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
// the copy's value. It returns the primary as read (without its large
// values, Options.Large). 1 round trip.
func (s *Store[T]) Verify(ctx context.Context, index string, e Entity[T]) (_ Entity[T], _ bool, err error) {
	ctx, sp := s.obs.Start(ctx, opVerify, s.tbl.Name(), e.PartitionKey)
	defer func() { sp.End(err) }()
	ix, err := s.indexNamed(index)
	if err != nil {
		return Entity[T]{}, false, err
	}
	if err := s.checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return Entity[T]{}, false, err
	}
	cur, _, err := s.read(ctx, e.PartitionKey, e.RowKey)
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

// checkPageSize refuses a page size the service cannot give.
func checkPageSize(n int) error {
	if n < 0 || n > table.MaxPageSize {
		return fmt.Errorf("%w: PageSize %d: 1 to %d, or 0 for the default", ErrInvalid, n, table.MaxPageSize)
	}
	return nil
}
