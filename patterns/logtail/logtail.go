package logtail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// MaxLatest is the most entries Latest returns: one page of the service.
const MaxLatest = table.MaxPageSize

// ErrInvalid is the sentinel for a request Log rejects before the network:
// a nil table, a bucket count out of range, an n out of range, a time
// window the wrong way round, a time outside the .NET DateTime range, a
// value the table package refuses to write, a log name that makes no valid
// PartitionKey or one under [table.ReservedPrefix] (which also match
// [table.ErrInvalidKey]). It matches [table.ErrInvalid].
var ErrInvalid = table.NewErrInvalid("logtail: invalid request")

// Options configures a Log. A nil *Options means defaults.
type Options struct {
	// Buckets spreads each log over this many partitions, 1 to
	// [buckets.MaxBuckets]: the partitions [buckets.Partition] names for
	// the log's name, for logs written faster than one partition's target
	// of about 2,000 entities per second. Appends go to the buckets in
	// turn; reads query every bucket in parallel and merge. Default (0 or
	// 1): one partition, named after the log. Changing it for an existing
	// log hides the entries of the buckets no longer read: keep it fixed
	// per log.
	Buckets int
	// Telemetry receives the spans, metrics and log records of the Log's
	// operations (their tablekit.partition is the log's name). Default
	// (nil): the global OpenTelemetry providers and slog.Default().
	Telemetry *table.Telemetry
}

// Log is the guide's log tail over a table: entries of type T appended to
// a log (a partition, or Buckets partitions) under RowKeys that sort newest
// first, so that the newest n are one range query. It is safe for
// concurrent use.
type Log[T any] struct {
	tbl     *table.Table[T]
	buckets int
	// writer makes keys unique among Logs (processes) appending in the same
	// 100 ns tick; seq orders one Log's appends within a tick.
	writer string
	seq    atomic.Uint64
	obs    *obs.Obs
}

// New returns a Log over tbl, whose rows are the log's entries: T's
// entities, one row each. T's own key fields, if any, are ignored on
// writes (the Log computes the keys) and receive the stored keys on reads.
// A nil opts means defaults.
func New[T any](tbl *table.Table[T], opts *Options) (*Log[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: nil table", ErrInvalid)
	}
	if opts == nil {
		opts = &Options{}
	}
	b := opts.Buckets
	if b < 0 || b > buckets.MaxBuckets {
		return nil, fmt.Errorf("%w: Buckets %d outside 0..%d", ErrInvalid, b, buckets.MaxBuckets)
	}
	if b == 0 {
		b = 1
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	return &Log[T]{tbl: tbl, buckets: b, writer: hex.EncodeToString(id[:]), obs: obs.New((*obs.Config)(opts.Telemetry))}, nil
}

// Entry is one entry of a log as read: the [table.Entity] (the keys it is
// stored under, the ETag read, the value) and the time it was appended at,
// from its RowKey.
type Entry[T any] struct {
	table.Entity[T]
	Time time.Time
}

// Appended is the result of Append and AppendAt: [table.Result], the
// entry's time (in UTC, to the service's 100 ns) and the keys it is
// stored under.
type Appended struct {
	table.Result
	Time                 time.Time
	PartitionKey, RowKey string
}

// partition returns the partition of bucket b of log: the log's name
// escaped ([keys.Join]), joined with the bucket number when the log has
// buckets, as [buckets.Partition] names a Spread's partitions. keys.Join
// escapes the '!' that precedes a bucket number, so no log shares a
// partition with another.
func (l *Log[T]) partition(log string, b int) string {
	return buckets.Partition(log, l.buckets, b)
}

// checkLog checks that log's partitions are valid PartitionKeys, outside
// table.ReservedPrefix, so that reads of a log that cannot exist (their
// filters would match nothing) and writes to it fail before the network.
func (l *Log[T]) checkLog(log string) error {
	if log == "" {
		return fmt.Errorf("%w: %w: an empty log name", ErrInvalid, table.ErrInvalidKey)
	}
	if err := keys.Validate(l.partition(log, 0)); err != nil { // every bucket's has the same length
		return fmt.Errorf("%w: log %.40q: %w", ErrInvalid, log, err)
	}
	if strings.HasPrefix(log, table.ReservedPrefix) {
		return fmt.Errorf("%w: %w: log %.40q starts with %q (table.ReservedPrefix)", ErrInvalid, table.ErrInvalidKey, log, table.ReservedPrefix)
	}
	return nil
}

// rowKey is the entry's RowKey: the guide's inverted ticks, then this
// Log's sequence number inverted (later appends of one tick sort first),
// then the writer's id (distinct writers never collide).
func (l *Log[T]) rowKey(at time.Time, seq uint64) string {
	return keys.InvertedTicks(at) + "-" + keys.Pad(^seq, 20) + "-" + l.writer
}

// Append adds v to log at the current time: one insert, one round trip.
// The entry's key is unique even for appends in the same 100 ns tick, from
// this Log or any other. A lost response is settled by the table's write
// outcome model (the insert is verified, never written twice).
func (l *Log[T]) Append(ctx context.Context, log string, v T) (res Appended, err error) {
	ctx, sp := l.obs.Start(ctx, opAppend, l.tbl.Name(), log)
	defer func() { sp.EndWrite(err, res.Verified) }()
	return l.appendAt(ctx, log, time.Now(), v)
}

// AppendAt is Append at a given time (which must be within .NET's
// DateTime range), for importing entries.
func (l *Log[T]) AppendAt(ctx context.Context, log string, at time.Time, v T) (res Appended, err error) {
	ctx, sp := l.obs.Start(ctx, opAppend, l.tbl.Name(), log)
	defer func() { sp.EndWrite(err, res.Verified) }()
	return l.appendAt(ctx, log, at, v)
}

// appendAt is AppendAt, without its span.
func (l *Log[T]) appendAt(ctx context.Context, log string, at time.Time, v T) (Appended, error) {
	if err := checkTime(at); err != nil {
		return Appended{}, err
	}
	if err := l.checkLog(log); err != nil {
		return Appended{}, err
	}
	seq := l.seq.Add(1)
	pk := l.partition(log, int(seq%uint64(l.buckets)))
	rk := l.rowKey(at, seq)
	res, err := l.tbl.WithKeys(func(*T) (string, string) { return pk, rk }).Insert(ctx, v)
	if err != nil {
		return Appended{}, table.MarkInvalid(ErrInvalid, err)
	}
	return Appended{Result: res, Time: at.UTC().Truncate(100), PartitionKey: pk, RowKey: rk}, nil
}

// The range of .NET's DateTime, which keys.InvertedTicks needs.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

func checkTime(t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("%w: time %v outside .NET's DateTime range", ErrInvalid, t)
	}
	return nil
}

// bound is the key prefix just past the entries of times before t, for
// range bounds: t rounded up to the service's 100 ns ticks (an entry at
// 12:00:00.0000001 is before a bound of 12:00:00.00000015), inverted,
// then '.', which sorts just after the '-' that follows the ticks in every
// entry's key.
func bound(t time.Time) string {
	up := t.Truncate(100)
	if up.Before(t) && up.Add(100).Before(maxTime) {
		up = up.Add(100)
	}
	return keys.InvertedTicks(up) + "."
}

// Latest returns the n newest entries of log, newest first: one range
// query per bucket (in parallel), one round trip each when n <= 1,000
// (MaxLatest) and the service returns full pages.
func (l *Log[T]) Latest(ctx context.Context, log string, n int) (_ []Entry[T], err error) {
	ctx, sp := l.obs.Start(ctx, opLatest, l.tbl.Name(), log)
	defer func() { sp.End(err) }()
	if n < 1 || n > MaxLatest {
		return nil, fmt.Errorf("%w: n = %d, want 1..%d", ErrInvalid, n, MaxLatest)
	}
	if err := l.checkLog(log); err != nil {
		return nil, err
	}
	var out []Entry[T]
	for e, err := range l.merged(ctx, log, table.Filter{}, n) {
		if err != nil {
			return nil, err
		}
		if out = append(out, e); len(out) == n {
			break
		}
	}
	return out, nil
}

// merged yields the entries of log that match filter (besides the
// partition), newest first: a query per bucket (at most limit entries
// each, 0 for all), all in parallel, merged by RowKey
// (table.FanOutEntities with ByRowKey) and lazily, fetching each bucket's
// pages as the merge needs them.
func (l *Log[T]) merged(ctx context.Context, log string, filter table.Filter, limit int) iter.Seq2[Entry[T], error] {
	srcs := make([]table.Source[T], l.buckets)
	for b := range l.buckets {
		srcs[b] = table.Source[T]{Table: l.tbl, Query: &table.Query{Filter: table.And(table.PartitionKey(l.partition(log, b)), filter), Limit: limit}}
	}
	return entries(table.FanOutEntities(ctx, srcs, &table.FanOutOptions{ByRowKey: true, Concurrency: l.buckets}))
}

// Range yields the entries of log appended in [from, to), newest first,
// lazily: one range query per bucket, one round trip per page of each,
// merged in time order.
func (l *Log[T]) Range(ctx context.Context, log string, from, to time.Time) iter.Seq2[Entry[T], error] {
	return obs.Seq2(l.obs, ctx, opRange, l.tbl.Name(), log, func(ctx context.Context) iter.Seq2[Entry[T], error] {
		return l.rangeOf(ctx, log, from, to)
	})
}

// rangeOf is Range, without its span.
func (l *Log[T]) rangeOf(ctx context.Context, log string, from, to time.Time) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		if err := checkTime(from); err != nil {
			yield(Entry[T]{}, err)
			return
		}
		if err := checkTime(to); err != nil {
			yield(Entry[T]{}, err)
			return
		}
		if !from.Before(to) {
			yield(Entry[T]{}, fmt.Errorf("%w: from %v is not before to %v", ErrInvalid, from, to))
			return
		}
		if err := l.checkLog(log); err != nil {
			yield(Entry[T]{}, err)
			return
		}
		// Newest first: entries of [from, to) have keys in [bound(to),
		// bound(from)).
		for e, err := range l.merged(ctx, log, table.RowKeyRange(bound(to), bound(from)), 0) {
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// Trim deletes the entries of log appended before before, with
// table.Submit: page by page, one query per page and one transaction per
// 100 entries per bucket. It returns how many it deleted. Trim is
// idempotent: entries already gone (another Trim ran concurrently, or a
// response was lost) are not errors; their page is queried again. For high
// volumes, a table per period deleted whole (the guide's high-volume delete)
// costs one request however many entries it holds.
func (l *Log[T]) Trim(ctx context.Context, log string, before time.Time) (_ int, err error) {
	ctx, sp := l.obs.Start(ctx, opTrim, l.tbl.Name(), log)
	defer func() { sp.EndWrite(err, false) }()
	if err := checkTime(before); err != nil {
		return 0, err
	}
	if err := l.checkLog(log); err != nil {
		return 0, err
	}
	deleted := 0
	for b := range l.buckets {
		pk := l.partition(log, b)
		// Each round deletes the oldest page (up to 1,000 entries) and
		// queries again from the start: deleted entries are gone, so the
		// next page is the next batch, and memory stays one page.
		q := &table.Query{Filter: table.And(table.PartitionKey(pk), table.Ge("RowKey", bound(before))), Select: []string{"RowKey"}, Limit: table.MaxPageSize}
		for stalled := 0; ; {
			var ops []table.Op
			for k, err := range l.tbl.QueryEntities(ctx, q) {
				if err != nil {
					return deleted, err
				}
				ops = append(ops, table.DeleteOp(k.PartitionKey, k.RowKey, azcore.ETagAny))
			}
			if len(ops) == 0 {
				break
			}
			res, err := table.Submit(ctx, l.tbl.Client(), ops, &table.BatchOptions{ContinueOnError: true})
			n := 0
			for _, r := range res.Ops {
				if r.Applied {
					n++
				}
			}
			deleted += n
			if err != nil && !goneOrUnknown(err) {
				return deleted, err
			}
			if n == 0 {
				if stalled++; stalled == 5 {
					return deleted, err
				}
			}
		}
	}
	return deleted, nil
}

// goneOrUnknown reports whether every cause of a failed delete batch is an
// entity already gone or an unknown outcome, both harmless to retry.
func goneOrUnknown(err error) bool {
	var be *table.BatchError
	if !errors.As(err, &be) {
		return false
	}
	for _, e := range be.Errs {
		if !errors.Is(e, table.ErrNotFound) && !errors.Is(e, table.ErrOutcomeUnknown) {
			return false
		}
	}
	return true
}

// entries adds each entry's time, read from its RowKey.
func entries[T any](seq iter.Seq2[table.Entity[T], error]) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		for k, err := range seq {
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			e, err := entry(k)
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

func entry[T any](k table.Entity[T]) (Entry[T], error) {
	if len(k.RowKey) < keys.InvertedTicksWidth {
		return Entry[T]{}, fmt.Errorf("logtail: RowKey %q in partition %q is not a log entry's", k.RowKey, k.PartitionKey)
	}
	t, err := keys.ParseInvertedTicks(k.RowKey[:keys.InvertedTicksWidth])
	if err != nil {
		return Entry[T]{}, fmt.Errorf("logtail: RowKey %q in partition %q: %w", k.RowKey, k.PartitionKey, err)
	}
	return Entry[T]{Entity: k, Time: t}, nil
}

// The operations of this package, for telemetry.
var (
	opAppend = obs.Write("logtail.Append")
	opTrim   = obs.Write("logtail.Trim")
	opLatest = obs.Read("logtail.Latest")
	opRange  = obs.Read("logtail.Range")
)
