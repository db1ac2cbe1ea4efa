package wideentity

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/fieldmodel"
	"github.com/tablekit/tablekit/internal/retrycore"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

const (
	// VersionProperty is the reserved property of every row of a wide
	// entity: the identity of the whole-entity write that wrote it. A read
	// accepts rows of one version only.
	VersionProperty = "TkWide"
	// PartsProperty is the reserved property of the header row: the
	// number of part rows.
	PartsProperty = "TkWideParts"
	// defaultParts is Options.Parts's default: 8 part rows hold as many
	// bytes as one transaction carries on Table Storage (4 MiB of text at
	// 2 bytes a character; Cosmos DB's transactions carry 2 MB) and about
	// 2,000 properties (8 × 251, less headroom).
	defaultParts = 8
)

var (
	// ErrInvalid is the sentinel for every request rejected before the
	// network: bad Options, a mode Update does not take, a property name
	// under reserved.PropertyPrefix or otherwise invalid
	// (fieldmodel.ValidName; also table.ErrInvalidEntity), a
	// table.Fields name the value does not hold, a write of a T without
	// keys, an invalid key (also table.ErrInvalidKey), a missing ETag
	// (also table.ErrNoETag), a value or limit the table package refuses
	// (also its sentinel: table.ErrTooLarge, table.ErrInvalidEntity). It
	// matches table.ErrInvalid.
	ErrInvalid = invalid.New("wideentity: invalid request")
	// ErrInconsistent: the rows in an entity's key range do not form one
	// version of a wide entity even after re-reading (see Options.Retry):
	// writers kept changing it during reads of several pages, or other
	// code wrote rows in its range.
	ErrInconsistent = errors.New("wideentity: the rows read do not form one version of a wide entity")
)

// Options configures a Store. A nil *Options means defaults.
type Options[T any] struct {
	// Parts is the number of part rows each entity is stored in, 1 to 99
	// (the operations of one transaction, the table's [table.Profile]
	// MaxBatchOps, less the header). Default: 8. A property's
	// part is keys.Bucket(name, Parts), so each part holds about 1/Parts
	// of the properties: allow headroom (the guide's 365 daily counts fit Parts
	// 2; 2,000 properties Parts 10). Keep it fixed for a table; see the
	// package documentation for what a change costs.
	Parts int
	// Keys returns the logical keys an entity is stored under, as
	// table.Options.Keys does for a table: for a T without key fields, or
	// keys computed from other fields. Default: T's key fields
	// ([fieldmodel.KeysOf]; table.Dynamic's PartitionKey and RowKey). A Store
	// whose T has neither can Get and Delete, but its writes fail with
	// ErrInvalid.
	Keys func(*T) (pk, rk string)
	// Retry is the policy for Modify's conflicts and for the re-reads of a
	// read that saw rows of two versions. Default: retry.Default.
	Retry *retry.Policy
	// Telemetry receives the spans, metrics and log records of the
	// Store's operations. Default (nil): the global OpenTelemetry
	// providers and slog.Default().
	Telemetry *table.Telemetry
}

// Store is the guide's wide entity pattern over a table: logical entities
// of type T, each stored as a header row and Options.Parts part rows of one
// partition, written in one entity group transaction and read with one
// range query. T is a struct (it may have more than 252 fields) or
// table.Dynamic for a property bag. It is safe for concurrent use.
type Store[T any] struct {
	tbl      *table.Table[table.Dynamic]
	keys     func(*T) (pk, rk string) // fieldmodel.KeyFunc; nil: keysErr
	keysErr  error
	parts    int
	retry    retry.Policy
	bag      bool // T is table.Dynamic
	pageSize int  // rows per page of a read; 0 for the service's maximum (tests set it)
	obs      *obs.Obs
}

// New returns a Store of entities of type T in tbl's table (required; a
// nil opts means defaults). It sends nothing. It fails with ErrInvalid for
// a nil table, a Parts outside 1..99, or a T that cannot be stored
// (also the table package's error: table.ErrInvalidEntity for a field
// type or name the codec refuses or a name under
// reserved.PropertyPrefix, table.ErrTooLarge when the fields always
// stored overflow a part). Writes take an entity's logical keys from T's
// key fields, or from Options.Keys; reads fill T's key fields with them
// and its Meta with the header's ETag and Timestamp.
func New[T any](tbl *table.Table[table.Dynamic], opts *Options[T]) (*Store[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: a table is required", ErrInvalid)
	}
	var o Options[T]
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Parts == 0:
		o.Parts = defaultParts
	case o.Parts < 1 || o.Parts > maxParts(tbl):
		return nil, fmt.Errorf("%w: Parts %d outside 1..%d", ErrInvalid, o.Parts, maxParts(tbl))
	}
	s := &Store[T]{tbl: reserved.Properties(tbl), parts: o.Parts, retry: retry.Default, obs: obs.New((*obs.Config)(o.Telemetry))}
	s.keys, s.keysErr = fieldmodel.KeyFunc(o.Keys)
	if o.Retry != nil {
		s.retry = *o.Retry
	}
	var zero T
	_, s.bag = any(zero).(table.Dynamic)
	if _, err := fieldmodel.Of[T](); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// Splitting the zero T checks its type and, since a struct's fields
	// other than pointers, times, []byte and omitempty ones are stored even
	// when zero, their names and how they spread over the parts, as every
	// write will.
	if _, err := s.split(fmt.Sprintf("New[%v]", reflect.TypeFor[T]()), zero, s.parts); err != nil {
		return nil, err
	}
	return s, nil
}

// Entity is a wide entity as read: the core's envelope (the logical keys,
// the header row's ETag, which every write changes and Update and Delete
// take, and the value) and the number of part rows it is stored in.
type Entity[T any] struct {
	table.Entity[T]
	// Parts is the number of part rows it is stored in.
	Parts int
}

// The row keys of logical entity rk: the header, then the parts, all
// starting with rk escaped and joined by keys.Join's delimiter, so that no other
// logical RowKey's rows share the range (see the package documentation).
func headerKey(rk string) string { return keys.Join(rk, "h") }

func partKey(rk string, parts, k int) string {
	return keys.Join(rk, "p", keys.Pad(uint64(parts), 2), keys.Pad(uint64(k), 2))
}

// rowRange is the RowKey range of rk's rows: every keys.Join(rk, ...).
func rowRange(rk string) (lo, hi string) {
	_, hi = keys.PrefixRange(rk)
	return keys.Join(rk, ""), hi
}

// partOf is the part that holds property name in a layout of parts.
func partOf(name string, parts int) int {
	k, _ := strconv.Atoi(keys.Bucket(name, parts))
	return k
}

// keysOf returns the logical keys v is written under, checked.
func (s *Store[T]) keysOf(op string, v *T) (pk, rk string, err error) {
	if s.keys == nil {
		return "", "", fmt.Errorf("wideentity: %s: %w", op, invalid.Mark(ErrInvalid, s.keysErr))
	}
	pk, rk = s.keys(v)
	return pk, rk, s.checkKeys(op, pk, rk)
}

// maxParts is the most part rows an entity of tbl may be stored in: one
// transaction's operations less the header (99).
func maxParts(tbl *table.Table[table.Dynamic]) int { return tbl.Profile().MaxBatchOps - 1 }

// checkKeys validates the keys before the network: the PartitionKey as
// the service does, the logical RowKey by its longest row key.
func (s *Store[T]) checkKeys(op, pk, rk string) error {
	if err := fieldmodel.CheckKeys(pk, headerKey(rk)); err != nil { // the logical RowKey is escaped into its rows'
		return fmt.Errorf("wideentity: %s: %w", op, invalid.Mark(ErrInvalid, err))
	}
	n := maxParts(s.tbl)
	if err := keys.Validate(partKey(rk, n, n-1)); err != nil {
		return fmt.Errorf("%w: %s: RowKey %.40q... is too long for its rows' keys: %w", ErrInvalid, op, rk, err)
	}
	return nil
}

func newVersion() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// properties returns v's properties, typed as its entity stores them.
func (s *Store[T]) properties(v T) (map[string]any, error) {
	if s.bag {
		return any(v).(table.Dynamic).Properties, nil
	}
	d, err := table.ToDynamic(v)
	return d.Properties, err
}

// split returns v's properties by part, for a layout of parts, checking
// names and each part's property count; errors name the operation where.
func (s *Store[T]) split(where string, v T, parts int) ([]map[string]any, error) {
	props, err := s.properties(v)
	if err != nil {
		return nil, fmt.Errorf("wideentity: %s: %w: %w", where, ErrInvalid, err)
	}
	out := make([]map[string]any, parts)
	for k := range out {
		out[k] = make(map[string]any, len(props)/parts+8)
	}
	for name, val := range props {
		if val == nil {
			continue // as a Dynamic writes it: no property
		}
		if err := fieldmodel.ValidName(name); err != nil {
			// The table is a view that writes reserved names: only this
			// Store's own may have one.
			return nil, fmt.Errorf("wideentity: %s: %w: %w", where, ErrInvalid, err)
		}
		out[partOf(name, parts)][name] = val
	}
	most := s.tbl.Profile().MaxProperties - 1 // less VersionProperty
	for k, p := range out {
		if len(p) > most {
			return nil, fmt.Errorf("wideentity: %s: %w: %w: part %d of %d would hold %d properties, more than a part row holds (%d): use more Parts",
				where, ErrInvalid, table.ErrTooLarge, k, parts, len(p), most)
		}
	}
	return out, nil
}

// stored is what a write needs to know of the stored entity.
type stored struct {
	parts  int         // its layout; 0 when there is no entity
	etag   azcore.ETag // the header's condition: "" for an insert, azcore.ETagAny, or an ETag
	header table.Dynamic
}

// replaceOps is the transaction that makes the entity parts (a whole-entity
// write): the header, inserted when cur.etag is empty and replaced on that
// condition otherwise, then deletes of cur's part rows when the layout
// changes, then the part rows. Every row gets a new version.
//
// The header comes first in every transaction of this package: a resend
// of a transaction whose response was lost fails at its first operation,
// which the table package verifies first and whose ETag alone it returns
// (table.OpResult), so a verified write returns the header's ETag.
func (s *Store[T]) replaceOps(pk, rk string, parts []map[string]any, cur stored) []table.Op {
	n, version := len(parts), newVersion()
	h := cur.header // as read, when it was: its Meta settles a lost response exactly
	h.PartitionKey, h.RowKey = pk, headerKey(rk)
	h.Properties = map[string]any{VersionProperty: version, PartsProperty: int32(n)}
	ops := make([]table.Op, 1, 1+cur.parts+n)
	if cur.etag == "" {
		ops[0] = s.tbl.InsertOp(h)
	} else {
		ops[0] = s.tbl.UpdateOp(h, cur.etag, table.Replace)
	}
	if cur.etag != "" && cur.parts != n {
		for k := range cur.parts {
			ops = append(ops, s.tbl.DeleteOp(pk, partKey(rk, cur.parts, k), azcore.ETagAny))
		}
	}
	for k, props := range parts {
		props[VersionProperty] = version
		row := table.Dynamic{PartitionKey: pk, RowKey: partKey(rk, n, k), Properties: props}
		if cur.etag != "" && cur.parts == n {
			ops = append(ops, s.tbl.UpdateOp(row, azcore.ETagAny, table.Replace))
		} else {
			ops = append(ops, s.tbl.InsertOp(row))
		}
	}
	return ops
}

// submit sends ops as one transaction after checking them and the limits,
// and returns the header's (the first op's) result.
func (s *Store[T]) submit(ctx context.Context, op, pk, rk string, ops []table.Op) (table.Result, error) {
	if err := s.check(op, pk, rk, ops); err != nil {
		return table.Result{}, err
	}
	res, err := s.tbl.Submit(ctx, table.Atomic(ops...), nil)
	if err != nil {
		return table.Result{}, fmt.Errorf("wideentity: %s (%q, %q): %w", op, pk, rk, err)
	}
	h := res.Ops[0]
	return table.Result{ETag: h.ETag, Verified: h.Verified}, nil
}

// check checks ops, the transaction of a write, and the limits of one
// transaction, before the network.
func (s *Store[T]) check(op, pk, rk string, ops []table.Op) error {
	for _, o := range ops {
		if err := o.Err(); err != nil {
			return fmt.Errorf("wideentity: %s (%q, %q): row %q: %w: %w", op, pk, rk, batchplan.RowKey(o), ErrInvalid, err)
		}
	}
	p := s.tbl.Profile()
	if len(ops) > p.MaxBatchOps {
		return fmt.Errorf("wideentity: %s (%q, %q): %w: %w: %d operations, more than one transaction holds (%d): a change of Parts needs the old and the new part rows in one transaction",
			op, pk, rk, ErrInvalid, table.ErrTooLarge, len(ops), p.MaxBatchOps)
	}
	if size := batchplan.Size(ops); size > p.MaxBatchSize {
		return fmt.Errorf("wideentity: %s (%q, %q): %w: %w: the transaction would be up to %d bytes, more than %s's %d",
			op, pk, rk, ErrInvalid, table.ErrTooLarge, size, p.Name, p.MaxBatchSize)
	}
	return nil
}

// change returns ops, the transaction of a write, as a table.Change,
// checked as submit checks it. A change built for the configured layout
// without a read (blind) explains the ErrNotFound of an entity that is
// missing or stored with another Parts.
func (s *Store[T]) change(op, pk, rk string, ops []table.Op, blind bool) (table.Change, error) {
	if err := s.check(op, pk, rk, ops); err != nil {
		return table.Change{}, err
	}
	c := table.Change{By: fmt.Sprintf("wideentity %s (%q, %q)", op, pk, rk), Ops: ops}
	if blind {
		c.Explain = func(_ int, err error) error {
			if !errors.Is(err, table.ErrNotFound) {
				return nil
			}
			return fmt.Errorf("wideentity: %s (%q, %q): the entity does not exist, or is stored with another Parts than this Store's %d (Update and Delete write the stored layout): %w", op, pk, rk, s.parts, err)
		}
	}
	return c, nil
}

// write sends the transaction build makes for the configured layout,
// conditioned on etag. When an operation answers 404 (the transaction then
// applied nothing), the entity is missing or has another layout: write
// reads the header and, for another layout, sends the transaction for it.
func (s *Store[T]) write(ctx context.Context, op, pk, rk string, etag azcore.ETag, build func(stored) ([]table.Op, error)) (table.Result, error) {
	ops, err := build(stored{parts: s.parts, etag: etag})
	if err != nil {
		return table.Result{}, err
	}
	res, err := s.submit(ctx, op, pk, rk, ops)
	if err == nil || !errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrOutcomeUnknown) {
		return res, err
	}
	cur, herr := s.head(ctx, pk, rk)
	if herr != nil {
		return table.Result{}, herr
	}
	if cur.parts == 0 {
		return table.Result{}, fmt.Errorf("wideentity: %s (%q, %q): the entity does not exist: %w", op, pk, rk, errors.Unwrap(err))
	}
	if cur.parts == s.parts {
		return res, err
	}
	cur.etag = etag // the caller's condition, not the version just read
	if ops, err = build(cur); err != nil {
		return table.Result{}, err
	}
	return s.submit(ctx, op, pk, rk, ops)
}

// head reads the header row: the stored layout and ETag.
func (s *Store[T]) head(ctx context.Context, pk, rk string) (stored, error) {
	got, err := s.tbl.Get(ctx, pk, headerKey(rk), nil)
	h := got.Value
	if errors.Is(err, table.ErrNotFound) && !errors.Is(err, table.ErrOutcomeUnknown) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, fmt.Errorf("wideentity: reading the header of (%q, %q): %w", pk, rk, err)
	}
	n, err := s.partsOf(h)
	if err != nil {
		return stored{}, fmt.Errorf("%w: (%q, %q): %v", ErrInconsistent, pk, rk, err)
	}
	return stored{parts: n, etag: h.ETag, header: h}, nil
}

func (s *Store[T]) partsOf(h table.Dynamic) (int, error) {
	n, ok := h.Properties[PartsProperty].(int32)
	if !ok || n < 1 || int(n) > maxParts(s.tbl) {
		return 0, fmt.Errorf("header row %q has no valid %s (%v)", h.RowKey, PartsProperty, h.Properties[PartsProperty])
	}
	return int(n), nil
}

// Insert stores v as a new wide entity, under the logical keys of its key
// fields (or Options.Keys): one transaction of Parts+1 inserts, one round
// trip. ErrAlreadyExists when the entity exists (in any layout). A lost
// response is settled by the table package's verification (the insert is
// reported applied, Verified, never written twice).
func (s *Store[T]) Insert(ctx context.Context, v T) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opInsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	pk, rk, ops, err := s.insertOps(v)
	if err != nil {
		return table.Result{}, err
	}
	return s.submit(ctx, "insert", pk, rk, ops)
}

// InsertOps is Insert as a [table.Change], to join a composed write (see
// "Composing patterns" in package table): the inserts of the header and
// the part rows, checked against the limits of one transaction (the
// change's share: the other changes of the transaction must fit beside
// it). Nothing is sent (ctx is for the shape every ...Ops shares).
// Applied, it fails with ErrAlreadyExists when the entity exists, in any
// layout.
func (s *Store[T]) InsertOps(ctx context.Context, v T) (table.Change, error) {
	pk, rk, ops, err := s.insertOps(v)
	if err != nil {
		return table.Change{}, err
	}
	return s.change("insert", pk, rk, ops, false)
}

// insertOps is the transaction of an Insert of v.
func (s *Store[T]) insertOps(v T) (pk, rk string, ops []table.Op, err error) {
	pk, rk, err = s.keysOf("insert", &v)
	if err != nil {
		return "", "", nil, err
	}
	parts, err := s.split(fmt.Sprintf("insert (%q, %q)", pk, rk), v, s.parts)
	if err != nil {
		return "", "", nil, err
	}
	return pk, rk, s.replaceOps(pk, rk, parts, stored{}), nil
}

// Update writes v into the stored entity with v's logical keys, in one
// transaction, one round trip, as mode says:
//
//   - table.Replace makes the entity exactly v: every part row replaced,
//     whatever properties it held.
//   - table.Fields(names...) writes the named properties of v and leaves
//     the others: a merge into each part row holding one of them (and an
//     empty merge of the header), no read. Every name must be a property
//     v holds (a nil pointer, a zero time or an absent bag entry cannot be
//     merged: Replace the entity to remove a property). With
//     azcore.ETagAny this is the guide's "a single merge suffices to
//     change one day".
//   - table.Merge is table.Fields of every property v holds: those a
//     merge of a table.Table[T] sends (so not nil pointers, zero times or
//     omitempty zeros), each merged into its part row; stored properties
//     v does not hold are kept.
//
// etag is the header's ETag (Get's): the write applies only if the entity
// has not changed since (table.ErrPreconditionFailed otherwise), and a
// lost response is settled exactly. azcore.ETagAny writes whatever
// version is stored: a Replace's resend then rewrites the same values; a
// merge does not depend on the version, cannot lose a concurrent change
// of other properties, and concurrent merges of one property are last
// writer wins. An empty etag is table.ErrNoETag. Every mode changes the
// header's ETag, so a write conditioned on an older ETag fails instead of
// overwriting it; and since a property's part depends only on its name
// and Parts, no write ever moves it to another row. A merge adds new
// properties to their part rows, whose 252 properties and 1 MiB the
// service checks (the client does not know what a row holds; the
// emulator checks neither). ErrNotFound when the entity does not exist
// (after one more read, which tells a missing entity from one stored with
// another Parts: that one is written in its stored layout by a merge, and
// moved to the configured layout by a Replace, two round trips more).
func (s *Store[T]) Update(ctx context.Context, v T, etag azcore.ETag, mode table.Mode) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdate, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	pk, rk, build, err := s.update(v, etag, mode)
	if err != nil {
		return table.Result{}, err
	}
	return s.write(ctx, "update", pk, rk, etag, build)
}

// UpdateOps is Update as a [table.Change] (see InsertOps): the
// transaction Update sends first, for the Store's layout (Parts), without
// a read; nothing is sent. Applied, it fails with
// table.ErrPreconditionFailed when the header's ETag is not etag, and with
// table.ErrNotFound when the entity does not exist or is stored with
// another Parts (the change's error says so; Update writes such an entity
// in its stored layout). With table.Fields or table.Merge and
// azcore.ETagAny it is the guide's single merge, in a transaction with
// other writes of the partition.
func (s *Store[T]) UpdateOps(ctx context.Context, v T, etag azcore.ETag, mode table.Mode) (table.Change, error) {
	pk, rk, build, err := s.update(v, etag, mode)
	if err != nil {
		return table.Change{}, err
	}
	ops, err := build(stored{parts: s.parts, etag: etag})
	if err != nil {
		return table.Change{}, err
	}
	return s.change("update", pk, rk, ops, true)
}

// update checks an Update's arguments and returns v's logical keys and
// what builds its transaction for a stored layout.
func (s *Store[T]) update(v T, etag azcore.ETag, mode table.Mode) (pk, rk string, build func(stored) ([]table.Op, error), err error) {
	pk, rk, err = s.keysOf("update", &v)
	if err != nil {
		return "", "", nil, err
	}
	where := fmt.Sprintf("update (%q, %q)", pk, rk)
	if etag == "" {
		return "", "", nil, fmt.Errorf("wideentity: %s: %w: %w", where, ErrInvalid, table.ErrNoETag)
	}
	names := fieldmodel.ModeFields(mode)
	switch {
	case names != nil:
		if len(names) == 0 {
			return "", "", nil, fmt.Errorf("%w: %s: table.Fields names no property", ErrInvalid, where)
		}
	case reflect.DeepEqual(mode, table.Merge):
	case reflect.DeepEqual(mode, table.Replace):
		parts, err := s.split(where, v, s.parts)
		if err != nil {
			return "", "", nil, err
		}
		return pk, rk, func(cur stored) ([]table.Op, error) {
			return s.replaceOps(pk, rk, parts, cur), nil
		}, nil
	default:
		return "", "", nil, fmt.Errorf("%w: %s: mode %v: want table.Replace, table.Merge or table.Fields", ErrInvalid, where, mode)
	}
	props, err := s.properties(v)
	if err != nil {
		return "", "", nil, fmt.Errorf("wideentity: %s: %w: %w", where, ErrInvalid, err)
	}
	if names == nil { // Merge: every property v holds
		for name, val := range props {
			if val != nil {
				names = append(names, name)
			}
		}
	}
	merge := make(map[string]any, len(names))
	for _, name := range names {
		val := props[name]
		if err := fieldmodel.ValidName(name); err != nil {
			return "", "", nil, fmt.Errorf("wideentity: %s: %w: %w", where, ErrInvalid, err)
		}
		if val == nil {
			return "", "", nil, fmt.Errorf("%w: %s: v holds no property %q", ErrInvalid, where, name)
		}
		merge[name] = val
	}
	return pk, rk, func(cur stored) ([]table.Op, error) {
		byPart := map[int]map[string]any{}
		for name, val := range merge {
			k := partOf(name, cur.parts)
			if byPart[k] == nil {
				byPart[k] = map[string]any{}
			}
			byPart[k][name] = val
		}
		h := cur.header
		h.PartitionKey, h.RowKey, h.Properties = pk, headerKey(rk), nil
		ops := []table.Op{s.tbl.UpdateOp(h, cur.etag, table.Merge)}
		for k := range cur.parts {
			if p := byPart[k]; p != nil {
				ops = append(ops, s.tbl.UpdateOp(table.Dynamic{PartitionKey: pk, RowKey: partKey(rk, cur.parts, k), Properties: p}, azcore.ETagAny, table.Merge))
			}
		}
		return ops, nil
	}, nil
}

// Delete removes the whole entity, in one transaction of Parts+1 deletes,
// if the header's ETag still matches etag (ErrPreconditionFailed
// otherwise), or whatever version is stored with azcore.ETagAny; an empty
// etag is table.ErrNoETag. One round trip; ErrNotFound (after one more
// read) when it does not exist. As with table.Delete, a delete whose
// response was lost leaves nothing to read: its error is then
// ErrOutcomeUnknown, which also matches ErrNotFound.
func (s *Store[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) (err error) {
	ctx, sp := s.obs.Start(ctx, opDelete, s.tbl.Name(), pk)
	var res table.Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := s.deletable(pk, rk, etag); err != nil {
		return err
	}
	res, err = s.write(ctx, "delete", pk, rk, etag, s.deleteOps(pk, rk))
	return err
}

// DeleteOps is Delete as a [table.Change] (see InsertOps and UpdateOps):
// the deletes of the header, conditioned on etag, and of the part rows of
// the Store's layout, without a read; nothing is sent. Applied, it fails
// with table.ErrNotFound when the entity does not exist or is stored with
// another Parts (Delete removes such an entity).
func (s *Store[T]) DeleteOps(ctx context.Context, pk, rk string, etag azcore.ETag) (table.Change, error) {
	if err := s.deletable(pk, rk, etag); err != nil {
		return table.Change{}, err
	}
	ops, err := s.deleteOps(pk, rk)(stored{parts: s.parts, etag: etag})
	if err != nil {
		return table.Change{}, err
	}
	return s.change("delete", pk, rk, ops, true)
}

// deletable checks a Delete's arguments before the network.
func (s *Store[T]) deletable(pk, rk string, etag azcore.ETag) error {
	if err := s.checkKeys("delete", pk, rk); err != nil {
		return err
	}
	if etag == "" {
		return fmt.Errorf("wideentity: delete (%q, %q): %w: %w", pk, rk, ErrInvalid, table.ErrNoETag)
	}
	return nil
}

// deleteOps builds the transaction that deletes entity (pk, rk) of a
// stored layout.
func (s *Store[T]) deleteOps(pk, rk string) func(stored) ([]table.Op, error) {
	return func(cur stored) ([]table.Op, error) {
		ops := []table.Op{s.tbl.DeleteOp(pk, headerKey(rk), cur.etag)}
		for k := range cur.parts {
			ops = append(ops, s.tbl.DeleteOp(pk, partKey(rk, cur.parts, k), azcore.ETagAny))
		}
		return ops, nil
	}
}

// Get reads the whole entity with one range query: one round trip (when
// the service returns the rows in one page; see the package documentation
// for reads of several pages). ErrNotFound when it does not exist. The rows
// must form one version: a read that saw two (possible only across pages)
// reads again, per Options.Retry, and ends in ErrInconsistent if it keeps
// seeing two.
func (s *Store[T]) Get(ctx context.Context, pk, rk string) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.checkKeys("get", pk, rk); err != nil {
		return Entity[T]{}, err
	}
	e, _, err := s.readOne(ctx, pk, rk)
	return e, err
}

// readOne reads the entity, again (per Options.Retry) while its rows do
// not form one version.
func (s *Store[T]) readOne(ctx context.Context, pk, rk string) (e Entity[T], cur stored, err error) {
	p := s.retry
	p.Retryable = func(err error) bool { return errors.Is(err, ErrInconsistent) }
	err = p.Do(ctx, func(ctx context.Context) error {
		var err error
		e, cur, err = s.read(ctx, pk, rk)
		return err
	})
	return e, cur, err
}

// read reads the entity's rows with one range query (one round trip a
// page) and assembles them, checking that they form one version.
func (s *Store[T]) read(ctx context.Context, pk, rk string) (Entity[T], stored, error) {
	var e Entity[T]
	lo, hi := rowRange(rk)
	q := &table.Query{Filter: table.And(table.PartitionKey(pk), table.RowKeyRange(lo, hi)), PageSize: s.pageSize}
	var rows []table.Dynamic
	pages := 0
	for p, err := range s.tbl.Pages(ctx, q) {
		if err != nil {
			return e, stored{}, fmt.Errorf("wideentity: get (%q, %q): %w", pk, rk, err)
		}
		pages++
		rows = append(rows, p.Items...)
	}
	if len(rows) == 0 {
		return e, stored{}, fmt.Errorf("wideentity: get (%q, %q): %w", pk, rk, table.ErrNotFound)
	}
	// In key order, header first, as Table Storage returns them (Cosmos
	// DB returns them in no order).
	slices.SortFunc(rows, func(a, b table.Dynamic) int { return keys.Compare(a.RowKey, b.RowKey) })
	torn := func(format string, args ...any) error {
		return fmt.Errorf("%w: get (%q, %q): "+format, append([]any{ErrInconsistent, pk, rk}, args...)...)
	}
	h := rows[0]
	if h.RowKey != headerKey(rk) {
		return e, stored{}, torn("no header row, first row %q", h.RowKey)
	}
	n, err := s.partsOf(h)
	if err != nil {
		return e, stored{}, torn("%v", err)
	}
	if len(rows) != n+1 {
		return e, stored{}, torn("%d rows for a header of %d parts", len(rows), n)
	}
	version := h.Properties[VersionProperty]
	count := 0
	for _, r := range rows[1:] {
		count += len(r.Properties) - 1
	}
	merged := make(map[string]any, count)
	for k, r := range rows[1:] {
		if r.RowKey != partKey(rk, n, k) {
			return e, stored{}, torn("row %q where part %d of %d belongs", r.RowKey, k, n)
		}
		if v, ok := r.Properties[VersionProperty].(string); !ok || v != version {
			return e, stored{}, torn("part %d is of version %v, the header of %v", k, r.Properties[VersionProperty], version)
		}
		for name, val := range r.Properties {
			if name == VersionProperty {
				continue
			}
			if partOf(name, n) != k {
				return e, stored{}, torn("property %s in part %d, where it does not belong", name, k)
			}
			merged[name] = val
		}
	}
	if pages > 1 {
		// Pages are read one after another: the rows are one version if no
		// write (each changes the header) came between the header's page
		// and the last.
		again, err := s.tbl.Get(ctx, pk, headerKey(rk), nil)
		if err != nil && !errors.Is(err, table.ErrNotFound) {
			return e, stored{}, fmt.Errorf("wideentity: get (%q, %q): %w", pk, rk, err)
		}
		if err != nil || again.ETag != h.ETag {
			return e, stored{}, torn("written during a read of %d pages", pages)
		}
	}
	d := table.Dynamic{Meta: table.Meta{ETag: h.ETag, Timestamp: h.Timestamp}, PartitionKey: pk, RowKey: rk, Properties: merged}
	if s.bag {
		e.Value = any(d).(T)
	} else if e.Value, err = table.FromDynamic[T](d); err != nil {
		return e, stored{}, fmt.Errorf("wideentity: get (%q, %q): %w", pk, rk, err)
	}
	e.PartitionKey, e.RowKey, e.ETag, e.Parts = pk, rk, h.ETag, n
	return e, stored{parts: n, etag: h.ETag, header: h}, nil
}

// Modify changes the whole entity with a read-modify-write: it reads it
// (one range query), calls fn with its value, and replaces it conditioned
// on the header's ETag read (one transaction); when another writer came
// first it reads and calls fn again, per Options.Retry (fn must be safe to
// call several times, and must not change the keys: ErrInvalid and
// table.ErrInvalidKey, nothing written). Two round trips, two more per
// conflict. It returns the entity as written: Value as fn left it (its
// Meta, if T has one, still names the version read) and ETag the version
// written. An error from fn ends Modify with that error and writes
// nothing. A lost response is settled exactly from the header's write
// history, so fn's change is never applied twice; when that cannot be
// settled Modify returns ErrOutcomeUnknown and does not call fn again.
func (s *Store[T]) Modify(ctx context.Context, pk, rk string, fn func(*T) error) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opModify, s.tbl.Name(), pk)
	var verified bool
	defer func() { sp.EndWrite(err, verified) }()
	if err := s.modifiable(pk, rk); err != nil {
		return Entity[T]{}, err
	}
	var out Entity[T]
	p := s.retry
	p.Retryable = func(err error) bool {
		return retry.RetryOn412(err) || errors.Is(err, ErrInconsistent)
	}
	err = p.Do(ctx, func(ctx context.Context) error {
		e, cur, err := s.read(ctx, pk, rk)
		if err != nil {
			return err
		}
		if err := fn(&e.Value); err != nil {
			return retrycore.Stop(err)
		}
		ops, err := s.modified(pk, rk, e.Value, cur)
		if err != nil {
			return err
		}
		res, err := s.submit(ctx, "modify", pk, rk, ops)
		if err != nil {
			return err
		}
		verified = res.Verified
		e.ETag, e.Parts = res.ETag, s.parts
		out = e
		return nil
	})
	if err != nil {
		return Entity[T]{}, err
	}
	return out, nil
}

// ModifyOps is Modify as a [table.Change] (see InsertOps): it reads the
// entity (one range query, again while its rows do not form one version),
// calls fn once with its value, and returns the replacement of the whole
// entity conditioned on the header's ETag read, in the Store's layout. A
// write in between fails the transaction with
// table.ErrPreconditionFailed: make the change again. An error from fn is
// returned as it is; fn may not change the keys (ErrInvalid and
// table.ErrInvalidKey).
func (s *Store[T]) ModifyOps(ctx context.Context, pk, rk string, fn func(*T) error) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opModifyOps, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.modifiable(pk, rk); err != nil {
		return table.Change{}, err
	}
	e, cur, err := s.readOne(ctx, pk, rk)
	if err != nil {
		return table.Change{}, err
	}
	if err := fn(&e.Value); err != nil {
		return table.Change{}, err
	}
	ops, err := s.modified(pk, rk, e.Value, cur)
	if err != nil {
		return table.Change{}, err
	}
	return s.change("modify", pk, rk, ops, false)
}

// modified is the transaction that writes v, entity (pk, rk) as fn left
// it, over cur, the version read.
func (s *Store[T]) modified(pk, rk string, v T, cur stored) ([]table.Op, error) {
	if k1, k2 := s.keys(&v); k1 != pk || k2 != rk {
		return nil, fmt.Errorf("%w: modify (%q, %q): %w: fn changed the keys to (%q, %q)", ErrInvalid, pk, rk, table.ErrInvalidKey, k1, k2)
	}
	parts, err := s.split(fmt.Sprintf("modify (%q, %q)", pk, rk), v, s.parts)
	if err != nil {
		return nil, err
	}
	return s.replaceOps(pk, rk, parts, cur), nil
}

// modifiable checks, before the network, that Modify can write back what
// it reads: valid keys, and a T whose keys this Store knows.
func (s *Store[T]) modifiable(pk, rk string) error {
	if err := s.checkKeys("modify", pk, rk); err != nil {
		return err
	}
	if s.keys == nil {
		return fmt.Errorf("wideentity: modify: %w", invalid.Mark(ErrInvalid, s.keysErr))
	}
	return nil
}

// The operations of this package, for telemetry.
var (
	opInsert = obs.Write("wideentity.Insert")
	opUpdate = obs.Write("wideentity.Update")
	opDelete = obs.Write("wideentity.Delete")
	opModify = obs.Write("wideentity.Modify")

	opModifyOps = obs.Read("wideentity.ModifyOps") // a read; the change is sent by Apply
	opGet       = obs.Read("wideentity.Get")
)

// partitionOf is v's logical PartitionKey, for a span ("" when the Store
// cannot give it).
func (s *Store[T]) partitionOf(v *T) string {
	if s.keys == nil {
		return ""
	}
	pk, _ := s.keys(v)
	return pk
}
