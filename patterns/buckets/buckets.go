package buckets

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/tablekit/tablekit/internal/cursorseal"
	"github.com/tablekit/tablekit/internal/keycursor"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// MaxBuckets bounds Options.Buckets and the counts in Options.Earlier:
// bucket numbers are three digits in partition names.
const MaxBuckets = 1000

// DefaultBuckets is Options.Buckets when it is not set.
const DefaultBuckets = 8

// ErrInvalid is the sentinel for a configuration or request a Spread
// rejects before the network: a nil table, a bucket count out of range, a
// Bucket function answering outside [0, n), a key range the wrong way
// round, an Upsert with earlier counts, a value the table package refuses
// to write, invalid keys (which also match [table.ErrInvalidKey]): an
// empty logical PartitionKey, one whose bucket partitions would be too
// long, a RowKey the service refuses, keys under [reserved.Prefix].
// It matches [table.ErrInvalid].
var ErrInvalid = invalid.New("buckets: invalid request")

// Options configures a Spread. A nil *Options means defaults.
type Options struct {
	// Buckets is N, the number of partitions each logical partition is
	// spread over, 1 to MaxBuckets. Default (0): DefaultBuckets (8). One
	// partition serves about 2,000 entities per second: choose N for the
	// peak insert rate of one logical partition, with headroom.
	Buckets int
	// Earlier lists the bucket counts used before Buckets for the same
	// table, so that readers still find what was written under them (see
	// the package documentation, "Changing N"). Default: none. Keep a count
	// here until nothing written under it is stored any more.
	Earlier []int
	// Bucket chooses an entity's bucket, in [0, n), from its RowKey: it must
	// depend only on its arguments, since Get computes it again. Default:
	// [keys.Bucket](rowKey, n), a stable hash. A time-derived bucket, such
	// as the RowKey's ticks modulo n, also works when RowKeys are distinct
	// times; one that maps the writes of the same moment to the same bucket
	// (the second of the minute) spreads nothing.
	Bucket func(rowKey string, n int) int
	// Concurrency is the most queries Range runs at once. Default (0): one
	// per partition read, up to 32.
	Concurrency int
	// Telemetry receives the spans, metrics and log records of the
	// Spread's operations (their tablekit.partition is the logical
	// PartitionKey). Default (nil): the global OpenTelemetry providers and
	// slog.Default().
	Telemetry *table.Telemetry
}

// Spread stores the entities of each logical partition in N bucket
// partitions of one table, so that an append-heavy key space (ever
// increasing RowKeys, a current-hour PartitionKey) is served by N partition
// servers instead of one, and reads them back as one sequence in RowKey
// order. It is safe for concurrent use.
type Spread[T any] struct {
	tbl    *table.Table[T]
	gens   []int // Buckets, then the distinct Earlier counts
	widest int   // the largest count above 1: partitions 0..widest-1 are read
	plain  bool  // some count is 1: the unbucketed partition is read too
	bucket func(string, int) int
	conc   int
	pkPath []int // T's PartitionKey field, if it has one
	obs    *obs.Obs
}

// New returns a Spread over tbl, whose entities are T's: an entity's
// logical keys are those tbl gives it ([table.Table.Keys]: T's key fields,
// or the function of [table.Table.WithKeys]), and the Spread stores it
// under its bucket partition. A nil opts means defaults.
func New[T any](tbl *table.Table[T], opts *Options) (*Spread[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: nil table", ErrInvalid)
	}
	if opts == nil {
		opts = &Options{}
	}
	n := opts.Buckets
	if n == 0 {
		n = DefaultBuckets
	}
	s := &Spread[T]{tbl: tbl, bucket: opts.Bucket, conc: opts.Concurrency, obs: obs.New((*obs.Config)(opts.Telemetry))}
	for i, c := range append([]int{n}, opts.Earlier...) {
		if c < 1 || c > MaxBuckets {
			what := "Buckets"
			if i > 0 {
				what = fmt.Sprintf("Earlier[%d]", i-1)
			}
			return nil, fmt.Errorf("%w: %s = %d, want 1..%d", ErrInvalid, what, c, MaxBuckets)
		}
		if slices.Contains(s.gens, c) {
			continue
		}
		s.gens = append(s.gens, c)
		if c == 1 {
			s.plain = true
		} else {
			s.widest = max(s.widest, c)
		}
	}
	if s.bucket == nil {
		s.bucket = hashBucket
	}
	if s.conc < 0 {
		return nil, fmt.Errorf("%w: Concurrency %d", ErrInvalid, s.conc)
	}
	if s.conc == 0 {
		s.conc = min(s.partitions(), 32)
	}
	fields, err := fieldmodel.Of[T]()
	if err != nil {
		return nil, invalid.Mark(ErrInvalid, err) // not reached: tbl's T passed the same checks
	}
	for _, f := range fields {
		if f.Role == fieldmodel.PartitionKey {
			s.pkPath = f.Index
		}
	}
	return s, nil
}

// hashBucket is keys.Bucket as a number.
func hashBucket(rk string, n int) int {
	b := 0
	for _, c := range keys.Bucket(rk, n) {
		b = b*10 + int(c-'0')
	}
	return b
}

// Buckets returns N, the bucket count writes use.
func (s *Spread[T]) Buckets() int { return s.gens[0] }

// Partition returns the PartitionKey of bucket b of logical partition pk
// under a bucket count of n: [keys.Join](pk, b as three digits) for n > 1
// ("hot!003"), keys.Join(pk) for n = 1 (pk itself, escaped: "hot"). The
// bucket number does not depend on n, so the partitions of a smaller count
// are among those of a larger one; keys.Join escapes '!' inside pk, so no
// logical partition's buckets fall among another's. It is the one bucket
// scheme of tablekit: a bucketed patterns/logtail log is stored in the
// same partitions.
func Partition(pk string, n, b int) string {
	if n == 1 {
		return keys.Join(pk)
	}
	return keys.Join(pk, keys.Pad(uint64(b), 3))
}

// partitions is how many partitions a logical partition is read from.
func (s *Spread[T]) partitions() int {
	if s.plain {
		return s.widest + 1
	}
	return s.widest
}

// Partitions returns the partitions Range reads for logical partition pk:
// every bucket of the largest count, and the unbucketed partition when a
// count is 1.
func (s *Spread[T]) Partitions(pk string) []string {
	out := make([]string, 0, s.partitions())
	if s.plain {
		out = append(out, Partition(pk, 1, 0))
	}
	for b := range s.widest {
		out = append(out, Partition(pk, s.widest, b))
	}
	return out
}

// checkPK checks a logical PartitionKey: not empty, not reserved, and its
// bucket partitions valid PartitionKeys.
func (s *Spread[T]) checkPK(pk string) error {
	if pk == "" {
		return fmt.Errorf("%w: %w: empty PartitionKey", ErrInvalid, table.ErrInvalidKey)
	}
	longest := Partition(pk, 1, 0)
	if s.widest > 1 {
		longest = Partition(pk, s.widest, 0)
	}
	if err := keys.Validate(longest); err != nil {
		return fmt.Errorf("%w: PartitionKey %.40q: %w", ErrInvalid, pk, err)
	}
	return notReserved("PartitionKey", pk)
}

// notReserved refuses a key under reserved.Prefix, as the table
// package refuses it for application entities.
func notReserved(what, k string) error {
	if strings.HasPrefix(k, reserved.Prefix) {
		return fmt.Errorf("%w: %w: %s %.40q starts with %q (reserved.Prefix)", ErrInvalid, table.ErrInvalidKey, what, k, reserved.Prefix)
	}
	return nil
}

// home returns the partition of (pk, rk) under bucket count n, after
// checking the keys.
func (s *Spread[T]) home(pk, rk string, n int) (string, error) {
	if err := s.checkPK(pk); err != nil {
		return "", err
	}
	if err := keys.Validate(rk); err != nil {
		return "", fmt.Errorf("%w: RowKey: %w", ErrInvalid, err)
	}
	if err := notReserved("RowKey", rk); err != nil {
		return "", err
	}
	if n == 1 {
		return Partition(pk, 1, 0), nil
	}
	b := s.bucket(rk, n)
	if b < 0 || b >= n {
		return "", fmt.Errorf("%w: Bucket(%q, %d) = %d, want 0..%d", ErrInvalid, rk, n, b, n-1)
	}
	return Partition(pk, n, b), nil
}

// place returns the table view that stores v in its bucket partition under
// the current count, and that partition.
func (s *Spread[T]) place(v *T) (*table.Table[T], string, error) {
	pk, rk, err := s.tbl.Keys(v)
	if err != nil {
		return nil, "", invalid.Mark(ErrInvalid, err)
	}
	p, err := s.home(pk, rk, s.gens[0])
	if err != nil {
		return nil, "", err
	}
	return s.tbl.WithKeys(func(*T) (string, string) { return p, rk }), p, nil
}

// Entry is an entity as read: [table.Entity] with the logical keys (T's
// PartitionKey field, if any, holds the logical PartitionKey too) and the
// ETag read, and the partition it is stored in.
type Entry[T any] struct {
	table.Entity[T]
	// Partition is the bucket partition: the stored PartitionKey.
	Partition string
}

// entry wraps a row read from partition p as the entity of logical
// partition pk.
func (s *Spread[T]) entry(pk, p string, e table.Entity[T]) Entry[T] {
	if s.pkPath != nil {
		reflect.ValueOf(&e.Value).Elem().FieldByIndex(s.pkPath).SetString(pk)
	}
	e.PartitionKey = pk
	return Entry[T]{Entity: e, Partition: p}
}

// Inserted is the result of Insert and Upsert: [table.Result] and the
// partition written.
type Inserted struct {
	table.Result
	// Partition is the bucket partition the entity is stored in.
	Partition string
}

// Insert adds v, under its logical keys (see New), to the bucket the
// current count chooses for its RowKey: one insert, one round trip (+1
// read to settle a lost response, as for [table.Table.Insert]: never
// written twice, never reported failed when it was stored). It fails with
// [table.ErrAlreadyExists] when the bucket holds the RowKey; an entity of
// the same keys written under an earlier count may sit in another bucket
// and is not detected (give appended entities unique RowKeys, or check
// with Get first).
func (s *Spread[T]) Insert(ctx context.Context, v T) (out Inserted, err error) {
	ctx, sp := s.obs.Start(ctx, opInsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, out.Verified) }()
	tb, p, err := s.place(&v)
	if err != nil {
		return Inserted{}, err
	}
	res, err := tb.Insert(ctx, v)
	if err != nil {
		return Inserted{}, invalid.Mark(ErrInvalid, err)
	}
	return Inserted{Result: res, Partition: p}, nil
}

// Upsert writes v whole, under its logical keys, to its bucket under the
// current count, inserting it or replacing the entity stored there (as
// [table.Table.Upsert] with [table.Replace]): one round trip. It refuses,
// with ErrInvalid and nothing sent, a Spread with Options.Earlier: an
// entity of the same keys written under an earlier count may sit in
// another bucket, where an upsert would leave it, and both would then be
// stored.
func (s *Spread[T]) Upsert(ctx context.Context, v T) (out Inserted, err error) {
	ctx, sp := s.obs.Start(ctx, opUpsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, out.Verified) }()
	if len(s.gens) > 1 {
		return Inserted{}, fmt.Errorf("%w: Upsert with earlier bucket counts %v: the entity may be stored in another bucket", ErrInvalid, s.gens[1:])
	}
	tb, p, err := s.place(&v)
	if err != nil {
		return Inserted{}, err
	}
	res, err := tb.Upsert(ctx, v, table.Replace)
	if err != nil {
		return Inserted{}, invalid.Mark(ErrInvalid, err)
	}
	return Inserted{Result: res, Partition: p}, nil
}

// InsertOp is Insert as an op for [table.Submit], which groups ops by
// partition: one transaction per bucket (and per 100 entities), so a batch
// of n appends costs about min(n, N) transactions. Insert's errors found
// before the network (ErrInvalid) are the op's [table.Op.Err], which
// Submit reports before sending anything.
func (s *Spread[T]) InsertOp(v T) table.Op {
	tb, _, err := s.place(&v)
	if err != nil {
		return batchplan.Failed[table.Op](err)
	}
	op := tb.InsertOp(v)
	if err := op.Err(); err != nil {
		return batchplan.Failed[table.Op](invalid.Mark(ErrInvalid, err))
	}
	return op
}

// Get reads the entity (pk, rk): a point query in its bucket under the
// current count, one round trip; when it is not there, a point query in
// its bucket under each earlier count that puts it elsewhere (one round
// trip each, in the order of Options.Earlier). [table.ErrNotFound] when no
// bucket has it.
func (s *Spread[T]) Get(ctx context.Context, pk, rk string) (_ Entry[T], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	var tried []string
	var last error
	for _, n := range s.gens {
		p, err := s.home(pk, rk, n)
		if err != nil {
			return Entry[T]{}, err
		}
		if slices.Contains(tried, p) {
			continue
		}
		tried = append(tried, p)
		e, err := s.tbl.Get(ctx, p, rk, nil)
		if err == nil {
			return s.entry(pk, p, e), nil
		}
		if !errors.Is(err, table.ErrNotFound) {
			return Entry[T]{}, err
		}
		last = err
	}
	return Entry[T]{}, last
}

// RangePage returns one page of Range: the next n (1 to table.MaxPageSize)
// entities of logical partition pk in [from, to), in RowKey order, after
// cursor ("" for the first page), and the cursor of the page after it
// (Next, empty when the range is done). The cursor is a [table.Cursor]: a
// string to keep anywhere and resume from in another process, with the
// same pk, from, to and bucket counts (another range's is ErrInvalid);
// plain, it shows the last entity's RowKey, sealed with the table's
// CursorKey nothing (see the package documentation, "Trust"). Entities of
// one RowKey in several buckets are never split between pages, so a page
// may hold a few more than n. 1 round trip per partition read (Concurrency
// at a time) when the service returns full pages.
func (s *Spread[T]) RangePage(ctx context.Context, pk, from, to string, n int, cursor table.Cursor) (_ table.Page[Entry[T]], err error) {
	ctx, sp := s.obs.Start(ctx, opRangePage, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	var page table.Page[Entry[T]]
	if n < 1 || n > table.MaxPageSize {
		return page, fmt.Errorf("%w: n = %d, want 1..%d", ErrInvalid, n, table.MaxPageSize)
	}
	if err := s.checkPK(pk); err != nil {
		return page, err
	}
	if to != "" && keys.Compare(from, to) >= 0 {
		return page, fmt.Errorf("%w: from %q is not before to %q", ErrInvalid, from, to)
	}
	parts := s.Partitions(pk)
	lc := keycursor.New(s.tbl.CursorKey(), s.tbl.Name(), append([]string{"buckets", pk, from, to}, parts...)...)
	low := table.Filter{}
	if from != "" {
		low = table.Ge("RowKey", from)
	}
	if cursor != "" {
		k, ok := lc.Parse(cursor, 1)
		if !ok || keys.Compare(k[0], from) < 0 || to != "" && keys.Compare(k[0], to) >= 0 {
			return page, fmt.Errorf("%w: cursor %s is not one of this range's (%.40q, %.40q to %.40q)", ErrInvalid, cursorseal.Quote(string(cursor)), pk, from, to)
		}
		low = table.Gt("RowKey", k[0])
	}
	high := table.Filter{}
	if to != "" {
		high = table.Lt("RowKey", to)
	}
	var srcs []table.Source[T]
	for _, p := range parts {
		// n+1 of each: a page takes at most n of one partition, so the
		// (n+1)-th, when there is one, tells that more follow.
		srcs = append(srcs, table.Source[T]{Table: s.tbl, Query: &table.Query{Filter: table.And(table.PartitionKey(p), low, high), Limit: n + 1}})
	}
	for e, err := range table.FanOutEntities(ctx, srcs, &table.FanOutOptions{ByRowKey: true, Concurrency: s.conc}) {
		if err != nil {
			return table.Page[Entry[T]]{}, err
		}
		if len(page.Items) >= n && e.RowKey != page.Items[len(page.Items)-1].RowKey {
			page.Next = lc.Make(page.Items[len(page.Items)-1].RowKey)
			break
		}
		page.Items = append(page.Items, s.entry(pk, e.PartitionKey, e))
	}
	return page, nil
}

// Range yields the entities of logical partition pk whose RowKeys are in
// [from, to) (an empty bound is open), in RowKey order as if they shared
// one partition: one range query per partition read (see Partitions),
// Concurrency at a time, merged lazily by RowKey ([table.FanOutEntities]
// with ByRowKey), each query one round trip per page. Entities of the same
// RowKey in two buckets (written under different counts) both come, in
// partition order. An error ends the sequence; breaking out of the loop
// stops every query.
func (s *Spread[T]) Range(ctx context.Context, pk, from, to string) iter.Seq2[Entry[T], error] {
	return obs.Seq2(s.obs, ctx, opRange, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entry[T], error] {
		return s.rangeOf(ctx, pk, from, to)
	})
}

// rangeOf is Range, without its span.
func (s *Spread[T]) rangeOf(ctx context.Context, pk, from, to string) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		if err := s.checkPK(pk); err != nil {
			yield(Entry[T]{}, err)
			return
		}
		if to != "" && keys.Compare(from, to) >= 0 {
			yield(Entry[T]{}, fmt.Errorf("%w: from %q is not before to %q", ErrInvalid, from, to))
			return
		}
		var srcs []table.Source[T]
		for _, p := range s.Partitions(pk) {
			srcs = append(srcs, table.Source[T]{Table: s.tbl, Query: &table.Query{Filter: table.And(table.PartitionKey(p), table.RowKeyRange(from, to))}})
		}
		for e, err := range table.FanOutEntities(ctx, srcs, &table.FanOutOptions{ByRowKey: true, Concurrency: s.conc}) {
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			if !yield(s.entry(pk, e.PartitionKey, e), nil) {
				return
			}
		}
	}
}

// The operations of this package, for telemetry.
var (
	opInsert    = obs.Write("buckets.Insert")
	opUpsert    = obs.Write("buckets.Upsert")
	opGet       = obs.Read("buckets.Get")
	opRange     = obs.Read("buckets.Range")
	opRangePage = obs.Read("buckets.RangePage")
)

// partitionOf is v's logical PartitionKey, for a span ("" when the table
// cannot give it).
func (s *Spread[T]) partitionOf(v *T) string {
	pk, _, _ := s.tbl.Keys(v)
	return pk
}
