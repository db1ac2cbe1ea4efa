package buckets

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/batchplan"
	"github.com/tablekit/tablekit/internal/bucketkey"
	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/tablekit/tablekit/internal/keycursor"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// MaxBuckets bounds Options.Buckets and the counts in Options.Earlier:
// bucket numbers are three digits in partition names.
const MaxBuckets = 1000

// defaultBuckets is Options.Buckets when it is not set.
const defaultBuckets = 8

// ErrInvalid is the sentinel for a configuration or request a Spread
// rejects before the network: a nil table, a bucket count out of range, a
// Bucket function answering outside [0, n), a key range the wrong way
// round, an Upsert with earlier counts, a value the table package refuses
// to write, invalid keys (which also match [table.ErrInvalidKey]): an
// empty logical PartitionKey, one whose bucket partitions would be too
// long, a RowKey the service refuses, keys under "~tk~".
// It matches [table.ErrInvalid].
var ErrInvalid = invalid.New("buckets: invalid request")

// Options configures a Spread. A nil *Options means defaults.
type Options struct {
	// Buckets is N, the number of partitions each logical partition is
	// spread over, 1 to MaxBuckets. Default (0): 8. One
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
		n = defaultBuckets
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
		out = append(out, bucketkey.Partition(pk, 1, 0))
	}
	for b := range s.widest {
		out = append(out, bucketkey.Partition(pk, s.widest, b))
	}
	return out
}

// checkPK checks a logical PartitionKey: not empty, not reserved, and its
// bucket partitions valid PartitionKeys.
func (s *Spread[T]) checkPK(pk string) error {
	if pk == "" {
		return fmt.Errorf("%w: %w: empty PartitionKey", ErrInvalid, table.ErrInvalidKey)
	}
	longest := bucketkey.Partition(pk, 1, 0)
	if s.widest > 1 {
		longest = bucketkey.Partition(pk, s.widest, 0)
	}
	if err := keys.Validate(longest); err != nil {
		return fmt.Errorf("%w: PartitionKey %.40q: %w", ErrInvalid, pk, err)
	}
	return notReserved("PartitionKey", pk)
}

// notReserved refuses a key under "~tk~", as the table
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
		return bucketkey.Partition(pk, 1, 0), nil
	}
	b := s.bucket(rk, n)
	if b < 0 || b >= n {
		return "", fmt.Errorf("%w: Bucket(%q, %d) = %d, want 0..%d", ErrInvalid, rk, n, b, n-1)
	}
	return bucketkey.Partition(pk, n, b), nil
}

// place returns the table view that stores v in its bucket partition under
// the current count, and that partition.
func (s *Spread[T]) place(v *T) (*table.Table[T], string, error) {
	pk, rk, err := fieldmodel.TableKeys(s.tbl, v)
	if err != nil {
		return nil, "", invalid.Mark(ErrInvalid, err)
	}
	p, err := s.home(pk, rk, s.gens[0])
	if err != nil {
		return nil, "", err
	}
	return s.at(p, rk), p, nil
}

// at is the table view that writes its values under (p, rk).
func (s *Spread[T]) at(p, rk string) *table.Table[T] {
	return s.tbl.WithKeys(func(*T) (string, string) { return p, rk })
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

// Result is the result of Insert, Upsert and Update: [table.Result] and
// the partition written.
type Result struct {
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
func (s *Spread[T]) Insert(ctx context.Context, v T) (out Result, err error) {
	ctx, sp := s.obs.Start(ctx, opInsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, out.Verified) }()
	tb, p, err := s.place(&v)
	if err != nil {
		return Result{}, err
	}
	res, err := tb.Insert(ctx, v)
	if err != nil {
		return Result{}, invalid.Mark(ErrInvalid, err)
	}
	return Result{Result: res, Partition: p}, nil
}

// Upsert writes v whole, under its logical keys, to its bucket under the
// current count, inserting it or replacing the entity stored there (as
// [table.Table.Upsert] with [table.Replace]): one round trip. It refuses,
// with ErrInvalid and nothing sent, a Spread with Options.Earlier: an
// entity of the same keys written under an earlier count may sit in
// another bucket, where an upsert would leave it, and both would then be
// stored.
func (s *Spread[T]) Upsert(ctx context.Context, v T) (out Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, out.Verified) }()
	if err := s.onlyCount("Upsert"); err != nil {
		return Result{}, err
	}
	tb, p, err := s.place(&v)
	if err != nil {
		return Result{}, err
	}
	res, err := tb.Upsert(ctx, v, table.Replace)
	if err != nil {
		return Result{}, invalid.Mark(ErrInvalid, err)
	}
	return Result{Result: res, Partition: p}, nil
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
	return markOp(tb.InsertOp(v))
}

// Get reads the entity (pk, rk): a point query in its bucket under the
// current count, one round trip; when it is not there, a point query in
// its bucket under each earlier count that puts it elsewhere (one round
// trip each, in the order of Options.Earlier). [table.ErrNotFound] when no
// bucket has it.
func (s *Spread[T]) Get(ctx context.Context, pk, rk string) (_ Entry[T], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	homes, err := s.homes(pk, rk)
	if err != nil {
		return Entry[T]{}, err
	}
	var last error
	for _, p := range homes {
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

// homes returns the partitions that may hold (pk, rk), in the order Get,
// Update and Delete look: its bucket under the current count, then under
// each earlier count that puts it elsewhere.
func (s *Spread[T]) homes(pk, rk string) ([]string, error) {
	var out []string
	for _, n := range s.gens {
		p, err := s.home(pk, rk, n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// elsewhere reports whether a write to one of an entity's homes failed
// only because the entity is not there, so that the next home may hold
// it: ErrNotFound, and not an unknown outcome (a resend that found the
// entity gone after its first attempt's response was lost: that attempt
// may have been the one that found it).
func elsewhere(err error) bool {
	return errors.Is(err, table.ErrNotFound) && !errors.Is(err, table.ErrOutcomeUnknown)
}

// Update replaces the entity v (its logical keys, see New) whole where it
// is stored, if its ETag still matches: pass the ETag read with it (Get's
// Entry), or azcore.ETagAny to replace whatever version is stored. It
// looks where Get looks: its bucket under the current count, one round
// trip; when the entity is not there, its bucket under each earlier count
// that puts it elsewhere, one round trip each, and updates it in the
// bucket that holds it (it does not move). [table.ErrPreconditionFailed]
// when the ETag no longer matches (the entity changed since it was read),
// [table.ErrNotFound] when no bucket holds it, [table.ErrNoETag] (also
// ErrInvalid) for an empty ETag, with nothing sent. A lost response is
// settled as [table.Table.Update] settles it (never applied twice).
func (s *Spread[T]) Update(ctx context.Context, v T, etag azcore.ETag) (out Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdate, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, out.Verified) }()
	pk, rk, err := fieldmodel.TableKeys(s.tbl, &v)
	if err != nil {
		return Result{}, invalid.Mark(ErrInvalid, err)
	}
	if etag == "" {
		return Result{}, fmt.Errorf("%w: update of %.40q/%.40q: %w", ErrInvalid, pk, rk, table.ErrNoETag)
	}
	homes, err := s.homes(pk, rk)
	if err != nil {
		return Result{}, err
	}
	var last error
	for _, p := range homes {
		res, err := s.at(p, rk).Update(ctx, v, etag, table.Replace)
		if err == nil {
			return Result{Result: res, Partition: p}, nil
		}
		if !elsewhere(err) {
			return Result{}, invalid.Mark(ErrInvalid, err)
		}
		last = err
	}
	return Result{}, last
}

// Delete removes the entity (pk, rk) where it is stored, if its ETag
// still matches: pass the ETag read with it, or azcore.ETagAny to delete
// whatever version is stored. It looks where Get looks (one round trip
// for the bucket under the current count, +1 per earlier count that puts
// the entity elsewhere, only while it is not found) and deletes the
// entity Get would return. [table.ErrPreconditionFailed] when the ETag no
// longer matches, [table.ErrNotFound] when no bucket holds it,
// [table.ErrNoETag] (also ErrInvalid) for an empty ETag, with nothing
// sent. When a response is lost and the resend finds the entity gone, the
// error is [table.ErrOutcomeUnknown] (and ErrNotFound), as for
// [table.Table.Delete], and no other bucket is tried.
func (s *Spread[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) (err error) {
	ctx, sp := s.obs.Start(ctx, opDelete, s.tbl.Name(), pk)
	defer func() { sp.EndWrite(err, false) }()
	if etag == "" {
		return fmt.Errorf("%w: delete of %.40q/%.40q: %w", ErrInvalid, pk, rk, table.ErrNoETag)
	}
	homes, err := s.homes(pk, rk)
	if err != nil {
		return err
	}
	var last error
	for _, p := range homes {
		err := s.tbl.Delete(ctx, p, rk, etag)
		if !elsewhere(err) {
			return invalid.Mark(ErrInvalid, err) // nil when deleted
		}
		last = err
	}
	return last
}

// UpdateOp is Update as an op for [table.Table.Submit] or a
// [table.Change]: the conditional replace of v in its bucket under the
// current count (an op cannot look further). A Spread with
// Options.Earlier refuses it (the entity may be stored in another bucket:
// use Update), as it refuses an empty ETag ([table.ErrNoETag]) and
// Insert's errors: the op's [table.Op.Err], matching ErrInvalid, which
// Submit reports before sending anything.
func (s *Spread[T]) UpdateOp(v T, etag azcore.ETag) table.Op {
	if err := s.onlyCount("UpdateOp"); err != nil {
		return batchplan.Failed[table.Op](err)
	}
	tb, _, err := s.place(&v)
	if err != nil {
		return batchplan.Failed[table.Op](err)
	}
	return markOp(tb.UpdateOp(v, etag, table.Replace))
}

// DeleteOp is Delete as an op for [table.Table.Submit] or a
// [table.Change]: the conditional delete of (pk, rk) in its bucket under
// the current count. A Spread with Options.Earlier refuses it (use
// Delete), as it refuses an empty ETag and invalid keys: the op's
// [table.Op.Err], matching ErrInvalid.
func (s *Spread[T]) DeleteOp(pk, rk string, etag azcore.ETag) table.Op {
	if err := s.onlyCount("DeleteOp"); err != nil {
		return batchplan.Failed[table.Op](err)
	}
	p, err := s.home(pk, rk, s.gens[0])
	if err != nil {
		return batchplan.Failed[table.Op](err)
	}
	return markOp(s.tbl.DeleteOp(p, rk, etag))
}

// onlyCount refuses op (an op that addresses one bucket) when earlier
// counts may have put the entity in another.
func (s *Spread[T]) onlyCount(op string) error {
	if len(s.gens) > 1 {
		return fmt.Errorf("%w: %s with earlier bucket counts %v: the entity may be stored in another bucket", ErrInvalid, op, s.gens[1:])
	}
	return nil
}

// markOp returns op, its error (if any) marked with ErrInvalid.
func markOp(op table.Op) table.Op {
	if err := op.Err(); err != nil {
		return batchplan.Failed[table.Op](invalid.Mark(ErrInvalid, err))
	}
	return op
}

// RangeOptions configures Range and RangePage. A nil *RangeOptions
// means defaults.
type RangeOptions struct {
	// PageSize is the most entities RangePage returns (but for entities
	// of one RowKey in several buckets, which a page never splits), and
	// the most Range reads from each partition per round trip: 1 to
	// table.MaxPageSize (1,000). Default (0): 1,000. Negative or larger is
	// ErrInvalid, nothing sent.
	PageSize int
}

// RangePage returns one page of Range: the next opts.PageSize entities of
// logical partition pk in [from, to), in RowKey order, after cursor (""
// for the first page), and the cursor of the page after it (Next, empty
// when the range is done). The cursor is a [table.Cursor]: a string to
// keep anywhere and resume from in another process, with the same pk,
// from, to and bucket counts (another range's is ErrInvalid); plain, it
// shows the last entity's RowKey, sealed with the table's CursorKey
// nothing (see the package documentation, "Trust"). Entities of one
// RowKey in several buckets are never split between pages, so a page may
// hold a few more than PageSize. 1 round trip per partition read
// (Concurrency at a time) when the service returns full pages; a page of
// 1,000 may be followed by an empty one.
func (s *Spread[T]) RangePage(ctx context.Context, pk, from, to string, cursor table.Cursor, opts *RangeOptions) (page table.Page[Entry[T]], err error) {
	ctx, sp := s.obs.Start(ctx, opRangePage, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.checkRange(pk, from, to); err != nil {
		return page, err
	}
	parts := s.Partitions(pk)
	m := keycursor.Merged[T]{
		Listing:     keycursor.New(keycursor.KeyOf(s.tbl), s.tbl.Name(), append([]string{"buckets", pk, from, to}, parts...)...),
		ByRowKey:    true,
		Concurrency: s.conc,
		In: func(k []string) bool {
			return keys.Compare(k[0], from) >= 0 && (to == "" || keys.Compare(k[0], to) < 0)
		},
		Invalid: ErrInvalid,
		What:    fmt.Sprintf(" (%.40q, %.40q to %.40q)", pk, from, to),
		Sources: func(context.Context) ([]keycursor.Source[T], error) { return s.sources(parts, from, to), nil },
	}
	p, err := m.Page(ctx, cursor, pageSize(opts))
	if err != nil {
		return page, err
	}
	for _, e := range p.Items {
		page.Items = append(page.Items, s.entry(pk, e.PartitionKey, e))
	}
	page.Next = p.Next
	return page, nil
}

// pageSize is opts' PageSize (0 for a nil opts).
func pageSize(opts *RangeOptions) int {
	if opts == nil {
		return 0
	}
	return opts.PageSize
}

// checkRange checks the arguments of Range and RangePage.
func (s *Spread[T]) checkRange(pk, from, to string) error {
	if err := s.checkPK(pk); err != nil {
		return err
	}
	if to != "" && keys.Compare(from, to) >= 0 {
		return fmt.Errorf("%w: from %.40q is not before to %.40q", ErrInvalid, from, to)
	}
	return nil
}

// sources are the queries of the RowKeys in [from, to) of partitions.
func (s *Spread[T]) sources(partitions []string, from, to string) []keycursor.Source[T] {
	srcs := make([]keycursor.Source[T], len(partitions))
	for i, p := range partitions {
		srcs[i] = keycursor.Source[T]{Table: s.tbl, Query: &table.Query{Filter: table.And(table.PartitionKey(p), table.RowKeyRange(from, to))}}
	}
	return srcs
}

// Range yields the entities of logical partition pk whose RowKeys are in
// [from, to) (an empty bound is open), in RowKey order as if they shared
// one partition: one range query per partition read (see Partitions),
// Concurrency at a time, merged lazily by RowKey (a merge of the periods' queries
// with ByRowKey), each query one round trip per page (opts.PageSize
// entities, 1,000 by default). Entities of the same RowKey in two buckets
// (written under different counts) both come, in partition order. An
// error ends the sequence; breaking out of the loop stops every query. A
// nil opts means defaults.
func (s *Spread[T]) Range(ctx context.Context, pk, from, to string, opts *RangeOptions) iter.Seq2[Entry[T], error] {
	return obs.Seq2(s.obs, ctx, opRange, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entry[T], error] {
		return s.rangeOf(ctx, pk, from, to, opts)
	})
}

// rangeOf is Range, without its span.
func (s *Spread[T]) rangeOf(ctx context.Context, pk, from, to string, opts *RangeOptions) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		if err := s.checkRange(pk, from, to); err != nil {
			yield(Entry[T]{}, err)
			return
		}
		n, err := keycursor.PageSize(ErrInvalid, pageSize(opts))
		if err != nil {
			yield(Entry[T]{}, err)
			return
		}
		srcs := s.sources(s.Partitions(pk), from, to)
		for _, src := range srcs {
			src.Query.PageSize = n
		}
		for e, err := range keycursor.FanOut(ctx, srcs, &table.FanOutOptions{ByRowKey: true, Concurrency: s.conc}) {
			if err != nil {
				yield(Entry[T]{}, invalid.Mark(ErrInvalid, err))
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
	opUpdate    = obs.Write("buckets.Update")
	opDelete    = obs.Write("buckets.Delete")
	opGet       = obs.Read("buckets.Get")
	opRange     = obs.Read("buckets.Range")
	opRangePage = obs.Read("buckets.RangePage")
)

// partitionOf is v's logical PartitionKey, for a span ("" when the table
// cannot give it).
func (s *Spread[T]) partitionOf(v *T) string {
	pk, _, _ := fieldmodel.TableKeys(s.tbl, v)
	return pk
}
