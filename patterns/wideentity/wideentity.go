package wideentity

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

const (
	// MaxParts is the most part rows an entity may be stored in: one
	// transaction's 100 operations (table.MaxBatchOps) less the header.
	MaxParts = table.MaxBatchOps - 1
	// MaxPartProperties is the most properties of one part row: an
	// entity's 252 (table.MaxProperties) less VersionProperty.
	MaxPartProperties = table.MaxProperties - 1
	// VersionProperty is the reserved property of every row of a wide
	// entity: the identity of the whole-entity write that wrote it. A read
	// accepts rows of one version only.
	VersionProperty = "TkWide"
	// PartsProperty is the reserved property of the header row: the
	// number of part rows.
	PartsProperty = "TkWideParts"
)

var (
	// ErrInvalid is the sentinel for a request rejected before the network
	// for a reason of this package: bad Options, a property named like a
	// reserved one (VersionProperty, PartsProperty, table.WriteProperty),
	// an UpdateFields name the value does not hold, an invalid key (which
	// also matches table.ErrInvalidKey). Limits are table.ErrTooLarge,
	// values the table package's sentinels.
	ErrInvalid = errors.New("wideentity: invalid request")
	// ErrInconsistent: the rows in an entity's key range do not form one
	// version of a wide entity even after re-reading (see Options.Retry):
	// writers kept changing it during reads of several pages, or other
	// code wrote rows in its range.
	ErrInconsistent = errors.New("wideentity: the rows read do not form one version of a wide entity")
)

// Options configures a Store.
type Options struct {
	// Parts is the number of part rows each entity is stored in, 1 to
	// MaxParts; required. A property's part is keys.Bucket(name, Parts),
	// so each part holds about 1/Parts of the properties: allow headroom
	// (the guide's 365 daily counts fit Parts 2; 2,000 properties Parts
	// 10). Keep it fixed for a table; see the package documentation for
	// what a change costs.
	Parts int
	// Retry is the policy for Modify's conflicts and for the re-reads of a
	// read that saw rows of two versions. Default: retry.Default.
	Retry *retry.Policy
}

// Store is the guide's wide entity pattern over a table: logical entities
// of type T, each stored as a header row and Options.Parts part rows of one
// partition, written in one entity group transaction and read with one
// range query. T is a struct (it may have more than 252 fields) or
// table.Dynamic for a property bag. It is safe for concurrent use.
type Store[T any] struct {
	tbl      *table.Table[table.Dynamic]
	parts    int
	retry    retry.Policy
	bag      bool // T is table.Dynamic
	pageSize int  // rows per page of a read; 0 for the service's maximum (tests set it)
}

// New returns a Store of entities of type T in tbl's table. It fails with
// ErrInvalid when opts has no valid Parts, and with the error a write
// would return when T cannot be stored: table.ErrInvalidEntity for a field
// type or name the codec refuses, ErrInvalid for a reserved name,
// table.ErrTooLarge when the fields always stored overflow a part. T's key
// fields, if any, are ignored on writes (the calls take the keys) and
// receive the logical keys on reads; its Meta receives the header's ETag
// and Timestamp.
func New[T any](tbl *table.Table[table.Dynamic], opts *Options) (*Store[T], error) {
	if tbl == nil || opts == nil {
		return nil, fmt.Errorf("%w: a table and Options with Parts are required", ErrInvalid)
	}
	if opts.Parts < 1 || opts.Parts > MaxParts {
		return nil, fmt.Errorf("%w: Parts %d outside 1..%d", ErrInvalid, opts.Parts, MaxParts)
	}
	s := &Store[T]{tbl: reserved.Properties(tbl), parts: opts.Parts, retry: retry.Default}
	if opts.Retry != nil {
		s.retry = *opts.Retry
	}
	var zero T
	_, s.bag = any(zero).(table.Dynamic)
	// Splitting the zero T checks its type and, since a struct's fields
	// other than pointers, times, []byte and omitempty ones are stored even
	// when zero, their names and how they spread over the parts, as every
	// write will.
	if _, err := s.split(fmt.Sprintf("New[%v]", reflect.TypeFor[T]()), zero, s.parts); err != nil {
		return nil, err
	}
	return s, nil
}

// Entity is a wide entity as read.
type Entity[T any] struct {
	// Value is the entity.
	Value T
	// ETag is the header row's ETag: the version of the whole entity,
	// which every write changes. Pass it to Update, UpdateFields or
	// Delete.
	ETag azcore.ETag
	// Parts is the number of part rows it is stored in.
	Parts int
}

// The row keys of logical entity rk: the header, then the parts, all
// starting with rk escaped and joined by keys.Delimiter, so that no other
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

func reservedName(name string) bool {
	return name == VersionProperty || name == PartsProperty || name == table.WriteProperty
}

// checkKeys validates the keys before the network: the PartitionKey as
// the service does, the logical RowKey by its longest row key.
func checkKeys(op, pk, rk string) error {
	if pk == "" {
		return fmt.Errorf("%w: %s: %w: empty PartitionKey", ErrInvalid, op, table.ErrInvalidKey)
	}
	if err := keys.Validate(pk); err != nil {
		return fmt.Errorf("%w: %s: PartitionKey: %w", ErrInvalid, op, err)
	}
	if err := keys.Validate(partKey(rk, MaxParts, MaxParts-1)); err != nil {
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
		return nil, fmt.Errorf("wideentity: %s: %w", where, err)
	}
	out := make([]map[string]any, parts)
	for k := range out {
		out[k] = make(map[string]any, len(props)/parts+8)
	}
	for name, val := range props {
		if val == nil {
			continue // as a Dynamic writes it: no property
		}
		if reservedName(name) {
			return nil, fmt.Errorf("%w: %s: property name %q is reserved", ErrInvalid, where, name)
		}
		out[partOf(name, parts)][name] = val
	}
	for k, p := range out {
		if len(p) > MaxPartProperties {
			return nil, fmt.Errorf("wideentity: %s: %w: part %d of %d would hold %d properties, more than %d (MaxPartProperties): use more Parts",
				where, table.ErrTooLarge, k, parts, len(p), MaxPartProperties)
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
			ops = append(ops, table.DeleteOp(pk, partKey(rk, cur.parts, k), azcore.ETagAny))
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
	for _, o := range ops {
		if err := o.Err(); err != nil {
			return table.Result{}, fmt.Errorf("wideentity: %s (%q, %q): row %q: %w", op, pk, rk, o.RowKey(), err)
		}
	}
	if len(ops) > table.MaxBatchOps {
		return table.Result{}, fmt.Errorf("wideentity: %s (%q, %q): %w: %d operations, more than one transaction holds (%d): a change of Parts needs the old and the new part rows in one transaction",
			op, pk, rk, table.ErrTooLarge, len(ops), table.MaxBatchOps)
	}
	if size := table.EstimateBatchSize(ops); size > table.MaxBatchSize {
		return table.Result{}, fmt.Errorf("wideentity: %s (%q, %q): %w: the transaction would be up to %d bytes, more than the service's %d (table.MaxBatchSize)",
			op, pk, rk, table.ErrTooLarge, size, table.MaxBatchSize)
	}
	res, err := s.tbl.Submit(ctx, table.Atomic(ops...), nil)
	if err != nil {
		return table.Result{}, fmt.Errorf("wideentity: %s (%q, %q): %w", op, pk, rk, err)
	}
	h := res.Ops[0]
	return table.Result{ETag: h.ETag, Verified: h.Verified}, nil
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
	h, err := s.tbl.Get(ctx, pk, headerKey(rk), nil)
	if errors.Is(err, table.ErrNotFound) && !errors.Is(err, table.ErrOutcomeUnknown) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, fmt.Errorf("wideentity: reading the header of (%q, %q): %w", pk, rk, err)
	}
	n, err := partsOf(h)
	if err != nil {
		return stored{}, fmt.Errorf("%w: (%q, %q): %v", ErrInconsistent, pk, rk, err)
	}
	return stored{parts: n, etag: h.ETag, header: h}, nil
}

func partsOf(h table.Dynamic) (int, error) {
	n, ok := h.Properties[PartsProperty].(int32)
	if !ok || n < 1 || n > MaxParts {
		return 0, fmt.Errorf("header row %q has no valid %s (%v)", h.RowKey, PartsProperty, h.Properties[PartsProperty])
	}
	return int(n), nil
}

// Insert stores v as a new wide entity: one transaction of Parts+1 inserts,
// one round trip. ErrAlreadyExists when the entity exists (in any layout).
// A lost response is settled by the table package's verification (the
// insert is reported applied, Verified, never written twice).
func (s *Store[T]) Insert(ctx context.Context, pk, rk string, v T) (table.Result, error) {
	if err := checkKeys("insert", pk, rk); err != nil {
		return table.Result{}, err
	}
	parts, err := s.split(fmt.Sprintf("insert (%q, %q)", pk, rk), v, s.parts)
	if err != nil {
		return table.Result{}, err
	}
	return s.submit(ctx, "insert", pk, rk, s.replaceOps(pk, rk, parts, stored{}))
}

// Update replaces the whole entity with v, in one transaction: every part
// row replaced and the header replaced if its ETag still matches etag (the
// ETag of Get), else nothing (ErrPreconditionFailed). azcore.ETagAny
// replaces whatever version is stored; an empty etag is table.ErrNoETag.
// One round trip. ErrNotFound when the entity does not exist (after one
// more read, which tells a missing entity from one stored with another
// Parts: that one is rewritten in the configured layout, two round trips
// more). A lost response is settled by the table package's verification:
// with an ETag the update is never applied twice and never reported failed
// when it was applied; with ETagAny the resend rewrites the same values.
func (s *Store[T]) Update(ctx context.Context, pk, rk string, v T, etag azcore.ETag) (table.Result, error) {
	if err := checkKeys("update", pk, rk); err != nil {
		return table.Result{}, err
	}
	if etag == "" {
		return table.Result{}, fmt.Errorf("wideentity: update (%q, %q): %w", pk, rk, table.ErrNoETag)
	}
	parts, err := s.split(fmt.Sprintf("update (%q, %q)", pk, rk), v, s.parts)
	if err != nil {
		return table.Result{}, err
	}
	return s.write(ctx, "update", pk, rk, etag, func(cur stored) ([]table.Op, error) {
		return s.replaceOps(pk, rk, parts, cur), nil
	})
}

// UpdateFields writes the named properties of v into the stored entity
// and leaves the others as they are: one transaction of a merge into each
// part row holding one of them and an empty merge of the header, one round
// trip, no read. Every name must be a property v holds (a nil pointer, a
// zero time or an absent bag entry cannot be merged: Update the whole
// entity to remove a property). A new property adds to its part row, whose
// 252 properties and 1 MiB the service checks for the merge (the client
// does not know what the row holds; the emulator checks neither).
//
// With etag azcore.ETagAny it does not depend on the version stored: it
// cannot lose a concurrent change of other properties, concurrent
// UpdateFields of one property are last writer wins, and its resend after a
// lost response writes the same values. With the ETag of Get it applies
// only if the entity has not changed since (ErrPreconditionFailed), and a
// lost response is settled exactly. Either way it changes the header's
// ETag, so a whole-entity write conditioned on an older ETag fails instead
// of overwriting it; and since a property's part depends only on its name
// and Parts, a concurrent whole-entity write can never have moved it to
// another row. ErrNotFound when the entity does not exist.
func (s *Store[T]) UpdateFields(ctx context.Context, pk, rk string, v T, etag azcore.ETag, names ...string) (table.Result, error) {
	if err := checkKeys("update fields", pk, rk); err != nil {
		return table.Result{}, err
	}
	if etag == "" {
		return table.Result{}, fmt.Errorf("wideentity: update fields (%q, %q): %w", pk, rk, table.ErrNoETag)
	}
	if len(names) == 0 {
		return table.Result{}, fmt.Errorf("%w: update fields (%q, %q): no property named", ErrInvalid, pk, rk)
	}
	props, err := s.properties(v)
	if err != nil {
		return table.Result{}, fmt.Errorf("wideentity: update fields (%q, %q): %w", pk, rk, err)
	}
	merge := make(map[string]any, len(names))
	for _, name := range names {
		val := props[name]
		switch {
		case reservedName(name):
			return table.Result{}, fmt.Errorf("%w: update fields (%q, %q): property name %q is reserved", ErrInvalid, pk, rk, name)
		case val == nil:
			return table.Result{}, fmt.Errorf("%w: update fields (%q, %q): v holds no property %q", ErrInvalid, pk, rk, name)
		}
		merge[name] = val
	}
	return s.write(ctx, "update fields", pk, rk, etag, func(cur stored) ([]table.Op, error) {
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
	})
}

// Delete removes the whole entity, in one transaction of Parts+1 deletes,
// if the header's ETag still matches etag (ErrPreconditionFailed
// otherwise), or whatever version is stored with azcore.ETagAny; an empty
// etag is table.ErrNoETag. One round trip; ErrNotFound (after one more
// read) when it does not exist. As with table.Delete, a delete whose
// response was lost leaves nothing to read: its error is then
// ErrOutcomeUnknown, which also matches ErrNotFound.
func (s *Store[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	if err := checkKeys("delete", pk, rk); err != nil {
		return err
	}
	if etag == "" {
		return fmt.Errorf("wideentity: delete (%q, %q): %w", pk, rk, table.ErrNoETag)
	}
	_, err := s.write(ctx, "delete", pk, rk, etag, func(cur stored) ([]table.Op, error) {
		ops := []table.Op{table.DeleteOp(pk, headerKey(rk), cur.etag)}
		for k := range cur.parts {
			ops = append(ops, table.DeleteOp(pk, partKey(rk, cur.parts, k), azcore.ETagAny))
		}
		return ops, nil
	})
	return err
}

// Get reads the whole entity with one range query: one round trip (when
// the service returns the rows in one page; see the package documentation
// for reads of several pages). ErrNotFound when it does not exist. The rows
// must form one version: a read that saw two (possible only across pages)
// reads again, per Options.Retry, and ends in ErrInconsistent if it keeps
// seeing two.
func (s *Store[T]) Get(ctx context.Context, pk, rk string) (Entity[T], error) {
	if err := checkKeys("get", pk, rk); err != nil {
		return Entity[T]{}, err
	}
	var e Entity[T]
	p := s.retry
	p.Retryable = func(err error) bool { return errors.Is(err, ErrInconsistent) }
	err := p.Do(ctx, func(ctx context.Context) error {
		var err error
		e, _, err = s.read(ctx, pk, rk)
		return err
	})
	return e, err
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
	torn := func(format string, args ...any) error {
		return fmt.Errorf("%w: get (%q, %q): "+format, append([]any{ErrInconsistent, pk, rk}, args...)...)
	}
	h := rows[0]
	if h.RowKey != headerKey(rk) {
		return e, stored{}, torn("no header row, first row %q", h.RowKey)
	}
	n, err := partsOf(h)
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
	e.ETag, e.Parts = h.ETag, n
	return e, stored{parts: n, etag: h.ETag, header: h}, nil
}

// Modify changes the whole entity with a read-modify-write: it reads it
// (one range query), calls fn with its value, and replaces it conditioned
// on the header's ETag read (one transaction); when another writer came
// first it reads and calls fn again, per Options.Retry (fn must be safe to
// call several times). Two round trips, two more per conflict. It returns
// the entity as written: Value as fn left it (its Meta, if T has one, still
// names the version read) and ETag the version written. An error from fn ends Modify with that error and
// writes nothing. A lost response is settled exactly from the header's
// write history, so fn's change is never applied twice; when that cannot
// be settled Modify returns ErrOutcomeUnknown and does not call fn again.
func (s *Store[T]) Modify(ctx context.Context, pk, rk string, fn func(*T) error) (Entity[T], error) {
	if err := checkKeys("modify", pk, rk); err != nil {
		return Entity[T]{}, err
	}
	var out Entity[T]
	p := s.retry
	p.Retryable = func(err error) bool {
		return retry.RetryOn412(err) || errors.Is(err, ErrInconsistent)
	}
	err := p.Do(ctx, func(ctx context.Context) error {
		e, cur, err := s.read(ctx, pk, rk)
		if err != nil {
			return err
		}
		if err := fn(&e.Value); err != nil {
			return retry.Stop(err)
		}
		parts, err := s.split(fmt.Sprintf("modify (%q, %q)", pk, rk), e.Value, s.parts)
		if err != nil {
			return err
		}
		res, err := s.submit(ctx, "modify", pk, rk, s.replaceOps(pk, rk, parts, cur))
		if err != nil {
			return err
		}
		out = Entity[T]{Value: e.Value, ETag: res.ETag, Parts: s.parts}
		return nil
	})
	if err != nil {
		return Entity[T]{}, err
	}
	return out, nil
}
