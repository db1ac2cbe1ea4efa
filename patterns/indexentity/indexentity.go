package indexentity

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strconv"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

var (
	// ErrInvalid is the sentinel for a request rejected before the
	// network for a reason of this package: a bad name, value function or
	// Options, a lookup of the same-partition store without a
	// PartitionKey, a missing ETag (also [table.ErrNoETag]), and keys this
	// package cannot take (also [table.ErrInvalidKey]): keys the service
	// would refuse, an empty PartitionKey, keys under
	// "~tk~" (the rows patterns keep, index entities among
	// them), a value whose index key or blob name would be too long. It
	// matches [table.ErrInvalid]. Values the service would refuse are the
	// table package's other sentinels (which match table.ErrInvalid too);
	// a list too large for an index entity, or for MaxBlobSize, is
	// [table.ErrTooLarge].
	ErrInvalid = invalid.New("indexentity: invalid request")
	// ErrCorrupt: a list read back is not one this Index writes: an index
	// entity or blob holding an id that is not the id of an entity this
	// Index accepts (see the package documentation's Trust), a list
	// property that is not a string, a blob that is not UTF-8 text or is
	// larger than MaxBlobSize (then also table.ErrTooLarge). Lookups and
	// writes return it instead of following such a list.
	ErrCorrupt = errors.New("indexentity: a list read back is not one this index writes")
)

// MaxBlobSize is the most bytes of a list's blob (the blob store): 256
// MiB, what one request uploads (millions of ids). A write that would make
// a list larger fails with table.ErrTooLarge before the network, and a
// read refuses a blob that declares or holds more (ErrCorrupt and
// table.ErrTooLarge) before reading past it: no read allocates more than
// this for a list.
const MaxBlobSize = 256 << 20

// Options configures an Index. A nil *Options means defaults: the
// same-partition store. Where the lists live is chosen by Table and Blobs:
// neither for the same-partition store (strong), Table for index entities
// in another partition or table (eventual), Blobs for one blob per value
// (eventual).
type Options struct {
	// Table, when set, keeps the index entities in this table, one
	// partition per value, outside the entities' partitions (the guide's
	// option 3: eventually consistent, organisation-wide lookups). It may be
	// the entities' own table. Requires Queue.
	Table *aztables.Client
	// Blobs, when set, keeps each value's list in a blob of this container
	// (the guide's option 1: eventually consistent, lists of any size).
	// Requires Queue.
	Blobs *container.Client
	// Queue carries the intents that keep an eventual store's lists: its
	// Options.Tables must hold the entities' table client (the one tbl
	// uses), and a Worker must run Handler. Required with Table or Blobs;
	// not allowed without them.
	Queue *eventual.Queue
	// Retry is the policy of the ETag loops (another writer changed a list
	// or, for writes with azcore.ETagAny, the entity between the read and
	// the write) and of the worker's reconciling passes. Its Retryable is
	// ignored. Default: full jitter.
	Retry *retry.Policy
	// Concurrency is the most point reads Find has in flight. Default: 8.
	Concurrency int
	// Telemetry receives the spans, metrics and log records of the
	// Index's operations. Default (nil): the global OpenTelemetry
	// providers and slog.Default().
	Telemetry *table.Telemetry
}

// defaultRetry is the default policy of the ETag loops: retry.Default's
// delays (100 ms to 5 s) with full jitter, and up to 10 retries. Full
// jitter drains a burst of writers contending for one index entity fastest
// (16 at once: all committed in 0.38 s against 0.79 s with the guide's
// ±20%, BENCHMARKS.md), as package retry's simulation predicts. Under
// sustained load the two are equal within the spread of the runs (16
// writers: a median of 167 adds per second with the guide's jitter, 163
// with full jitter, over 11 runs each): the waits keep few writers active,
// and a hot index entity takes about as many adds per second as one writer
// makes.
var defaultRetry = retry.Policy{Default: retry.Default.Default, Min: retry.Default.Min, Max: retry.Default.Max, MaxRetries: 10, FullJitter: true}

// store says where an Index keeps its lists.
type store int

const (
	samePartition store = iota
	otherTable
	blobs
)

// Index is the guide's index entities pattern over a table of entities of
// type T: for each value of its value function, the list of the ids of the
// entities that have it. It is safe for concurrent use.
type Index[T any] struct {
	tbl   *table.Table[T]
	ent   *table.Table[table.Dynamic] // the entities as property bags: ETags and write histories
	ix    *table.Table[table.Dynamic] // the index entities (nil for the blob store)
	blobs *container.Client
	q     *eventual.Queue
	kind  eventual.Kind[change]
	store store
	name  string
	value func(*T) string           // the indexed value, as its lists key it (keyOf)
	key   func(any) (string, error) // a lookup's value, checked and keyed
	retry retry.Policy
	conc  int
	obs   *obs.Obs

	maxBlob int                     // MaxBlobSize; tests lower it
	hook    func(step string) error // tests: a crash at a step boundary
}

// ID identifies an entity.
type ID struct {
	PartitionKey, RowKey string
}

// Result reports a write: the core's [table.Result] (the entity's new
// ETag, Verified) and what the Index adds.
type Result struct {
	table.Result
	// Conflicts counts the times the write started again because another
	// writer changed what it had read (a 412 or 409 on a list, or on the
	// entity of an Update with azcore.ETagAny).
	Conflicts int
	// Intent is the id of the intent that brings the lists of an eventual
	// store in line with the write; empty for the same-partition store and
	// for writes that change no indexed value.
	Intent string
}

// New returns an Index over the entities of tbl, which stores them as they
// are (the Index keeps its lists beside them): name names the index, for
// its keys, blobs and intents ("LastName"), and value returns the indexed
// value of an entity (e.LastName), a string, a whole number or a bool as T
// holds it (V: a string field's type, or int32 for an int32 field). Both
// are required, so they are parameters. A nil opts means defaults: the
// same-partition store. It sends nothing.
//
// A value is keyed as its text: a string as it is, a number in decimal, a
// bool as "true" or "false" (so an index of strings and one of the same
// values as numbers keep the same lists). Find and FindIDs take a value of
// type V.
//
// name is 1 to 48 ASCII letters, digits, '_' or '-' (so that the intents'
// kind name, "indexentity:" + table name + ":" + name, fits eventual's 128
// characters); keep it fixed: another name is another index. value must
// depend only on the entity's stored properties, be deterministic, and be
// safe for concurrent use.
func New[T any, V interface {
	~string | ~bool | ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}](tbl *table.Table[T], name string, value func(*T) V, opts *Options) (*Index[T], error) {
	if tbl == nil || value == nil {
		return nil, fmt.Errorf("%w: a table and a value function are required", ErrInvalid)
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	x := &Index[T]{tbl: tbl, blobs: opts.Blobs, q: opts.Queue, name: name, retry: defaultRetry, conc: opts.Concurrency, maxBlob: MaxBlobSize, obs: obs.New((*obs.Config)(opts.Telemetry))}
	x.value = func(v *T) string { return keyOf(value(v)) }
	x.key = func(v any) (string, error) {
		w, ok := v.(V)
		if !ok {
			return "", fmt.Errorf("%w: index %s: a lookup's value is %T (%.40v), want %v, the type of the indexed value", ErrInvalid, name, v, v, reflect.TypeFor[V]())
		}
		return keyOf(w), nil
	}
	if opts.Retry != nil {
		x.retry = *opts.Retry
	}
	switch {
	case opts.Concurrency < 0:
		return nil, fmt.Errorf("%w: Concurrency %d", ErrInvalid, opts.Concurrency)
	case opts.Concurrency == 0:
		x.conc = 8
	}
	var err error
	if x.ent, err = table.New[table.Dynamic](tbl.Client(), nil); err != nil {
		return nil, keyErr(err)
	}
	switch {
	case opts.Table != nil && opts.Blobs != nil:
		return nil, fmt.Errorf("%w: give Options.Table or Options.Blobs, not both", ErrInvalid)
	case opts.Table != nil:
		x.store = otherTable
		if x.ix, err = table.New[table.Dynamic](opts.Table, nil); err != nil {
			return nil, keyErr(err) // a nil Options.Table client is invalid
		}
		x.ix = reserved.Table(x.ix) // index entities are reserved rows
	case opts.Blobs != nil:
		x.store = blobs
	default:
		x.ix = reserved.Table(x.ent) // index entities are reserved rows
		if opts.Queue != nil {
			return nil, fmt.Errorf("%w: Options.Queue is for the eventual stores (Table or Blobs); the same-partition store writes its lists in the entities' transactions", ErrInvalid)
		}
	}
	if x.store != samePartition {
		if opts.Queue == nil {
			return nil, fmt.Errorf("%w: the eventual stores (Table, Blobs) need Options.Queue", ErrInvalid)
		}
		x.kind = eventual.NewKind[change]("indexentity:" + tbl.Name() + ":" + name)
	}
	return x, nil
}

// keyOf is v as the lists key it: its text (a number in decimal).
func keyOf[V any](v V) string {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return strconv.FormatBool(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	}
	return strconv.FormatUint(rv.Uint(), 10) // New's constraint leaves the unsigned kinds
}

// validName checks an index name: it goes into keys, blob names and kind
// names unescaped, and a kind name has at most 128 characters (12 for
// "indexentity:", 63 for a table name, 1 for ':').
func validName(name string) error {
	if name == "" || len(name) > 48 {
		return fmt.Errorf("%w: index name %q must be 1 to 48 characters", ErrInvalid, name)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: index name %q may hold only ASCII letters, digits, '_' and '-'", ErrInvalid, name)
		}
	}
	return nil
}

// Name returns the index's name.
func (x *Index[T]) Name() string { return x.name }

// listKey returns the keys of the index entity of value: in partition pk
// (the same-partition store) or in a partition of its own. It validates
// them as the service would.
func (x *Index[T]) listKey(pk, value string) (lpk, lrk string, err error) {
	k := keys.Join(reserved.IndexKeyPrefix, x.name, value)
	lpk, lrk = pk, k
	if x.store != samePartition {
		lpk, lrk = k, reserved.IndexKeyPrefix
	}
	if err := keys.Validate(k); err != nil {
		return "", "", fmt.Errorf("%w: the key of value %.40q of index %s: %w", ErrInvalid, value, x.name, err)
	}
	return lpk, lrk, nil
}

// blobName returns the name of value's blob.
func (x *Index[T]) blobName(value string) (string, error) {
	n := keys.Join(x.name, value)
	if err := keys.Validate(n); err != nil { // at most 1,024 characters, as blob names
		return "", fmt.Errorf("%w: the blob name of value %.40q of index %s: %w", ErrInvalid, value, x.name, err)
	}
	return n, nil
}

// checkKeys checks the keys of an entity this Index writes, or reads by an
// id from a list: valid keys with a PartitionKey, neither under
// "~tk~" (the rows patterns keep, index entities among
// them). Its errors match ErrInvalid and table.ErrInvalidKey.
func checkKeys(pk, rk string) error {
	if err := fieldmodel.CheckKeys(pk, rk); err != nil {
		return fmt.Errorf("indexentity: %w", invalid.Mark(ErrInvalid, err))
	}
	return nil
}

// keyErr makes a validation error of the core (keys checked before the
// network) match ErrInvalid too, and names the package.
func keyErr(err error) error {
	if err == nil || !errors.Is(err, table.ErrInvalid) || errors.Is(err, ErrInvalid) {
		return err
	}
	return fmt.Errorf("indexentity: %w", invalid.Mark(ErrInvalid, err))
}

// idOf is how entity (pk, rk) appears in a list.
func (x *Index[T]) idOf(pk, rk string) string {
	if x.store == samePartition {
		return rk
	}
	return keys.Join(pk, rk)
}

// parseID is the reverse of idOf, for a list of partition pk. It accepts
// only the ids this Index writes: those of entities whose keys pass
// checkKeys; in the same-partition store, of partition pk (the id is a
// RowKey, so a list can name no other partition); in the others, of any
// partition of the entities' table (the lists are organisation-wide).
// Anything else is ErrCorrupt.
func (x *Index[T]) parseID(pk, id string) (ID, error) {
	out := ID{pk, id}
	if x.store != samePartition {
		parts, err := keys.Split(id)
		if err != nil || len(parts) != 2 {
			return ID{}, fmt.Errorf("%w: index %s: a list holds %.80q, which is not an id", ErrCorrupt, x.name, id)
		}
		out = ID{parts[0], parts[1]}
	}
	if err := checkKeys(out.PartitionKey, out.RowKey); err != nil {
		return ID{}, fmt.Errorf("%w: index %s: a list holds %.80q, which is not the id of an entity this index writes", ErrCorrupt, x.name, id)
	}
	return out, nil
}

// checkIDs checks every id of a list read back in partition pk (see
// parseID).
func (x *Index[T]) checkIDs(pk string, ids []string) error {
	for _, id := range ids {
		if _, err := x.parseID(pk, id); err != nil {
			return err
		}
	}
	return nil
}

// step runs the test hook at a step boundary; an error is a crash there.
func (x *Index[T]) step(name string) error {
	if x.hook != nil {
		if err := x.hook(name); err != nil {
			return fmt.Errorf("indexentity: crashed before %s: %w", name, err)
		}
	}
	return nil
}

// list is one value's list as read: from an index entity (d, with its
// ETag and write history) or from a blob (etag).
type list struct {
	d     table.Dynamic
	found bool
	etag  azcore.ETag
	ids   []string
}

// readList reads the index entity (lpk, lrk): 1 round trip. A missing one
// is an empty list.
func (x *Index[T]) readList(ctx context.Context, lpk, lrk string) (list, error) {
	e, err := x.ix.Get(ctx, lpk, lrk, nil)
	if errors.Is(err, table.ErrNotFound) {
		return list{d: table.Dynamic{PartitionKey: lpk, RowKey: lrk}}, nil
	}
	if err != nil {
		return list{}, err
	}
	d := e.Value
	ids, err := listOf(d.Properties)
	if err == nil {
		err = x.checkIDs(lpk, ids)
	}
	if err != nil {
		return list{}, fmt.Errorf("indexentity: index entity (%q, %q): %w", lpk, lrk, err)
	}
	return list{d: d, found: true, etag: d.ETag, ids: ids}, nil
}

// listOp is the write that stores l's ids in its index entity: an insert
// when it was not found, a replace conditioned on the ETag read, a delete
// (conditioned likewise) when the list is empty; ok is false when nothing
// needs writing. A list too large for an entity is table.ErrTooLarge.
func (x *Index[T]) listOp(l list, value string) (op table.Op, ok bool, err error) {
	switch {
	case len(l.ids) == 0 && !l.found:
		return table.Op{}, false, nil
	case len(l.ids) == 0:
		return x.ix.DeleteOp(l.d.PartitionKey, l.d.RowKey, l.etag), true, nil
	}
	props, err := listProperties(x.ix.Profile(), l.d.PartitionKey, l.d.RowKey, l.ids, fmt.Sprintf("value %.40q of index %s in partition %q", value, x.name, l.d.PartitionKey))
	if err != nil {
		return table.Op{}, false, err
	}
	d := l.d
	d.Properties = props
	if l.found {
		op = x.ix.UpdateOp(d, l.etag, table.Replace)
	} else {
		op = x.ix.InsertOp(d)
	}
	return op, true, op.Err()
}

// FindIDs returns the ids of the entities whose value is value (of the
// type the value function returns: ErrInvalid, naming the type wanted,
// for another, nothing sent), in a stable order (sorted by their keys as the list stores them): 1 round
// trip (a point read of the index entity, or a blob download). The
// same-partition store keeps one list per partition, so partitionKey is
// required there; the eventual stores keep one list per value across the
// table, and partitionKey "" returns all of it (the guide's
// organisation-wide lookup), any other only that partition's ids.
//
// The same-partition store's list is exact. An eventual store's list may
// lag the entities: a write's ids appear or go when its intent has run,
// so it may hold the ids of entities that no longer have the value, and
// miss recent ones. Find checks each entity it reads. A list holding
// anything but ids this Index writes is ErrCorrupt (see the package
// documentation's Trust).
func (x *Index[T]) FindIDs(ctx context.Context, partitionKey string, value any) (_ []ID, err error) {
	ctx, sp := x.obs.Start(ctx, opFindIDs, x.tbl.Name(), partitionKey)
	defer func() { sp.End(err) }()
	key, err := x.key(value)
	if err != nil {
		return nil, err
	}
	return x.findIDs(ctx, partitionKey, key)
}

// findIDs is FindIDs of a value as the lists key it, without its span.
func (x *Index[T]) findIDs(ctx context.Context, partitionKey, value string) (_ []ID, err error) {
	var ids []string
	if partitionKey != "" {
		if err := checkKeys(partitionKey, ""); err != nil {
			return nil, err // already "indexentity: ..."
		}
	}
	switch x.store {
	case samePartition:
		if partitionKey == "" {
			return nil, fmt.Errorf("%w: the same-partition store keeps one list per partition: a lookup needs the PartitionKey", ErrInvalid)
		}
		fallthrough
	case otherTable:
		var lpk, lrk string
		if lpk, lrk, err = x.listKey(partitionKey, value); err != nil {
			return nil, err
		}
		var l list
		l, err = x.readList(ctx, lpk, lrk)
		ids = l.ids
	case blobs:
		var l list
		l, err = x.readBlob(ctx, value)
		ids = l.ids
	}
	if err != nil {
		return nil, err
	}
	out := make([]ID, 0, len(ids))
	for _, s := range ids {
		id, err := x.parseID(partitionKey, s)
		if err != nil {
			return nil, err
		}
		if partitionKey == "" || id.PartitionKey == partitionKey {
			out = append(out, id)
		}
	}
	return out, nil
}

// Find returns the entities whose value is value (of the type the value
// function returns, as for FindIDs): FindIDs, then a point
// read of each id, at most Options.Concurrency at a time, yielded in
// FindIDs's order, each with the ETag read. Each entity yielded had the
// value when it was read: ids whose entity is gone, or has another value
// now (an eventual store's lag, or a write between the lookup and the
// read), are left out. A failed read ends the sequence with its error. 1
// round trip plus 1 per id.
func (x *Index[T]) Find(ctx context.Context, partitionKey string, value any) iter.Seq2[table.Entity[T], error] {
	return obs.Seq2(x.obs, ctx, opFind, x.tbl.Name(), partitionKey, func(ctx context.Context) iter.Seq2[table.Entity[T], error] {
		return x.find(ctx, partitionKey, value)
	})
}

// find is Find, without its span.
func (x *Index[T]) find(ctx context.Context, partitionKey string, v any) iter.Seq2[table.Entity[T], error] {
	return func(yield func(table.Entity[T], error) bool) {
		value, err := x.key(v)
		var ids []ID
		if err == nil {
			ids, err = x.findIDs(ctx, partitionKey, value)
		}
		if err != nil {
			yield(table.Entity[T]{}, err)
			return
		}
		// nil for an id whose entity is gone or has another value now.
		read := func(ctx context.Context, id ID) (*table.Entity[T], error) {
			e, err := x.tbl.Get(ctx, id.PartitionKey, id.RowKey, nil)
			switch {
			case errors.Is(err, table.ErrNotFound):
				return nil, nil
			case err != nil:
				return nil, err
			case x.value(&e.Value) != value:
				return nil, nil
			}
			return &e, nil
		}
		for e, err := range prefetch.Map(ctx, prefetch.Slice(ids), x.conc, read) {
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("indexentity: lookup of %.40q: %w", value, ctx.Err())
				}
				yield(table.Entity[T]{}, err)
				return
			}
			if e != nil && !yield(*e, nil) {
				return
			}
		}
	}
}

// The operations of this package, for telemetry.
var (
	opInsert = obs.Write("indexentity.Insert")
	opUpdate = obs.Write("indexentity.Update")
	opDelete = obs.Write("indexentity.Delete")

	// The ops forms read; the change is sent by Apply.
	opInsertOps = obs.Read("indexentity.InsertOps")
	opUpdateOps = obs.Read("indexentity.UpdateOps")
	opDeleteOps = obs.Read("indexentity.DeleteOps")
	opFindIDs   = obs.Read("indexentity.FindIDs")
	opFind      = obs.Read("indexentity.Find")
)

// partitionOf is v's PartitionKey in tbl, for a span ("" when tbl cannot
// give it).
func partitionOf[T any](tbl *table.Table[T], v *T) string {
	pk, _, _ := fieldmodel.TableKeys(tbl, v)
	return pk
}
