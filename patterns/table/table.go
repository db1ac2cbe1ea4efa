package table

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/retry"
)

// Table is a typed view of one table: entities of type T (a struct) over an
// aztables client. It is safe for concurrent use; it holds no per-call state.
//
// How T maps to an entity:
//   - A string field named PartitionKey or tagged `table:",pk"` is the
//     PartitionKey; likewise RowKey / `table:",rk"`. Computed keys (compound
//     keys, index rows) come from WithKeys instead.
//   - A field of type Meta (usually embedded) receives the ETag and
//     Timestamp on reads; a time.Time field named Timestamp receives the
//     Timestamp. Neither is ever written.
//   - Every other exported field is a property, named by the field or by
//     its tag `table:"Name"`. `table:"-"` skips a field; `omitempty` skips
//     zero values; `json` stores any value as a JSON string; `guid` stores a
//     string as Edm.Guid; `extra` on a map[string]any field captures stored
//     properties T has no field for (and writes them back).
//   - Types: string, bool, int8/16/32 and uint8/16 (Edm.Int32), int, int64
//     and uint32 (Edm.Int64, sent as a string), float32/64 (always
//     Edm.Double, also for whole numbers), time.Time (Edm.DateTime, UTC,
//     100 ns, 1601-01-01 to 9999-12-31; the zero time.Time is stored as no
//     property and reads back as the zero time), []byte (Edm.Binary),
//     [16]byte types such as uuid.UUID (Edm.Guid; so are aztables.EDMGUID
//     and strings tagged `guid`, where "" is no property), and pointers to
//     these (nil = no property; so is a nil []byte, while an empty one is an
//     empty Edm.Binary). Other types are rejected by New unless tagged
//     `json`. A float64 -0.0 reads back as 0 from Azurite (the real
//     service's answer is unverified).
type Table[T any] struct {
	client  *aztables.Client
	name    string  // the table's name, for errors
	direct  *direct // the direct path, nil for the SDK's (see direct.go)
	codec   *codec  // nil for Types' reads of any type
	keyFn   func(*T) (pk, rk string)
	types   *Types      // the registry of a registered type, or of Types' reads
	typ     *entityType // the registered type, nil for Types' reads
	profile *Profile    // the limits and behaviours of the table's service
	// Views made by internal/reserved: reserved may use keys under
	// "~tk~", reservedProps Dynamic properties under
	// "Tk"; every other view refuses them.
	reserved, reservedProps bool
	// cursorKey seals the cursors, nil for plain ones (Options.CursorKey).
	cursorKey *CursorKey
	// obs is Options.Telemetry's, nil without: operations are then traced
	// only as children of the caller's span (obs.Child).
	obs *obs.Obs
}

// Options configures a Table. A nil *Options, and every zero field, means
// the default.
type Options[T any] struct {
	// Keys computes an entity's keys (compound and computed keys): a T
	// then needs no key fields. Default: T's key fields (PartitionKey and
	// RowKey, or fields tagged pk and rk). WithKeys gives a view under
	// other keys.
	Keys func(*T) (pk, rk string)
	// CursorKey seals the table's cursors (see NewCursorKey). Default:
	// plain cursors, which show the query's position (keys) to whoever
	// holds them.
	CursorKey *CursorKey
	// Profile is the service profile the table follows instead of its
	// client's (table.Describe, or the endpoint's): for a Cosmos DB
	// account behind a proxy or a custom domain, or Portable to hold data
	// to the limits of both services. Default: the client's.
	Profile *Profile
	// Telemetry gives the table's operations spans, metrics and logs of
	// their own, from its providers. Default: an operation is traced only
	// under a caller's recording span, as its child, with the global meter
	// provider, and logs nothing.
	Telemetry *Telemetry
}

func init() {
	reserved.Register(func(v any, keys bool) any { return v.(reservable).reservedView(keys) })
}

// reservable is a *Table[T] of any T, for internal/reserved.
type reservable interface{ reservedView(keys bool) any }

func (t *Table[T]) reservedView(keys bool) any {
	c := *t
	c.reserved = c.reserved || keys
	c.reservedProps = true
	return &c
}

// checkKeys validates keys as the service would and, unless t is a
// reserved view, refuses keys under "~tk~".
func (t *Table[T]) checkKeys(op, pk, rk string) error {
	if err := validKeys(pk, rk); err != nil {
		return relabel(err, op, t.name)
	}
	if err := t.profile.checkKeys(pk, rk); err != nil {
		return relabel(err, op, t.name)
	}
	if !t.reserved {
		if err := notReserved(pk, rk); err != nil {
			return relabel(err, op, t.name)
		}
	}
	return nil
}

// New returns a Table for entities of type T in the table client c talks
// to. It analyses T once and fails with ErrInvalidEntity when T cannot be
// stored: unsupported field types, more than 252 properties, invalid or
// reserved property names, or only one of the two key fields.
//
// A T without key fields can be read (Get, Query) as it is; to write it,
// give its keys with Options.Keys (or WithKeys): its writes otherwise fail
// with ErrInvalidEntity.
func New[T any](c *aztables.Client, opts *Options[T]) (*Table[T], error) {
	if c == nil {
		return nil, fmt.Errorf("table.New: %w: nil *aztables.Client", ErrInvalid)
	}
	cd, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if err := cd.fitsOneEntity(); err != nil {
		return nil, err
	}
	if (cd.pk == nil) != (cd.rk == nil) {
		return nil, fmt.Errorf("%w: %v has a PartitionKey field but no RowKey field, or the reverse: give both, or neither and use Options.Keys", ErrInvalidEntity, cd.typ)
	}
	a := aboutClient(c)
	t := &Table[T]{client: c, name: a.name, direct: directOf(a), codec: cd, profile: a.resolvedProfile()}
	if cd.pk != nil && cd.rk != nil {
		t.keyFn = func(v *T) (string, string) {
			rv := reflect.ValueOf(v).Elem()
			return rv.FieldByIndex(cd.pk).String(), rv.FieldByIndex(cd.rk).String()
		}
	}
	if opts != nil {
		if opts.Keys != nil {
			t.keyFn = opts.Keys
		}
		t.cursorKey = opts.CursorKey
		if opts.Profile != nil {
			t.profile = opts.Profile
		}
		if opts.Telemetry != nil {
			t.obs = obs.New((*obs.Config)(opts.Telemetry))
		}
	}
	return t, nil
}

// span starts op: from Options.Telemetry's providers when the table has
// them, else as a child of ctx's recording span only.
func (t *Table[T]) span(ctx context.Context, op *obs.Operation, partition string) (context.Context, obs.Span) {
	return startSpan(ctx, t.obs, op, t.name, partition)
}

func startSpan(ctx context.Context, o *obs.Obs, op *obs.Operation, table, partition string) (context.Context, obs.Span) {
	if o != nil {
		return o.Start(ctx, op, table, partition)
	}
	return obs.Child(ctx, op, table, partition)
}

// Name returns the name of the table, as the client was given it, or ""
// for a client tablekit did not build and the application did not
// Describe.
func (t *Table[T]) Name() string { return t.name }

// WithKeys returns a view of the table that computes each entity's keys
// with fn instead of reading them from its key fields. Use it for compound
// and computed keys, and for storing the same entity under several keys
// (index rows):
//
//	byEmail := employees.WithKeys(func(e *Employee) (string, string) {
//		return e.Department, keys.Join("email", e.Email)
//	})
func (t *Table[T]) WithKeys(fn func(*T) (pk, rk string)) *Table[T] {
	c := *t
	c.keyFn = fn
	return &c
}

// Client returns the underlying aztables client.
func (t *Table[T]) Client() *aztables.Client { return t.client }

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// keysOf returns v's keys, or an error when T has no way to give them.
func (t *Table[T]) keysOf(op string, v *T) (pk, rk string, err error) {
	if t.keyFn == nil {
		return "", "", &Error{Op: op, Table: t.name, Err: fmt.Errorf("%w: %v has no PartitionKey and RowKey fields; tag them, or give Options.Keys", ErrInvalidEntity, t.codec.typ)}
	}
	pk, rk = t.keyFn(v)
	if !t.reserved {
		if err := notReserved(pk, rk); err != nil {
			return pk, rk, relabel(err, op, t.name)
		}
	}
	return pk, rk, nil
}

// encode encodes v with its keys. The caller must release the buffer with
// release once the SDK call has returned.
func (t *Table[T]) encode(op string, v *T, m Mode) (encoded, *[]byte, error) {
	pk, rk, err := t.keysOf(op, v)
	if err != nil {
		return encoded{}, nil, err
	}
	mask, err := t.codec.mask(m.fields)
	if err != nil {
		return encoded{}, nil, &Error{Op: op, Table: t.name, PartitionKey: pk, RowKey: rk, Err: err}
	}
	bp := bufPool.Get().(*[]byte)
	e, err := t.codec.encode((*bp)[:0], reflect.ValueOf(v).Elem(), pk, rk, mask, t.reservedProps, t.profile)
	if err == nil {
		e, err = t.tag(e, v)
	}
	if err != nil {
		release(bp)
		return e, nil, relabel(err, op, t.name)
	}
	*bp = e.body
	return e, bp, nil
}

// tag adds a registered type's discriminator to an encoded entity.
func (t *Table[T]) tag(e encoded, v *T) (encoded, error) {
	if t.typ == nil {
		return e, nil
	}
	return tagEntity(e, reflect.ValueOf(v).Elem(), t.types, t.typ)
}

// tagEntity appends et's type property to e, the encoding of v, and checks
// its key prefix.
func tagEntity(e encoded, v reflect.Value, ts *Types, et *entityType) (encoded, error) {
	if key, name := e.rk, "RowKey"; et.prefix != "" {
		if ts.byPK {
			key, name = e.pk, "PartitionKey"
		}
		if !strings.HasPrefix(key, et.prefix) {
			return e, refused("encode", e.pk, e.rk, ErrInvalidKey, "%s %q does not start with %s's prefix %q", name, key, et.name, et.prefix)
		}
	}
	if et.codec.extra != nil && v.FieldByIndex(et.codec.extra).MapIndex(reflect.ValueOf(ts.prop)).IsValid() {
		return e, refused("encode", e.pk, e.rk, ErrInvalidEntity, "the extra map holds %s, the type property", ts.prop)
	}
	e.body = append(e.body[:len(e.body)-1], et.tag...)
	e.props++
	e.size += et.tagSize
	return e, e.checkEntity()
}

// decode decodes entity JSON into v: as T, or for a registered type after
// resolving the row's type and version (errOtherType for a row of another
// type; upgraded reports an upgrade), or for Types' reads as the row's
// registered type.
func (t *Table[T]) decode(data []byte, v *T, etag azcore.ETag, keys *[3]string, skipReserved bool) (upgraded bool, err error) {
	if t.types == nil {
		return false, t.codec.decode(data, reflect.ValueOf(v).Elem(), etag, keys, skipReserved)
	}
	s, err := scanEntity(data, etag)
	defer s.release()
	if err != nil {
		return false, err
	}
	if skipReserved && reservedRow(s.props) {
		return false, errReservedRow
	}
	if m, ok := any(v).(*migrant); ok {
		return false, t.types.decodeMigrant(s.props, s.etag, m)
	}
	if t.typ == nil {
		x, upgraded, err := t.types.decodeAny(s.props, s.etag, keys)
		if err == nil {
			reflect.ValueOf(v).Elem().Set(reflect.ValueOf(x))
		}
		return upgraded, err
	}
	et, version, err := t.types.resolve(s.props)
	switch {
	case et != t.typ:
		return false, errOtherType{err: err, et: et, version: version}
	case err != nil:
		return false, err
	}
	return version != et.version, et.decode(s.props, version, reflect.ValueOf(v).Elem(), s.etag, keys, t.types.prop)
}

// errOtherType is what decode returns for a row of another type than the
// Table's registered one: queries skip it, Get reports it.
type errOtherType struct {
	err     error // why the row has no type, or nil
	et      *entityType
	version int
}

func (e errOtherType) Error() string {
	if e.et == nil {
		return e.err.Error()
	}
	return fmt.Sprintf("%v: the entity is a %s.%d", ErrEntityType, e.et.name, e.version)
}

func (e errOtherType) Unwrap() error { return ErrEntityType }

// typeName names what the Table decodes, for errors.
func (t *Table[T]) typeName() string {
	if t.codec == nil {
		return "a registered type"
	}
	return t.codec.typ.String()
}

func release(bp *[]byte) {
	if bp != nil && cap(*bp) <= 4<<20 {
		bufPool.Put(bp)
	}
}

// Insert adds v; it fails with ErrAlreadyExists when an entity with the same
// keys exists. One round trip.
//
// Insert records its identity in TkWrites, so when its response is
// lost and the retry policy's resend answers 409, one read tells whether the
// entity is the one this Insert wrote (success, Result.Verified) or another
// writer's; see the package documentation's outcome table.
func (t *Table[T]) Insert(ctx context.Context, v T) (res Result, err error) {
	ctx, sp := t.span(ctx, opInsert, "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	e, bp, err := t.encode("insert", &v, Mode{})
	if err != nil {
		return Result{}, err
	}
	defer release(bp)
	w := write{kind: aztables.TransactionTypeAdd, pk: e.pk, rk: e.rk}
	if e.stampable() {
		w.id = newWriteID()
		e.body = appendStamp(e.body, w.id)
		*bp = e.body
	}
	return t.write(ctx, "insert", w, e, "")
}

// Upsert inserts v or, when it exists, merges or replaces it (InsertOrMerge,
// InsertOrReplace). The service has no conditional upsert; use Update with
// an ETag for that. One round trip. An upsert is idempotent: resent after a
// lost response, it succeeds.
func (t *Table[T]) Upsert(ctx context.Context, v T, mode Mode) (res Result, err error) {
	ctx, sp := t.span(ctx, opUpsert, "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	mode = t.writeMode(&v, mode)
	kind, err := txType("upsert", mode)
	if err != nil {
		return Result{}, err
	}
	e, bp, err := t.encode("upsert", &v, mode)
	if err != nil {
		return Result{}, err
	}
	defer release(bp)
	return t.write(ctx, "upsert", write{kind: kind, pk: e.pk, rk: e.rk}, e, "")
}

// Update merges or replaces an existing entity, if its ETag still matches:
// pass the ETag read with the entity (ErrPreconditionFailed when it changed
// since), or azcore.ETagAny to update whatever version exists. An empty ETag
// is an error (ErrNoETag): the choice must be explicit. ErrNotFound when the
// entity does not exist. One round trip.
//
// A conditional Update extends the entity's TkWrites history, so a
// lost response is settled by one read: ErrPreconditionFailed is returned
// only when the update was certainly not applied, and a retry.Do loop with
// retry.RetryOn412 never applies a change twice. Pass v with the Meta read
// with etag (T embeds Meta) for exact verification; without it a lost
// response may end in ErrOutcomeUnknown.
func (t *Table[T]) Update(ctx context.Context, v T, etag azcore.ETag, mode Mode) (res Result, err error) {
	ctx, sp := t.span(ctx, opUpdate, "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	return t.update(ctx, "update", &v, etag, mode, t.prevWrites(&v, etag))
}

// update is Update with the write history read with etag given.
func (t *Table[T]) update(ctx context.Context, op string, v *T, etag azcore.ETag, mode Mode, prev string) (Result, error) {
	mode = t.writeMode(v, mode)
	kind, err := txType(op, mode)
	if err != nil {
		return Result{}, err
	}
	if etag == "" {
		return Result{}, &Error{Op: op, Table: t.name, Err: ErrNoETag}
	}
	e, bp, err := t.encode(op, v, mode)
	if err != nil {
		return Result{}, err
	}
	defer release(bp)
	w := write{kind: kind, pk: e.pk, rk: e.rk, etag: etag}
	if etag != azcore.ETagAny && e.stampable() {
		w.id = newWriteID()
		w.stamp = stampValue(w.id, prev)
		e.body = appendStamp(e.body, w.stamp)
		*bp = e.body
		w.prev, _, _ = strings.Cut(prev, ",")
	}
	return t.write(ctx, op, w, e, etag)
}

// prevWrites returns the write history read with etag, if v carries it:
// its Meta was read from the same entity (the keys match) with that ETag.
func (t *Table[T]) prevWrites(v *T, etag azcore.ETag) string {
	if t.codec.meta == nil {
		return ""
	}
	m := metaOf(reflect.ValueOf(v).Elem(), t.codec.meta)
	if pk, rk, err := t.keysOf("update", v); err == nil && m.ETag == etag && m.pk == pk && m.rk == rk {
		return m.writes
	}
	return ""
}

// Delete removes the entity with the given keys if its ETag still matches,
// or whatever version exists with azcore.ETagAny. An empty ETag is an error
// (ErrNoETag). ErrNotFound when the entity does not exist. One round trip.
//
// When a response is lost and the resend answers 404, the delete may have
// been the one that removed the entity: the error is then ErrOutcomeUnknown
// (and still ErrNotFound, for callers to whom either means "gone").
func (t *Table[T]) Delete(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) (err error) {
	ctx, sp := t.span(ctx, opDelete, partitionKey)
	defer func() { sp.EndWrite(err, false) }()
	if etag == "" {
		return &Error{Op: "delete", Table: t.name, PartitionKey: partitionKey, RowKey: rowKey, Err: ErrNoETag}
	}
	if err := t.checkKeys("delete", partitionKey, rowKey); err != nil {
		return err
	}
	w := write{kind: aztables.TransactionTypeDelete, pk: partitionKey, rk: rowKey, etag: etag}
	_, err = t.write(ctx, "delete", w, encoded{pk: partitionKey, rk: rowKey}, etag)
	return err
}

// write sends one write and settles its outcome (see settle). A context
// that ended before anything was sent is a definite failure.
func (t *Table[T]) write(ctx context.Context, op string, w write, e encoded, etag azcore.ETag) (Result, error) {
	obs.SetPartition(ctx, w.pk)
	if err := ctx.Err(); err != nil {
		return Result{}, &Error{Op: op, Table: t.name, PartitionKey: w.pk, RowKey: w.rk, Err: err}
	}
	tctx, tr := retrycore.Track(ctx)
	newETag, err := t.send(tctx, w.kind, e, etag)
	if err != nil {
		return settle(ctx, t.client, tr, w, newError(op, t.name, w.pk, w.rk, err))
	}
	return Result{ETag: newETag, stamp: w.stamp}, nil
}

// send makes one write, directly or through the SDK, and returns the new
// ETag.
func (t *Table[T]) send(ctx context.Context, kind aztables.TransactionType, e encoded, etag azcore.ETag) (azcore.ETag, error) {
	if t.direct != nil {
		return t.direct.write(ctx, kind, e.pk, e.rk, e.body, etag)
	}
	var match *azcore.ETag
	if etag != "" {
		match = &etag
	}
	switch kind {
	case aztables.TransactionTypeAdd:
		resp, err := t.client.AddEntity(ctx, e.body, &aztables.AddEntityOptions{Format: ptr(aztables.MetadataFormatNone)})
		return resp.ETag, err
	case aztables.TransactionTypeInsertMerge, aztables.TransactionTypeInsertReplace:
		resp, err := t.client.UpsertEntity(ctx, e.body, &aztables.UpsertEntityOptions{UpdateMode: updateModes[kind]})
		return resp.ETag, err
	case aztables.TransactionTypeDelete:
		_, err := t.client.DeleteEntity(ctx, e.pk, e.rk, &aztables.DeleteEntityOptions{IfMatch: match})
		return "", err
	}
	resp, err := t.client.UpdateEntity(ctx, e.body, &aztables.UpdateEntityOptions{IfMatch: match, UpdateMode: updateModes[kind]})
	return resp.ETag, err
}

// GetOptions configures Get. A nil *GetOptions means defaults.
type GetOptions struct {
	// Select limits the properties read (server-side projection). Default
	// (nil): every property. The keys, ETag and Timestamp are always read.
	Select []string
}

// Get reads one entity: a point query, one round trip. ErrNotFound when it
// does not exist. With Select, only those properties are transferred.
func (t *Table[T]) Get(ctx context.Context, partitionKey, rowKey string, opts *GetOptions) (_ Entity[T], err error) {
	ctx, sp := t.span(ctx, opGet, partitionKey)
	defer func() { sp.End(err) }()
	if err := t.checkKeys("get", partitionKey, rowKey); err != nil {
		return Entity[T]{}, err
	}
	if opts != nil && opts.Select != nil {
		// GetEntity has no $select: a point query through the list API has.
		q := &Query{Filter: And(PartitionKey(partitionKey), Eq("RowKey", rowKey)), Select: opts.Select, Limit: 1}
		for e, err := range t.QueryEntities(ctx, q) {
			return e, relabel(err, "get", t.name)
		}
		return Entity[T]{}, &Error{Op: "get", Table: t.name, PartitionKey: partitionKey, RowKey: rowKey, StatusCode: 404, Code: "ResourceNotFound", Err: ErrNotFound}
	}
	v, etag, writes, upgraded, err := t.get(ctx, "get", partitionKey, rowKey, t.typ != nil && t.typ.back)
	if err != nil {
		return Entity[T]{}, err
	}
	if upgraded && t.typ.back {
		if res, ok := t.writeBack(ctx, &v, etag, writes); ok {
			etag = res.ETag
		}
	}
	return Entity[T]{PartitionKey: partitionKey, RowKey: rowKey, ETag: etag, Value: v}, nil
}

// writeBack writes v, upgraded from an older version read with etag and
// write history writes, as the current version (RegisterOptions.WriteBack):
// a conditional Replace. Best effort: a failure leaves the old row, which
// reads the same. On success v's Meta is the version written.
func (t *Table[T]) writeBack(ctx context.Context, v *T, etag azcore.ETag, writes string) (Result, bool) {
	res, err := t.update(ctx, "get", v, etag, Replace, writes)
	if err == nil && t.codec.meta != nil {
		m := metaOf(reflect.ValueOf(v).Elem(), t.codec.meta)
		m.ETag, m.writes, m.upgraded = res.ETag, res.stamp, false
	}
	return res, err == nil
}

// writeMode is the mode a write of v uses: Replace for a value read from an
// older version of a registered type (its Meta says so), which a merge
// would store as the current version beside its old version's properties
// without the new version's; m otherwise.
func (t *Table[T]) writeMode(v *T, m Mode) Mode {
	if t.typ == nil || t.codec.meta == nil || m.kind == 0 {
		return m
	}
	if metaOf(reflect.ValueOf(v).Elem(), t.codec.meta).upgraded {
		return Replace
	}
	return m
}

// get reads one entity with its ETag and, when wantWrites, its write
// history.
// upgraded reports that a registered type's row was of an older version.
func (t *Table[T]) get(ctx context.Context, op, pk, rk string, wantWrites bool) (v T, etag azcore.ETag, writes string, upgraded bool, err error) {
	var body []byte
	if t.direct != nil {
		body, etag, err = t.direct.get(ctx, pk, rk)
	} else {
		var resp aztables.GetEntityResponse
		resp, err = t.client.GetEntity(ctx, pk, rk, nil) // minimal metadata (the Accept header), no $format: the request the direct path sends
		body, etag = resp.Value, resp.ETag
	}
	if err != nil {
		return v, "", "", false, wrap(op, t.name, pk, rk, err)
	}
	if upgraded, err = t.decode(body, &v, etag, nil, false); err != nil {
		return v, "", "", false, &Error{Op: op, Table: t.name, PartitionKey: pk, RowKey: rk, Err: fmt.Errorf("decoding %v: %w", t.typeName(), err)}
	}
	switch {
	case !wantWrites:
	case t.codec != nil && t.codec.meta != nil:
		writes = metaOf(reflect.ValueOf(&v).Elem(), t.codec.meta).writes
	default:
		if h, ok := storedHistory(body); ok {
			writes = strings.Join(h, ",")
		}
	}
	return v, etag, writes, upgraded, nil
}

// ModifyOptions configures Modify. A nil *ModifyOptions means defaults.
type ModifyOptions struct {
	// Mode is how the changed entity is written back. Default (the zero
	// Mode): Merge, which keeps stored properties T has no field for; use
	// Replace to remove properties the change cleared (nil pointers). An
	// entity of a registered type read from an older version is always
	// written with Replace (see Register).
	Mode Mode
	// Retry is the policy for conflicts: on ErrPreconditionFailed (another
	// writer changed the entity in between) Modify reads and calls fn
	// again. Default: retry.Default. Its Retryable, if nil, is
	// retry.RetryOn412: conflicts only, since the client's pipeline has
	// retried transient failures (a transport error, a 503) with its own
	// budget, and such a failure ends Modify.
	Retry *retry.Policy
}

// Modify changes one entity with a read-modify-write: it reads the entity,
// calls fn with it, and writes the result back conditioned on the ETag it
// read, so no concurrent change is lost; on a conflict it reads and calls
// fn again (fn must be safe to call several times). It returns the entity
// as written, with the ETag of the write. An error from fn ends Modify
// with that error and writes nothing; fn must not change the keys.
//
// Two round trips without contention, two more per conflict. A lost
// response is settled by reading the write history (see TkWrites), so
// a change is never applied twice; when that cannot be settled Modify
// returns ErrOutcomeUnknown and does not call fn again. ErrNotFound when
// the entity does not exist.
func (t *Table[T]) Modify(ctx context.Context, partitionKey, rowKey string, fn func(*T) error, opts *ModifyOptions) (_ Entity[T], err error) {
	ctx, sp := t.span(ctx, opModify, partitionKey)
	var v T
	var res Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := t.checkKeys("modify", partitionKey, rowKey); err != nil {
		return Entity[T]{}, err
	}
	if opts == nil {
		opts = &ModifyOptions{}
	}
	mode := opts.Mode
	if mode.kind == 0 {
		mode = Merge
	}
	p := retry.Default
	if opts.Retry != nil {
		p = *opts.Retry
	}
	retryable := p.Retryable
	if retryable == nil {
		retryable = retry.RetryOn412
	}
	p.Retryable = func(err error) bool {
		return !errors.Is(err, ErrOutcomeUnknown) && retryable(err)
	}
	err = p.Do(ctx, func(ctx context.Context) error {
		cur, etag, writes, upgraded, err := t.get(ctx, "modify", partitionKey, rowKey, true)
		if err != nil {
			return err
		}
		mode := mode
		if upgraded {
			// An upgraded row sheds its older version's properties.
			mode = Replace
		}
		if err := fn(&cur); err != nil {
			return retrycore.Stop(&Error{Op: "modify", Table: t.name, PartitionKey: partitionKey, RowKey: rowKey, Err: err})
		}
		if pk, rk, err := t.keysOf("modify", &cur); err != nil {
			return err
		} else if pk != partitionKey || rk != rowKey {
			return refused("modify", partitionKey, rowKey, ErrInvalidKey, "fn changed the keys to (%q, %q)", pk, rk)
		}
		v = cur
		res, err = t.update(ctx, "modify", &cur, etag, mode, writes)
		return err
	})
	if err != nil {
		return Entity[T]{}, err
	}
	if t.codec.meta != nil {
		// The entity as written: a following Update with res.ETag extends
		// this history exactly.
		m := metaOf(reflect.ValueOf(&v).Elem(), t.codec.meta)
		m.ETag, m.writes, m.pk, m.rk, m.upgraded = res.ETag, res.stamp, partitionKey, rowKey, false
	}
	return Entity[T]{PartitionKey: partitionKey, RowKey: rowKey, ETag: res.ETag, Value: v}, nil
}

// relabel names the operation (and table) in an error found before the
// network.
func relabel(err error, op, table string) error {
	var te *Error
	if errors.As(err, &te) {
		te.Op = op
		if te.Table == "" {
			te.Table = table
		}
	}
	return err
}

// txType returns the transaction type of an upsert or update in mode m.
func txType(op string, m Mode) (aztables.TransactionType, error) {
	if m.kind == 1 || m.kind == 2 {
		if op == "upsert" {
			return upsertTypes[m.kind], nil
		}
		return updateTypes[m.kind], nil
	}
	return "", &Error{Op: op, Err: fmt.Errorf("%w: mode must be table.Merge, table.Replace or table.Fields(...), got %v", ErrInvalidEntity, m)}
}

// The transaction types of upserts and updates, by Mode.kind (1 merge, 2
// replace).
var (
	upsertTypes = [3]aztables.TransactionType{"", aztables.TransactionTypeInsertMerge, aztables.TransactionTypeInsertReplace}
	updateTypes = [3]aztables.TransactionType{"", aztables.TransactionTypeUpdateMerge, aztables.TransactionTypeUpdateReplace}
)

// updateModes maps transaction types to the SDK's update modes.
var updateModes = map[aztables.TransactionType]aztables.UpdateMode{
	aztables.TransactionTypeInsertMerge:   aztables.UpdateModeMerge,
	aztables.TransactionTypeUpdateMerge:   aztables.UpdateModeMerge,
	aztables.TransactionTypeInsertReplace: aztables.UpdateModeReplace,
	aztables.TransactionTypeUpdateReplace: aztables.UpdateModeReplace,
}

func ptr[V any](v V) *V { return &v }
