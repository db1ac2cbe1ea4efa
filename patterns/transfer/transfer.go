package transfer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
)

var (
	// ErrInvalid matches every error of a request this package refuses
	// before the network (bad options, a prefix, a table), and, through
	// ErrCorrupt, an export that fails its checks. It matches
	// table.ErrInvalid.
	ErrInvalid = invalid.New("transfer: invalid request")
	// ErrCorrupt is an export that cannot be trusted: a manifest or chunk
	// over its size cap, a chunk whose SHA-256 or size differs from its
	// manifest's, a malformed line, an unexpected blob name. Nothing from
	// the chunk at fault was written. It matches ErrInvalid.
	ErrCorrupt = fmt.Errorf("%w: export corrupt", ErrInvalid)
	// ErrExists is an Export to a prefix that already holds an export
	// (Options.Resume continues an unfinished one). It matches ErrInvalid.
	ErrExists = fmt.Errorf("%w: an export exists at this prefix", ErrInvalid)
	// ErrRejected is returned, with the Summary, by Import and Copy when
	// the target cannot hold some entities (Summary.Rejects names each):
	// everything else was written.
	ErrRejected = errors.New("transfer: entities rejected by the target")
	// ErrMismatch is returned, with the Summary, by Verify when the two
	// sides differ (Summary.Missing, Extra, Changed).
	ErrMismatch = errors.New("transfer: tables differ")
)

// Options configures every verb of the package (Export, Import, Copy,
// Verify, their shared and set forms). A nil *Options means the defaults.
// Fields a verb does not use are ignored by it; those of a set's verbs
// apply to each of its tables.
type Options struct {
	// From and To bound the PartitionKeys read (Export, Copy, Verify):
	// From <= PartitionKey < To. Default (""): unbounded.
	From, To string
	// Since, when not zero, exports or copies only the entities whose
	// Timestamp is at or after it: an incremental export (Table Storage
	// only; Cosmos DB refuses Timestamp filters: table.ErrUnsupported).
	Since time.Time
	// Ranges splits the PartitionKey range into at most this many ranges,
	// read in parallel (Export, Copy), found by single-row probes. Default
	// (0 or 1): one range.
	Ranges int
	// Concurrency is the most ranges read at once (Export, Copy) and the
	// most transactions in flight (Import, Copy). Default: 4.
	Concurrency int
	// ChunkBytes is the uncompressed size at which Export closes a chunk.
	// A chunk ends at a page boundary (so that an export resumes from a
	// cursor), and pages are of ChunkBytes/4096 entities (1 to 1,000), so
	// a chunk of entities of about 1 KiB passes it by a quarter at most.
	// Default: 8 MiB.
	ChunkBytes int
	// Resume continues an unfinished Export at the prefix (its manifest
	// must be of the same table, range and Since) or an Import from its
	// checkpoint. Default: an Export refuses a prefix that holds one
	// (ErrExists); an Import starts from the first chunk.
	Resume bool
	// Progress, if set, is called after each chunk (Export, Import) or
	// transaction (Copy) is durable in the target, one call at a time.
	Progress func(Progress)
	// MaxListed bounds the keys Summary lists per kind (Rejects, Missing,
	// Extra, Changed); the counts stay exact. Default: 1000.
	MaxListed int
	// Blobs, when set, is where the source table's rows keep their large
	// values (patterns/largeentity): Export and Copy carry the blob each
	// pointer property names with its row, read and checked as the
	// Store's reads check it (see Blobs in the package doc), and Verify
	// compares the first table's values by size and SHA-256, not by blob
	// name. Copy and Verify need TargetBlobs with it.
	Blobs *Blobs
	// TargetBlobs is where Import and Copy write those blobs, before the
	// rows that point at them, under the names the target's Store gives
	// them (pointers renamed when the Prefixes differ); an Import of an
	// export made with Blobs needs it. For Verify and VerifyExport, the
	// second table's blobs: each one a pointer names is read and checked.
	TargetBlobs *Blobs
	// Rename, if set, names the target table of each table of a set
	// (ImportTables, VerifyExportTables) from its exported name. Default:
	// the same name.
	Rename func(exported string) string

	hook func(step string) error // tests: a crash at a step boundary
}

func (o *Options) orDefault() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Concurrency <= 0 {
		v.Concurrency = 4
	}
	if v.ChunkBytes <= 0 {
		v.ChunkBytes = 8 << 20
	}
	if v.MaxListed <= 0 {
		v.MaxListed = 1000
	}
	if v.Ranges <= 0 {
		v.Ranges = 1
	}
	return v
}

func (o *Options) check() error {
	if o == nil {
		return nil
	}
	if o.To != "" && o.From >= o.To {
		return fmt.Errorf("%w: range From %.40q is not before To %.40q", ErrInvalid, o.From, o.To)
	}
	if o.ChunkBytes > maxChunkRaw/2 {
		return fmt.Errorf("%w: ChunkBytes %d is more than %d", ErrInvalid, o.ChunkBytes, maxChunkRaw/2)
	}
	if o.Ranges > maxRanges {
		return fmt.Errorf("%w: Ranges %d is more than %d", ErrInvalid, o.Ranges, maxRanges)
	}
	if err := o.Blobs.check("Blobs"); err != nil {
		return err
	}
	return o.TargetBlobs.check("TargetBlobs")
}

// bothBlobs refuses Blobs without TargetBlobs and the reverse (Copy,
// Verify: a row's pointers are carried, or compared, on both sides or on
// neither).
func (o *Options) bothBlobs() error {
	if (o.Blobs == nil) != (o.TargetBlobs == nil) {
		return fmt.Errorf("%w: Blobs and TargetBlobs go together", ErrInvalid)
	}
	return nil
}

// step runs the test hook at a step boundary; an error is a crash there.
func (o *Options) step(name string) error {
	if o.hook != nil {
		return o.hook(name)
	}
	return nil
}

// Key names an entity.
type Key struct {
	PartitionKey, RowKey string
}

// Reject is an entity the target cannot hold, and why.
type Reject struct {
	Key
	// Reason is the check it failed (a key too long for the profile, a
	// reserved property name, an entity too large, or the service's
	// rejection of that entity alone).
	Reason string
}

// Summary is what a transfer did. Every verb fills Entities, Bytes,
// Started and Ended; the rest as documented per field.
type Summary struct {
	// Entities is the number of entities exported, written (Import,
	// Copy; rejects not counted) or compared (Verify: of the first side).
	Entities int64
	// Bytes is the size of their lines (uncompressed).
	Bytes int64
	// Chunks is the number of chunks written (Export) or read (Import,
	// Verify of an export) in this call.
	Chunks int
	// Transactions is the number of write transactions sent (Import,
	// Copy): their round trips.
	Transactions int
	// Rejects lists the entities the target cannot hold (Import, Copy),
	// and those whose blobs could not be carried (Export: exported
	// without them; Import, Copy: not written), at most
	// Options.MaxListed; Rejected counts them all.
	Rejects  []Reject
	Rejected int
	// Blobs and BlobBytes count the blobs carried with their rows
	// (Options.Blobs, TargetBlobs): exported, written or checked.
	Blobs, BlobBytes int64
	// Missing, Extra and Changed list (Verify, at most Options.MaxListed
	// each) the keys of the first side absent from the second, of the
	// second absent from the first, and present in both with other
	// content; Differences counts them all.
	Missing, Extra, Changed []Key
	Differences             int
	// Table names the table of a Summary that ExportTables (the table
	// exported), ImportTables or VerifyExportTables (the target table)
	// returns; the single-table verbs leave it empty.
	Table string
	// Started and Ended bound the call; for Export, Started is the
	// export's start (the first call's, when resumed), the watermark of
	// the next incremental export (Options.Since).
	Started, Ended time.Time
}

// Progress is a transfer's progress so far.
type Progress struct {
	// Entities and Bytes done.
	Entities, Bytes int64
	// Total is the number of entities to do, when known (Import from its
	// manifest, ImportTables from its tables'); 0 when not.
	Total int64
	// Elapsed since the call started; Rate is Entities per second over
	// it; ETA the estimated time left (0 when Total is unknown).
	Elapsed time.Duration
	Rate    float64
	ETA     time.Duration
}

// tracker counts progress and serialises calls of Options.Progress.
type tracker struct {
	mu       sync.Mutex
	fn       func(Progress)
	start    time.Time
	total    int64
	entities int64
	bytes    int64
}

func newTracker(fn func(Progress), total int64) *tracker {
	return &tracker{fn: fn, start: time.Now(), total: total}
}

// skip takes n entities done before this call out of the total.
func (t *tracker) skip(n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total = max(t.total-n, 0)
}

func (t *tracker) add(entities, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entities += entities
	t.bytes += bytes
	if t.fn != nil {
		t.fn(progressOf(t.entities, t.bytes, t.total, t.start))
	}
}

// progressOf is the Progress of entities and bytes done since start, of
// total (0: unknown).
func progressOf(entities, bytes, total int64, start time.Time) Progress {
	p := Progress{Entities: entities, Bytes: bytes, Total: total, Elapsed: time.Since(start)}
	if s := p.Elapsed.Seconds(); s > 0 {
		p.Rate = float64(p.Entities) / s
	}
	if p.Total > p.Entities && p.Rate > 0 {
		p.ETA = time.Duration(float64(p.Total-p.Entities) / p.Rate * float64(time.Second))
	}
	return p
}

// listed collects keys up to a cap, counting all.
type listed struct {
	mu   sync.Mutex
	max  int
	rej  []Reject
	nrej int
}

// summarise sets sum's Rejects and Rejected from l.
func (l *listed) summarise(sum Summary) Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	sum.Rejects, sum.Rejected = slices.Clone(l.rej), l.nrej
	return sum
}

func (l *listed) reject(r Reject) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nrej++
	if len(l.rej) < l.max {
		l.rej = append(l.rej, r)
	}
}

// source returns a Table[Dynamic] of c that reads every row (reserved
// rows included) and every property.
func source(c *aztables.Client) (*table.Table[table.Dynamic], error) {
	t, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		return nil, invalid.Mark(ErrInvalid, err)
	}
	return reserved.Table(t), nil
}

// checkSince refuses Since on a service whose Timestamp filters match
// nothing (Cosmos DB), before any request.
func checkSince(t *table.Table[table.Dynamic], since time.Time) error {
	if !since.IsZero() && !t.Profile().TimestampFilters {
		return fmt.Errorf("transfer: Since on %s, whose Timestamp filters match nothing: %w", t.Profile().Name, table.ErrUnsupported)
	}
	return nil
}

// target returns a Table[Dynamic] of c that may write every row the
// patterns write (reserved keys and properties).
func target(c *aztables.Client) (*table.Table[table.Dynamic], error) {
	return source(c)
}

// query is the query of one range.
func query(from, to string, since time.Time, cursor table.Cursor) *table.Query {
	var fs []table.Filter
	if from != "" {
		fs = append(fs, table.Ge("PartitionKey", from))
	}
	if to != "" {
		fs = append(fs, table.Lt("PartitionKey", to))
	}
	if !since.IsZero() {
		fs = append(fs, table.Ge("Timestamp", since.UTC()))
	}
	q := &table.Query{Select: []string{"*"}, IncludeReserved: true, Cursor: cursor}
	if len(fs) > 0 {
		q.Filter = table.And(fs...)
	}
	return q
}

// wrap gives an SDK or core error its context, secrets removed.
func wrap(err error, format string, args ...any) error {
	return fmt.Errorf("transfer: "+format+": %w", append(args, redact.Error(err))...)
}

// writer writes entities to a target table, checking each against the
// target's profile before sending: what it cannot hold is a Reject, never
// part of a transaction.
type writer struct {
	t     *table.Table[table.Dynamic]
	opts  *Options
	rej   *listed
	mu    sync.Mutex
	txns  int
	wrote int64
}

// write upserts (replace) ds into the target. It returns when every op
// is applied or rejected, or with the first error that is neither.
func (w *writer) write(ctx context.Context, ds []table.Dynamic) error {
	ops := make([]table.Op, 0, len(ds))
	keys := make([]Key, 0, len(ds)) // of ops
	for i := range ds {
		k := Key{ds[i].PartitionKey, ds[i].RowKey}
		op := w.t.UpsertOp(ds[i], table.Replace)
		if err := op.Err(); err != nil {
			w.rej.reject(Reject{Key: k, Reason: redact.Text(err.Error())})
			continue
		}
		ops, keys = append(ops, op), append(keys, k)
	}
	// A transaction one op of which the service refuses applies nothing:
	// that op is rejected, the others sent again. Each round takes out at
	// least one op, so this ends.
	for len(ops) > 0 {
		res, err := w.t.Submit(ctx, ops, &table.BatchOptions{Concurrency: w.opts.Concurrency, ContinueOnError: true})
		w.mu.Lock()
		w.txns += res.Transactions
		w.mu.Unlock()
		if err != nil && len(res.Ops) != len(ops) {
			return wrap(err, "writing to %s", w.t.Name())
		}
		var again []table.Op
		var againKeys []Key
		var fatal error
		for i, r := range res.Ops {
			switch {
			case r.Applied:
				w.mu.Lock()
				w.wrote++
				w.mu.Unlock()
			case errors.Is(r.Err, table.ErrNotApplied):
				again, againKeys = append(again, ops[i]), append(againKeys, keys[i])
			case refused(r.Err):
				w.rej.reject(Reject{Key: keys[i], Reason: redact.Text(r.Err.Error())})
			default:
				if fatal == nil {
					fatal = wrap(r.Err, "writing to %s", w.t.Name())
				}
			}
		}
		if fatal != nil {
			return fatal
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ops, keys = again, againKeys
	}
	return nil
}

// refused reports an error that is the service's definite refusal of one
// entity (a 400 or 413 answering its op), which no retry changes.
func refused(err error) bool {
	var e *table.Error
	if !errors.As(err, &e) || e.Unknown {
		return false
	}
	return e.StatusCode == 400 || e.StatusCode == 413
}
