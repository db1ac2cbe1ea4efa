package logtail

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/bucketkey"
	"github.com/tablekit/tablekit/internal/keycursor"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// ErrInvalid is the sentinel for a request Log rejects before the network:
// a nil table, a bucket count out of range, an n or a PageSize out of
// range, a time window the wrong way round, a time outside the .NET
// DateTime range, a value the table package refuses to write, a log name
// that makes no valid PartitionKey or one under "~tk~" (which
// also match [table.ErrInvalidKey]). It matches [table.ErrInvalid].
var ErrInvalid = invalid.New("logtail: invalid request")

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
	// Prefix makes each log share its partition with other rows, so that
	// an entry can be written in one transaction with the change it
	// records (AppendOp in a table.Change): a log is then the partition
	// named exactly as the log (a valid PartitionKey, not escaped: the
	// partition of the entities it records, such as a department), and
	// its entries' RowKeys start with keys.Join(Prefix, "") (Prefix and
	// '!'). The log's reads select those keys only, so no other row of the
	// partition is ever read as an entry, and the other patterns' reads,
	// which select their own prefixes, never read an entry: give the
	// Prefix a name no other row of the partition starts with (not a
	// secondaryindex Primary or index name). 1 to 32 ASCII letters and
	// digits; incompatible with Buckets above 1 (a log spread over
	// partitions cannot share one). Default: "" (each log's partitions
	// hold its entries only).
	Prefix string
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
	// pre starts every entry's RowKey: "" or keys.Join(Prefix, "").
	pre string
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
	l := &Log[T]{tbl: tbl, buckets: b}
	if p := opts.Prefix; p != "" {
		if len(p) > 32 || strings.IndexFunc(p, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) >= 0 {
			return nil, fmt.Errorf("%w: Prefix %q: 1 to 32 ASCII letters and digits", ErrInvalid, p)
		}
		if b > 1 {
			return nil, fmt.Errorf("%w: Prefix %q with Buckets %d: a log that shares its partition cannot be spread over several", ErrInvalid, p, b)
		}
		l.pre = keys.Join(p, "")
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	l.writer = hex.EncodeToString(id[:])
	l.obs = obs.New((*obs.Config)(opts.Telemetry))
	return l, nil
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
	if l.pre != "" {
		return log // shared with the entities it records (Options.Prefix)
	}
	return bucketkey.Partition(log, l.buckets, b)
}

// checkLog checks that log's partitions are valid PartitionKeys, outside
// "~tk~", so that reads of a log that cannot exist (their
// filters would match nothing) and writes to it fail before the network.
func (l *Log[T]) checkLog(log string) error {
	if log == "" {
		return fmt.Errorf("%w: %w: an empty log name", ErrInvalid, table.ErrInvalidKey)
	}
	if err := keys.Validate(l.partition(log, 0)); err != nil { // every bucket's has the same length (a shared log: the name itself)
		return fmt.Errorf("%w: log %.40q: %w", ErrInvalid, log, err)
	}
	if strings.HasPrefix(log, reserved.Prefix) {
		return fmt.Errorf("%w: %w: log %.40q starts with %q (reserved.Prefix)", ErrInvalid, table.ErrInvalidKey, log, reserved.Prefix)
	}
	return nil
}

// rowKey is the entry's RowKey: the guide's inverted ticks, then this
// Log's sequence number inverted (later appends of one tick sort first),
// then the writer's id (distinct writers never collide).
func (l *Log[T]) rowKey(at time.Time, seq uint64) string {
	return l.pre + keys.InvertedTicks(at) + "-" + keys.Pad(^seq, 20) + "-" + l.writer
}

// span is the RowKey filter of every entry of a log: none when the log's
// partitions are its own, its Prefix's range when they are shared.
func (l *Log[T]) span() table.Filter {
	if l.pre == "" {
		return table.Filter{}
	}
	return table.RowKeyRange(l.pre, l.end())
}

// end is the first RowKey after every entry of a shared log ("" for a log
// whose partitions are its own).
func (l *Log[T]) end() string {
	if l.pre == "" {
		return ""
	}
	_, hi := keys.PrefixRange(strings.TrimSuffix(l.pre, "!"))
	return hi
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
	pk, rk := l.next(log, at)
	res, err := l.tbl.WithKeys(func(*T) (string, string) { return pk, rk }).Insert(ctx, v)
	if err != nil {
		return Appended{}, invalid.Mark(ErrInvalid, err)
	}
	return Appended{Result: res, Time: at.UTC().Truncate(100), PartitionKey: pk, RowKey: rk}, nil
}

// next returns the keys of log's next entry at time at.
func (l *Log[T]) next(log string, at time.Time) (pk, rk string) {
	seq := l.seq.Add(1)
	return l.partition(log, int(seq%uint64(l.buckets))), l.rowKey(at, seq)
}

// AppendOp is Append as an op: the insert of v into log at the current
// time, for [table.Table.Submit] or a [table.Change]. With Options.Prefix
// the log shares the partition of the entities it records, so the entry can join
// their write in one transaction: a log of every change to a department's
// employees, written atomically with each change, is
//
//	entry := table.Change{By: "log", Ops: []table.Op{log.AppendOp(dept, change)}}
//	_, err := employees.Apply(ctx, employeeChange, entry)
//
// The op's keys (PartitionKey, RowKey) are the entry's; it records the
// time it was made. An error (a log name that makes no PartitionKey, a
// value the table refuses) is the op's Err, matching ErrInvalid.
func (l *Log[T]) AppendOp(log string, v T) table.Op {
	if err := l.checkLog(log); err != nil {
		return batchplan.Failed[table.Op](err)
	}
	pk, rk := l.next(log, time.Now())
	op := l.tbl.WithKeys(func(*T) (string, string) { return pk, rk }).InsertOp(v)
	if err := op.Err(); err != nil {
		return batchplan.Failed[table.Op](invalid.Mark(ErrInvalid, err))
	}
	return op
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
func (l *Log[T]) bound(t time.Time) string {
	up := t.Truncate(100)
	if up.Before(t) && up.Add(100).Before(maxTime) {
		up = up.Add(100)
	}
	return l.pre + keys.InvertedTicks(up) + "."
}

// Latest returns the n newest entries of log, newest first. On Table
// Storage: one range query per bucket (in parallel), one round trip each
// (n is 1 to [table.MaxPageSize], 1,000) when the service returns full
// pages, the service's $top picking the first n keys. On a service whose queries
// return entries in no key order (a [table.Profile] that is not Sorted:
// Cosmos DB), where $top picks any n, it reads a time window instead: the
// entries appended in the last second (and any with later times), then
// ever longer windows (each read once, growing with the entries found)
// until they hold n, and keeps the n newest. That costs the entries of the
// window that holds the n-th newest entry, up to a few times n, in
// transfer and memory, and one query per bucket per window step: a few
// steps for a log written steadily, about 8 for one whose n-th newest
// entry is years old.
func (l *Log[T]) Latest(ctx context.Context, log string, n int) (_ []Entry[T], err error) {
	ctx, sp := l.obs.Start(ctx, opLatest, l.tbl.Name(), log)
	defer func() { sp.End(err) }()
	if n < 1 || n > table.MaxPageSize {
		return nil, fmt.Errorf("%w: n = %d, want 1..%d", ErrInvalid, n, table.MaxPageSize)
	}
	if err := l.checkLog(log); err != nil {
		return nil, err
	}
	if !l.tbl.Profile().Sorted {
		return l.latestByWindow(ctx, log, n, time.Now())
	}
	var out []Entry[T]
	for e, err := range l.merged(ctx, l.sources(log, l.span(), n)) {
		if err != nil {
			return nil, err
		}
		if out = append(out, e); len(out) == n {
			break
		}
	}
	return out, nil
}

// Latest's windows on a service without key order: the first, and the
// longest before the last window, which has no lower bound.
const (
	firstWindow = time.Second
	lastWindow  = 100 * 365 * 24 * time.Hour
)

// latestByWindow is Latest for a service whose queries return entries in
// no key order. It reads the entries appended since now-w (the RowKeys
// below bound(now-w): later times have smaller keys, so entries from
// clocks ahead of now are included) for a window w that grows, each step
// reading only the slice of keys the previous step did not, until n are
// read or the window has no lower bound; every entry newer than the
// window's start has then been read, so the n smallest RowKeys read are
// the n newest of the log.
func (l *Log[T]) latestByWindow(ctx context.Context, log string, n int, now time.Time) ([]Entry[T], error) {
	var got []table.Entity[T]
	read := l.pre // the log's keys below it were read
	for w := firstWindow; ; {
		last := w > lastWindow || now.Add(-w).Before(minTime)
		next := l.end()
		if !last {
			next = l.bound(now.Add(-w))
		}
		for e, err := range keycursor.FanOut(ctx, l.sources(log, table.RowKeyRange(read, next), 0), &table.FanOutOptions{Concurrency: l.buckets}) {
			if err != nil {
				return nil, err
			}
			got = append(got, e)
		}
		if len(got) >= n || last {
			break
		}
		read = next
		// Grow with the rate seen: a window that found k entries is
		// widened to about 2n/k times itself (at least twice, at most
		// 1,024 times); one that found none, 32 times.
		grow := time.Duration(32)
		if k := len(got); k > 0 {
			grow = time.Duration(min(max(2, (2*n+k-1)/k), 1024))
		}
		if w > lastWindow/grow {
			w = lastWindow + 1
		} else {
			w *= grow
		}
	}
	slices.SortFunc(got, func(a, b table.Entity[T]) int {
		return cmp.Or(keys.Compare(a.RowKey, b.RowKey), keys.Compare(a.PartitionKey, b.PartitionKey))
	})
	out := make([]Entry[T], 0, min(n, len(got)))
	for _, e := range got[:min(n, len(got))] {
		en, err := l.entry(e)
		if err != nil {
			return nil, err
		}
		out = append(out, en)
	}
	return out, nil
}

// sources are the queries of log's buckets, each for the entries that
// match filter (besides the partition), at most limit (0 for all).
func (l *Log[T]) sources(log string, filter table.Filter, limit int) []keycursor.Source[T] {
	srcs := make([]keycursor.Source[T], l.buckets)
	for b := range l.buckets {
		srcs[b] = keycursor.Source[T]{Table: l.tbl, Query: &table.Query{Filter: table.And(table.PartitionKey(l.partition(log, b)), filter), Limit: limit}}
	}
	return srcs
}

// merged yields the entries of srcs (sources' queries), newest first: all
// in parallel, merged by RowKey (keycursor.FanOut with ByRowKey) and
// lazily, fetching each bucket's pages as the merge needs them.
func (l *Log[T]) merged(ctx context.Context, srcs []keycursor.Source[T]) iter.Seq2[Entry[T], error] {
	return l.entries(keycursor.FanOut(ctx, srcs, &table.FanOutOptions{ByRowKey: true, Concurrency: l.buckets}))
}

// Range yields the entries of log appended in [from, to), newest first,
// lazily: one range query per bucket, one round trip per page of each
// (opts.PageSize entries, 1,000 by default), merged in time order. On a
// service without key order (Cosmos DB) each bucket's entries of the
// range are read whole and sorted before the first is yielded
// ([table.FanOutOptions] Ordered). A nil opts means defaults.
func (l *Log[T]) Range(ctx context.Context, log string, from, to time.Time, opts *RangeOptions) iter.Seq2[Entry[T], error] {
	return obs.Seq2(l.obs, ctx, opRange, l.tbl.Name(), log, func(ctx context.Context) iter.Seq2[Entry[T], error] {
		return l.rangeOf(ctx, log, from, to, opts)
	})
}

// rangeOf is Range, without its span.
func (l *Log[T]) rangeOf(ctx context.Context, log string, from, to time.Time, opts *RangeOptions) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		if err := l.checkRange(log, from, to); err != nil {
			yield(Entry[T]{}, err)
			return
		}
		n, err := keycursor.PageSize(ErrInvalid, pageSize(opts))
		if err != nil {
			yield(Entry[T]{}, err)
			return
		}
		// Newest first: entries of [from, to) have keys in [bound(to),
		// bound(from)).
		srcs := l.sources(log, table.RowKeyRange(l.bound(to), l.bound(from)), 0)
		for _, s := range srcs {
			s.Query.PageSize = n
		}
		for e, err := range l.merged(ctx, srcs) {
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// checkRange checks the arguments of Range and RangePage.
func (l *Log[T]) checkRange(log string, from, to time.Time) error {
	if err := checkTime(from); err != nil {
		return err
	}
	if err := checkTime(to); err != nil {
		return err
	}
	if !from.Before(to) {
		return fmt.Errorf("%w: from %v is not before to %v", ErrInvalid, from, to)
	}
	return l.checkLog(log)
}

// Trim deletes the entries of log appended before before, with
// [table.Table.Submit]: page by page, one query per page and one transaction per
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
		q := &table.Query{Filter: table.And(table.PartitionKey(pk), table.RowKeyRange(l.bound(before), l.end())), Select: []string{"RowKey"}, Limit: table.MaxPageSize}
		for stalled := 0; ; {
			var ops []table.Op
			for k, err := range l.tbl.QueryEntities(ctx, q) {
				if err != nil {
					return deleted, err
				}
				ops = append(ops, l.tbl.DeleteOp(k.PartitionKey, k.RowKey, azcore.ETagAny))
			}
			if len(ops) == 0 {
				break
			}
			res, err := l.tbl.Submit(ctx, ops, &table.BatchOptions{ContinueOnError: true})
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
func (l *Log[T]) entries(seq iter.Seq2[table.Entity[T], error]) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		for k, err := range seq {
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			e, err := l.entry(k)
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

func (l *Log[T]) entry(k table.Entity[T]) (Entry[T], error) {
	rest, ok := strings.CutPrefix(k.RowKey, l.pre)
	stamp, _, cut := strings.Cut(rest, "-") // InvertedTicks, then "-" (see rowKey)
	if !ok || !cut {
		return Entry[T]{}, fmt.Errorf("logtail: RowKey %q in partition %q is not a log entry's", k.RowKey, k.PartitionKey)
	}
	t, err := keys.ParseInvertedTicks(stamp)
	if err != nil {
		return Entry[T]{}, fmt.Errorf("logtail: RowKey %q in partition %q: %w", k.RowKey, k.PartitionKey, err)
	}
	return Entry[T]{Entity: k, Time: t}, nil
}

// RangeOptions configures Range and RangePage. A nil *RangeOptions
// means defaults.
type RangeOptions struct {
	// PageSize is the most entries RangePage returns, and the most Range
	// reads from each bucket per round trip: 1 to table.MaxPageSize
	// (1,000). Default (0): 1,000. Negative or larger is ErrInvalid,
	// nothing sent.
	PageSize int
}

// RangePage returns one page of Range: the next opts.PageSize entries of
// log appended in [from, to), newest first, after cursor ("" for the
// first page), and the cursor of the page after it (Next, empty when the
// range is done). The cursor is a [table.Cursor]: a string to keep
// anywhere and resume from in another process, with the same log, from
// and to (another range's cursor is ErrInvalid); plain, it shows the last
// entry's RowKey (its time), sealed with the table's CursorKey nothing
// (see the package documentation, "Trust"). Entries appended meanwhile to
// the part already read are not returned. 1 round trip per bucket (in
// parallel) when the service returns full pages; a page of 1,000 may be
// followed by an empty one.
func (l *Log[T]) RangePage(ctx context.Context, log string, from, to time.Time, cursor table.Cursor, opts *RangeOptions) (page table.Page[Entry[T]], err error) {
	ctx, sp := l.obs.Start(ctx, opRangePage, l.tbl.Name(), log)
	defer func() { sp.End(err) }()
	if err := l.checkRange(log, from, to); err != nil {
		return page, err
	}
	lo, hi := l.bound(to), l.bound(from)
	m := keycursor.Merged[T]{
		Listing:     keycursor.New(keycursor.KeyOf(l.tbl), l.tbl.Name(), "logtail", l.pre, log, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano)),
		ByRowKey:    true,
		Concurrency: l.buckets,
		In:          func(k []string) bool { return k[0] >= lo && k[0] < hi },
		Invalid:     ErrInvalid,
		What:        fmt.Sprintf(" (log %.40q)", log),
		Sources: func(context.Context) ([]keycursor.Source[T], error) {
			return l.sources(log, table.RowKeyRange(lo, hi), 0), nil
		},
	}
	p, err := m.Page(ctx, cursor, pageSize(opts))
	if err != nil {
		return page, err
	}
	for _, k := range p.Items {
		e, err := l.entry(k)
		if err != nil {
			return table.Page[Entry[T]]{}, err
		}
		page.Items = append(page.Items, e)
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

// The operations of this package, for telemetry.
var (
	opAppend    = obs.Write("logtail.Append")
	opTrim      = obs.Write("logtail.Trim")
	opLatest    = obs.Read("logtail.Latest")
	opRange     = obs.Read("logtail.Range")
	opRangePage = obs.Read("logtail.RangePage")
)
