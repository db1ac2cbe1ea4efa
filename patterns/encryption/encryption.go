package encryption

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/patterns/table"
)

// Sentinel errors; every error of this package for these conditions
// satisfies errors.Is with one of them. None of this package's errors
// carries a plaintext, a ciphertext or key bytes.
var (
	// ErrInvalid: an invalid configuration or use, refused before anything
	// is sent: a field T does not have, an index property in user data, a
	// value of a type that cannot be encrypted, a filter that compares an
	// encrypted field, an invalid key (which also matches
	// table.ErrInvalidKey), a value too large once encrypted (also
	// table.ErrTooLarge). It also matches [table.ErrInvalid], as every
	// validation error of tablekit does.
	ErrInvalid = invalid.New("encryption: invalid request")
	// ErrDecrypt: a stored value failed to decrypt: it was changed,
	// copied from another entity, property or table, is not an encrypted
	// value at all, or is not encrypted under the key its header names.
	ErrDecrypt = errors.New("encryption: the stored value failed to decrypt (tampered with, moved from another entity or property, or not encrypted with the key its header names)")
	// ErrUnknownKey: a key id the KeyProvider does not know (also what a
	// stored value whose header's key id was altered reports).
	ErrUnknownKey = errors.New("encryption: unknown key id")
	// ErrBadKey: a key that is not 32 bytes, or a key id that does not fit
	// the header (1 to 255 printable ASCII characters). A key is refused
	// before it is used, so ErrBadKey also matches ErrInvalid.
	ErrBadKey = fmt.Errorf("%w: invalid key", ErrInvalid)
)

// Error is a failure to encrypt or decrypt a property. It names the
// operation, the entity, the property and the key id, never a value, and
// unwraps to a sentinel (ErrDecrypt, ErrUnknownKey, ErrBadKey, ErrInvalid,
// table.ErrTooLarge) or to the KeyProvider's error.
type Error struct {
	Op           string // "insert", "get", "query", "reencrypt", ...
	Table        string
	PartitionKey string
	RowKey       string
	Property     string
	KeyID        string // the key id involved, when known
	Err          error
}

// Error describes the failure without values.
func (e *Error) Error() string {
	op := e.Op
	if op == "" {
		op = "operation"
	}
	s := "encryption: " + op
	if e.Table != "" {
		s += " " + e.Table
	}
	if e.PartitionKey != "" || e.RowKey != "" {
		s += fmt.Sprintf(" (PartitionKey %q, RowKey %q)", e.PartitionKey, e.RowKey)
	}
	if e.Property != "" {
		s += " property " + e.Property
	}
	if e.KeyID != "" {
		s += fmt.Sprintf(" key %q", e.KeyID)
	}
	if e.Err == nil {
		return s + ": failed"
	}
	return s + ": " + strings.TrimPrefix(e.Err.Error(), "encryption: ")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Options configures a Table beyond its required inputs (New's keys and
// fields). A nil *Options means defaults: no blind index, and the table's
// own name bound into every value.
type Options struct {
	// Indexes adds a blind index to some of the encrypted fields, for
	// equality lookups (Find, Where). Default: none.
	Indexes []Index
	// IndexKey is the HMAC-SHA256 key of the blind indexes: 32 bytes, not
	// a data key. Required when Indexes is not empty. Changing it makes
	// every stored blind index stale until Reencrypt with Indexes set
	// rewrites them.
	IndexKey []byte
	// TableName is the table name bound into every value's associated
	// data, in lower case (the service's table names are case-insensitive,
	// so every spelling of a name reads the same values). Default: the
	// table's name. Set it to the original name to read a copy of a table
	// restored under another name.
	TableName string
	// Telemetry receives the spans, metrics and log records of the
	// Table's operations: keys and error texts, never a field's value
	// (this package's errors carry no plaintext). Default (nil): the
	// global OpenTelemetry providers and slog.Default().
	Telemetry *table.Telemetry
}

// Index is a blind index on an encrypted field: HMAC-SHA256 under
// Options.IndexKey of the field's normalized value, stored beside the
// ciphertext in its own string property, for equality lookups.
type Index struct {
	// Field is the encrypted field (one of New's fields).
	Field string
	// Property stores the blind value. Default: Field + "_bidx".
	Property string
	// Normalize maps a string value to the form that is compared, such
	// as TrimLower for email addresses. Default: none (exact bytes). It
	// applies to string values only; other types compare by their exact
	// stored value (all integer types alike). It is called from every
	// goroutine that uses the Table, so it must be safe for concurrent
	// use (a pure function).
	Normalize func(string) string
}

// TrimLower is a Normalize for case-insensitive values such as email
// addresses: strings.ToLower(strings.TrimSpace(s)). Changing a Normalize
// changes every blind value, so the one an application indexes with must
// stay the same function forever: this one is stable.
func TrimLower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Table is a view of a table whose entities of type T have some properties
// encrypted on the client. It offers the verbs of [table.Table] over them:
// values are encrypted before a write leaves the process and decrypted
// after a read. It is safe for concurrent use.
type Table[T any] struct {
	tbl     *table.Table[table.Dynamic]
	name    string // bound into the AAD
	fields  []string
	keys    KeyProvider
	indexes map[string]*Index // by Field
	byProp  map[string]bool   // the index properties
	ikey    []byte
	meta    []int           // index of T's table.Meta field, nil if none
	props   map[string]bool // T's properties
	// fieldIndex maps T's properties to their struct fields.
	fieldIndex map[string][]int
	// jsonProps are T's `json` fields' properties (a lookup may give
	// their JSON text).
	jsonProps map[string]bool
	anyName   bool // T takes any property name (extra map, Dynamic)
	ciphers   ciphers
	obs       *obs.Obs
}

// New returns a Table for entities of type T over tbl, encrypting the
// properties fields names with the data keys of keys. Both are required:
// fields are chosen by their stored property names (a field's name, or
// its name in the `table` tag), each a property of T (any valid name when
// T is table.Dynamic or has an extra map) and not a key (the service needs
// the keys). opts may be nil ([Options]' defaults: no blind index).
//
// New takes a *table.Table[table.Dynamic] because the rows it writes are
// of its own making (T's values sealed); T is its explicit type parameter,
// a struct type [table.New] accepts, or [table.Dynamic]. Every static
// mistake is an [ErrInvalid] here (a short IndexKey also an [ErrBadKey]):
// no keys, no fields, a field T does not have, an index on a field that
// is not encrypted, an index property that collides with a property or key
// field of T or is not a valid property name ([fieldmodel.ValidName]).
func New[T any](tbl *table.Table[table.Dynamic], keys KeyProvider, fields []string, opts *Options) (*Table[T], error) {
	if tbl == nil || keys == nil || len(fields) == 0 {
		return nil, fmt.Errorf("%w: New needs a table, a KeyProvider and at least one field to encrypt", ErrInvalid)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	fs, err := fieldmodel.Of[T]()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err) // T is not a type table accepts
	}
	t := &Table[T]{tbl: tbl, name: o.TableName, keys: keys, indexes: map[string]*Index{}, byProp: map[string]bool{},
		props: map[string]bool{}, fieldIndex: map[string][]int{}, jsonProps: map[string]bool{}, obs: obs.New((*obs.Config)(o.Telemetry))}
	if t.name == "" {
		t.name = tbl.Name()
	}
	t.name = strings.ToLower(t.name) // table names are case-insensitive
	keyFields := map[string]bool{}   // the Go names of T's key fields
	for _, f := range fs {
		switch f.Role {
		case fieldmodel.Property:
			t.props[f.Property] = true
			t.fieldIndex[f.Property] = f.Index
			if f.JSON {
				t.jsonProps[f.Property] = true
			}
		case fieldmodel.PartitionKey, fieldmodel.RowKey:
			keyFields[f.Name] = true
		case fieldmodel.Meta:
			t.meta = f.Index
		case fieldmodel.Extra:
			t.anyName = true
		}
	}
	typ := reflect.TypeFor[T]()
	for _, f := range fields {
		switch {
		case keyFields[f]:
			return nil, fmt.Errorf("%w: %s is a key of %v: keys cannot be encrypted", ErrInvalid, f, typ)
		case fieldmodel.ValidName(f) != nil:
			return nil, fmt.Errorf("%w: field %q cannot be encrypted: %v", ErrInvalid, f, fieldmodel.ValidName(f))
		case !t.props[f] && !t.anyName:
			return nil, fmt.Errorf("%w: %v has no property %q", ErrInvalid, typ, f)
		case slices.Contains(t.fields, f):
			return nil, fmt.Errorf("%w: field %q is listed twice", ErrInvalid, f)
		}
		t.fields = append(t.fields, f)
	}
	for _, ix := range o.Indexes {
		if ix.Property == "" {
			ix.Property = ix.Field + "_bidx"
		}
		switch {
		case keyFields[ix.Property]:
			return nil, fmt.Errorf("%w: index property %q names a key of %v", ErrInvalid, ix.Property, typ)
		case fieldmodel.ValidName(ix.Property) != nil:
			return nil, fmt.Errorf("%w: index property %q: %v", ErrInvalid, ix.Property, fieldmodel.ValidName(ix.Property))
		case !slices.Contains(t.fields, ix.Field):
			return nil, fmt.Errorf("%w: index on %q, which is not one of the encrypted fields", ErrInvalid, ix.Field)
		case t.indexes[ix.Field] != nil:
			return nil, fmt.Errorf("%w: two indexes on %q", ErrInvalid, ix.Field)
		case t.props[ix.Property] || t.byProp[ix.Property] || slices.Contains(t.fields, ix.Property):
			return nil, fmt.Errorf("%w: index property %q is also a property of %v or another index", ErrInvalid, ix.Property, typ)
		}
		t.indexes[ix.Field] = &ix
		t.byProp[ix.Property] = true
	}
	if len(t.indexes) == 0 && len(o.IndexKey) > 0 {
		return nil, fmt.Errorf("%w: IndexKey is set but Indexes is empty", ErrInvalid)
	}
	if len(t.indexes) > 0 {
		if len(o.IndexKey) != 32 {
			return nil, fmt.Errorf("%w: IndexKey has %d bytes (32 needed)", ErrBadKey, len(o.IndexKey))
		}
		t.ikey = slices.Clone(o.IndexKey)
	}
	return t, nil
}

// Table returns the underlying table of encrypted entities: for Apply of
// this package's changes (InsertOps, UpsertOps, UpdateOps) with others,
// for DeleteOp, and for reading the stored form.
func (t *Table[T]) Table() *table.Table[table.Dynamic] { return t.tbl }

// metaOf returns v's table.Meta, or nil when T has none.
func (t *Table[T]) metaOf(v *T) *table.Meta {
	if t.meta == nil {
		return nil
	}
	return reflect.ValueOf(v).Elem().FieldByIndex(t.meta).Addr().Interface().(*table.Meta)
}

// encrypt returns v as the entity stored: its encrypted fields sealed
// under the current key, each with its blind index, and v's Meta (so that
// the core can verify a lost response of a conditional update exactly).
// With a Fields mode, only the fields it names are sealed (the others are
// not sent). It also returns the mode to write d with (see mode).
func (t *Table[T]) encrypt(ctx context.Context, op string, v *T, mode table.Mode) (table.Dynamic, table.Mode, error) {
	mode, err := t.mode(mode)
	if err != nil {
		return table.Dynamic{}, mode, err
	}
	d, err := table.ToDynamic(*v)
	if err != nil {
		return d, mode, t.coreErr(op, "", "", err, true)
	}
	if m := t.metaOf(v); m != nil {
		d.Meta = *m
	}
	if names := fieldmodel.ModeFields(mode); names != nil {
		for _, f := range t.fields {
			if !slices.Contains(names, f) {
				delete(d.Properties, f) // not sent: not sealed
			}
		}
	}
	return d, mode, t.seal(ctx, op, &d, nil)
}

// sealKey is a key to seal with: the current key, fetched on first use.
type sealKey struct {
	id   string
	aead cipher.AEAD
}

// currentKey returns the KeyProvider's current key, ready to seal with.
func (t *Table[T]) currentKey(ctx context.Context, op string) (sealKey, error) {
	id, key, err := t.keys.CurrentKey(ctx)
	if err != nil {
		return sealKey{}, &Error{Op: op, Table: t.tbl.Name(), Err: err}
	}
	aead, err := t.ciphers.get(id, key)
	if err != nil {
		return sealKey{}, &Error{Op: op, Table: t.tbl.Name(), KeyID: id, Err: err}
	}
	return sealKey{id, aead}, nil
}

// seal encrypts d's plaintext fields in place and sets their blind
// indexes, under k, or when k is nil the current key, fetched only when d
// has a field to seal.
func (t *Table[T]) seal(ctx context.Context, op string, d *table.Dynamic, k *sealKey) error {
	fail := func(prop, id string, err error) error {
		return &Error{Op: op, Table: t.tbl.Name(), PartitionKey: d.PartitionKey, RowKey: d.RowKey, Property: prop, KeyID: id, Err: err}
	}
	for p := range t.byProp {
		if _, ok := d.Properties[p]; ok {
			return fail(p, "", fmt.Errorf("%w: the blind index property is written by this package only", ErrInvalid))
		}
	}
	for _, f := range t.fields {
		pv, ok := d.Properties[f]
		if !ok {
			continue
		}
		if k == nil {
			cur, err := t.currentKey(ctx, op)
			if err != nil {
				var e *Error
				errors.As(err, &e)
				e.PartitionKey, e.RowKey = d.PartitionKey, d.RowKey
				return e
			}
			k = &cur
		}
		if ix := t.indexes[f]; ix != nil {
			b, err := t.blind(ix, pv)
			if err != nil {
				return fail(f, "", err)
			}
			d.Properties[ix.Property] = b
		}
		ct, err := seal(k.aead, k.id, binding{t.name, d.PartitionKey, d.RowKey, f}, pv, t.tbl.Profile().MaxValueSize)
		if err != nil {
			return fail(f, k.id, err)
		}
		d.Properties[f] = ct
	}
	return nil
}

// unseal decrypts d's encrypted fields in place and removes its blind index
// properties.
func (t *Table[T]) unseal(ctx context.Context, op string, d *table.Dynamic) error {
	for p := range t.byProp {
		delete(d.Properties, p)
	}
	for _, f := range t.fields {
		pv, ok := d.Properties[f]
		if !ok {
			continue
		}
		v, id, err := t.decryptValue(ctx, d, f, pv)
		if err != nil {
			return &Error{Op: op, Table: t.tbl.Name(), PartitionKey: d.PartitionKey, RowKey: d.RowKey, Property: f, KeyID: id, Err: err}
		}
		d.Properties[f] = v
	}
	return nil
}

// decryptValue decrypts the stored value pv of property f of d.
func (t *Table[T]) decryptValue(ctx context.Context, d *table.Dynamic, f string, pv any) (any, string, error) {
	b, ok := pv.([]byte)
	if !ok {
		return nil, "", fmt.Errorf("%w: stored as %s, not as an encrypted Edm.Binary", ErrDecrypt, typeName(pv))
	}
	id, n, ok := header(b)
	if !ok {
		return nil, "", fmt.Errorf("%w: not a value of this format", ErrDecrypt)
	}
	key, err := t.keys.Key(ctx, id)
	if err != nil {
		return nil, id, err
	}
	aead, err := t.ciphers.get(id, key)
	if err != nil {
		return nil, id, err
	}
	v, err := open(aead, b, n, binding{t.name, d.PartitionKey, d.RowKey, f})
	return v, id, err
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "Edm.String"
	case bool:
		return "Edm.Boolean"
	case int32:
		return "Edm.Int32"
	case int64:
		return "Edm.Int64"
	case float64:
		return "Edm.Double"
	case time.Time:
		return "Edm.DateTime"
	case table.GUID:
		return "Edm.Guid"
	}
	return "another type"
}

// decrypt returns the T that the stored entity d holds.
func (t *Table[T]) decrypt(ctx context.Context, op string, d table.Dynamic) (T, error) {
	if err := t.unseal(ctx, op, &d); err != nil {
		var zero T
		return zero, err
	}
	return t.fromDynamic(op, d)
}

// entity is decrypt in the read envelope: d's keys and ETag, and the T it
// holds.
func (t *Table[T]) entity(ctx context.Context, op string, d table.Dynamic) (table.Entity[T], error) {
	v, err := t.decrypt(ctx, op, d)
	if err != nil {
		return table.Entity[T]{}, err
	}
	return envelope(d, v), nil
}

// envelope is v, read from the stored entity d, in the read envelope.
func envelope[T any](d table.Dynamic, v T) table.Entity[T] {
	return table.Entity[T]{PartitionKey: d.PartitionKey, RowKey: d.RowKey, ETag: d.ETag, Value: v}
}

// propertyRe finds the property a core error names.
var propertyRe = regexp.MustCompile(`property "?([A-Za-z_][A-Za-z0-9_]*)`)

// coreErr turns err, an error of table.ToDynamic or table.FromDynamic
// about entity (pk, rk) (empty: the keys err names), into an *Error naming
// the operation, the entity and, when it names one of T's properties, the
// property, without the core's text, which may quote a value (an invalid
// GUID, a time out of range, an integer that does not fit). errors.Is
// still matches table.ErrTooLarge or table.ErrInvalidEntity; an error of
// encoding (a value given to be written or looked up) also matches
// ErrInvalid.
func (t *Table[T]) coreErr(op, pk, rk string, err error, encoding bool) error {
	var cause error = ErrInvalid
	switch {
	case errors.Is(err, table.ErrTooLarge):
		cause = table.ErrTooLarge
	case errors.Is(err, table.ErrInvalidEntity):
		cause = table.ErrInvalidEntity
	}
	wrapped := fmt.Errorf("%w (details withheld: they may quote a value)", cause)
	if encoding && cause != ErrInvalid {
		wrapped = fmt.Errorf("%w: %w", ErrInvalid, wrapped)
	}
	e := &Error{Op: op, Table: t.tbl.Name(), PartitionKey: pk, RowKey: rk, Err: wrapped}
	if te := (*table.Error)(nil); pk == "" && rk == "" && errors.As(err, &te) {
		e.PartitionKey, e.RowKey = te.PartitionKey, te.RowKey
	}
	for _, m := range propertyRe.FindAllStringSubmatch(err.Error(), -1) {
		if t.props[m[1]] || slices.Contains(t.fields, m[1]) {
			e.Property = m[1] // a name of T's, never a value
			break
		}
	}
	return e
}

func (t *Table[T]) fromDynamic(op string, d table.Dynamic) (T, error) {
	v, err := table.FromDynamic[T](d)
	if err != nil {
		var zero T
		return zero, t.coreErr(op, d.PartitionKey, d.RowKey, err, false)
	}
	if m := t.metaOf(&v); m != nil {
		*m = d.Meta // with the write history FromDynamic does not carry
	}
	return v, nil
}

// mode returns m, with a Fields merge extended by the blind index property
// of each encrypted field it names, so a value and its index are always
// written together.
func (t *Table[T]) mode(m table.Mode) (table.Mode, error) {
	names := fieldmodel.ModeFields(m)
	if names == nil {
		return m, nil // Merge, Replace, or an invalid Mode the core refuses
	}
	out := slices.Clone(names)
	for _, n := range names {
		if !t.props[n] && !t.anyName && !t.byProp[n] {
			return m, fmt.Errorf("%w: Fields: %s has no property %q", ErrInvalid, reflect.TypeFor[T](), n)
		}
		if t.byProp[n] {
			return m, fmt.Errorf("%w: Fields names the blind index property %q: name its field instead", ErrInvalid, n)
		}
		if ix := t.indexes[n]; ix != nil {
			out = append(out, ix.Property)
		}
	}
	return table.Fields(out...), nil
}

// Insert encrypts v's fields and inserts it ([table.Table.Insert]): one
// round trip, table.ErrAlreadyExists when the entity exists.
func (t *Table[T]) Insert(ctx context.Context, v T) (res table.Result, err error) {
	ctx, sp := t.obs.Start(ctx, opInsert, t.tbl.Name(), "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	return t.write(ctx, &sp, "insert", &v, table.Mode{}, func(d table.Dynamic, _ table.Mode) (table.Result, error) {
		return t.tbl.Insert(ctx, d)
	})
}

// Upsert encrypts v's fields and inserts or merges or replaces it
// ([table.Table.Upsert]): one round trip. A Fields merge naming an
// encrypted field also writes its blind index.
func (t *Table[T]) Upsert(ctx context.Context, v T, mode table.Mode) (res table.Result, err error) {
	ctx, sp := t.obs.Start(ctx, opUpsert, t.tbl.Name(), "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	return t.write(ctx, &sp, "upsert", &v, mode, func(d table.Dynamic, m table.Mode) (table.Result, error) {
		return t.tbl.Upsert(ctx, d, m)
	})
}

// Update encrypts v's fields and updates the entity if etag matches
// ([table.Table.Update]: azcore.ETagAny for any version; empty is
// table.ErrNoETag). One round trip. Pass v as read (with its table.Meta)
// for exact verification of a lost response.
func (t *Table[T]) Update(ctx context.Context, v T, etag azcore.ETag, mode table.Mode) (res table.Result, err error) {
	ctx, sp := t.obs.Start(ctx, opUpdate, t.tbl.Name(), "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	return t.write(ctx, &sp, "update", &v, mode, func(d table.Dynamic, m table.Mode) (table.Result, error) {
		return t.tbl.Update(ctx, d, etag, m)
	})
}

// write encrypts v as name does (see encrypt), names its partition on sp
// (the keys are known once it is encoded), and sends it with send.
func (t *Table[T]) write(ctx context.Context, sp *obs.Span, name string, v *T, mode table.Mode, send func(table.Dynamic, table.Mode) (table.Result, error)) (table.Result, error) {
	d, m, err := t.encrypt(ctx, name, v, mode)
	if err != nil {
		return table.Result{}, err
	}
	sp.SetPartition(d.PartitionKey)
	res, err := send(d, m)
	return res, invalid.Mark(ErrInvalid, err)
}

// Delete removes the entity if etag matches ([table.Table.Delete]:
// azcore.ETagAny for any version; empty is table.ErrNoETag). One round
// trip; no key is needed.
func (t *Table[T]) Delete(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) (err error) {
	ctx, sp := t.obs.Start(ctx, opDelete, t.tbl.Name(), partitionKey)
	defer func() { sp.EndWrite(err, false) }()
	return invalid.Mark(ErrInvalid, t.tbl.Delete(ctx, partitionKey, rowKey, etag))
}

// Get reads and decrypts one entity ([table.Table.Get]): one round trip.
// ErrDecrypt, ErrUnknownKey or the KeyProvider's error when a value
// cannot be decrypted; table.ErrNotFound when the entity does not exist.
func (t *Table[T]) Get(ctx context.Context, partitionKey, rowKey string, opts *table.GetOptions) (_ table.Entity[T], err error) {
	ctx, sp := t.obs.Start(ctx, opGet, t.tbl.Name(), partitionKey)
	defer func() { sp.End(err) }()
	e, err := t.tbl.Get(ctx, partitionKey, rowKey, opts)
	if err != nil {
		return table.Entity[T]{}, invalid.Mark(ErrInvalid, err)
	}
	return t.entity(ctx, "get", e.Value)
}

// Modify is [table.Table.Modify] over decrypted values: it reads the
// entity, calls fn with it decrypted, and writes it back encrypted under
// the current key, conditioned on the ETag read, again on a conflict. It
// returns the entity as written, with the write's ETag. Two round trips
// without contention. opts.Mode defaults to Merge; a Fields merge naming
// an encrypted field also writes its blind index.
func (t *Table[T]) Modify(ctx context.Context, partitionKey, rowKey string, fn func(*T) error, opts *table.ModifyOptions) (_ table.Entity[T], err error) {
	ctx, sp := t.obs.Start(ctx, opModify, t.tbl.Name(), partitionKey)
	defer func() { sp.EndWrite(err, false) }()
	var o table.ModifyOptions
	if opts != nil {
		o = *opts
	}
	mode := o.Mode
	m, err := t.mode(mode) // the zero Mode passes: the core's default, Merge
	if err != nil {
		return table.Entity[T]{}, err
	}
	o.Mode = m
	var out T
	var stopped error // fn's error, or a decryption's: returned as it is
	written, err := t.tbl.Modify(ctx, partitionKey, rowKey, func(d *table.Dynamic) error {
		v, err := t.decrypt(ctx, "modify", *d)
		if err == nil {
			err = fn(&v)
		}
		if err == nil {
			var enc table.Dynamic
			if enc, _, err = t.encrypt(ctx, "modify", &v, mode); err == nil {
				out, *d = v, enc
			}
		}
		stopped = err
		return err
	}, &o)
	if err != nil {
		if stopped != nil && errors.Is(err, stopped) {
			return table.Entity[T]{}, err
		}
		return table.Entity[T]{}, invalid.Mark(ErrInvalid, err)
	}
	if m := t.metaOf(&out); m != nil {
		*m = written.Value.Meta // the version written, ready for a following Update
	}
	return table.Entity[T]{PartitionKey: written.PartitionKey, RowKey: written.RowKey, ETag: written.ETag, Value: out}, nil
}

// Query returns the decrypted results of q ([table.Table.Query]): one
// round trip per page, one page ahead. An entity that fails to decrypt
// ends the sequence with its error. Filters compare stored values: an
// encrypted field's stored value is ciphertext, so compare its blind index
// (Where) instead; a filter that names an encrypted field is refused
// before the network (ErrInvalid, also table.ErrInvalidFilter), since it
// would send the plaintext to the service and match nothing.
func (t *Table[T]) Query(ctx context.Context, q *table.Query) iter.Seq2[T, error] {
	return obs.Seq2(t.obs, ctx, opQuery, t.tbl.Name(), "", func(ctx context.Context) iter.Seq2[T, error] {
		return t.query(ctx, q)
	})
}

// query is Query, without its span.
func (t *Table[T]) query(ctx context.Context, q *table.Query) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for e, err := range t.queryEntities(ctx, q) {
			if !yield(e.Value, err) || err != nil {
				return
			}
		}
	}
}

// QueryEntities is Query yielding each entity in its envelope, with the
// keys it is stored under and its ETag ([table.Table.QueryEntities]): for
// conditional updates of each entity when T has no table.Meta. Same cost
// and filter rules as Query.
func (t *Table[T]) QueryEntities(ctx context.Context, q *table.Query) iter.Seq2[table.Entity[T], error] {
	return obs.Seq2(t.obs, ctx, opQuery, t.tbl.Name(), "", func(ctx context.Context) iter.Seq2[table.Entity[T], error] {
		return t.queryEntities(ctx, q)
	})
}

// queryEntities is QueryEntities, without its span.
func (t *Table[T]) queryEntities(ctx context.Context, q *table.Query) iter.Seq2[table.Entity[T], error] {
	return func(yield func(table.Entity[T], error) bool) {
		if q != nil {
			if err := t.checkFilter("query", q.Filter); err != nil {
				yield(table.Entity[T]{}, err)
				return
			}
		}
		for e, err := range t.tbl.QueryEntities(ctx, q) {
			var v table.Entity[T]
			if err == nil {
				v, err = t.entity(ctx, "query", e.Value)
			}
			if !yield(v, invalid.Mark(ErrInvalid, err)) || err != nil {
				return
			}
		}
	}
}

// QueryPage fetches and decrypts one page of q ([table.Table.QueryPage]):
// one round trip. Resume with q.Cursor = page.Next. A filter that names an
// encrypted field is refused, as by Query.
func (t *Table[T]) QueryPage(ctx context.Context, q *table.Query) (_ table.Page[T], err error) {
	ctx, sp := t.obs.Start(ctx, opQueryPage, t.tbl.Name(), "")
	defer func() { sp.End(err) }()
	if q != nil {
		if err := t.checkFilter("query", q.Filter); err != nil {
			return table.Page[T]{}, err
		}
	}
	p, err := t.tbl.QueryPage(ctx, q)
	if err != nil {
		return table.Page[T]{}, invalid.Mark(ErrInvalid, err)
	}
	out := table.Page[T]{Items: make([]T, len(p.Items)), Next: p.Next}
	for i, d := range p.Items {
		if out.Items[i], err = t.decrypt(ctx, "query", d); err != nil {
			return table.Page[T]{}, err
		}
	}
	return out, nil
}

// InsertOps is Insert as a [table.Change], to join a composed write
// ("Composing patterns" in package table: t.Table().Apply, or
// eventual's Queue.Apply): the entity encrypted, as one insert. It takes
// ctx because sealing fetches the current key (the KeyProvider may use
// the network); nothing is written. A value this package or the core
// refuses, or a KeyProvider error, is its error, and no change; so for
// UpsertOps and UpdateOps.
func (t *Table[T]) InsertOps(ctx context.Context, v T) (table.Change, error) {
	return t.ops(ctx, "insert", &v, table.Mode{}, func(d table.Dynamic, _ table.Mode) table.Op { return t.tbl.InsertOp(d) })
}

// UpsertOps is Upsert as a [table.Change] (see InsertOps).
func (t *Table[T]) UpsertOps(ctx context.Context, v T, mode table.Mode) (table.Change, error) {
	return t.ops(ctx, "upsert", &v, mode, t.tbl.UpsertOp)
}

// UpdateOps is Update as a [table.Change] (see InsertOps): etag is the
// version read, or azcore.ETagAny; empty is [table.ErrNoETag].
func (t *Table[T]) UpdateOps(ctx context.Context, v T, etag azcore.ETag, mode table.Mode) (table.Change, error) {
	return t.ops(ctx, "update", &v, mode, func(d table.Dynamic, m table.Mode) table.Op { return t.tbl.UpdateOp(d, etag, m) })
}

// ops encrypts v as name does (see encrypt) and builds its change with
// build; an op the core refuses is the core's error made to match
// ErrInvalid too.
func (t *Table[T]) ops(ctx context.Context, name string, v *T, mode table.Mode, build func(table.Dynamic, table.Mode) table.Op) (table.Change, error) {
	d, m, err := t.encrypt(ctx, name, v, mode)
	if err != nil {
		return table.Change{}, err
	}
	op := build(d, m)
	if err := op.Err(); err != nil {
		return table.Change{}, invalid.Mark(ErrInvalid, err)
	}
	return table.Change{By: fmt.Sprintf("encryption %q", t.name), Ops: []table.Op{op}}, nil
}

// checkFilter refuses a filter that compares an encrypted field: its
// stored value is ciphertext, so the comparison would send the plaintext
// to the service and match nothing.
func (t *Table[T]) checkFilter(op string, f table.Filter) error {
	for _, n := range fieldmodel.FilterProperties(f) {
		if slices.Contains(t.fields, n) {
			return &Error{Op: op, Table: t.tbl.Name(), Property: n, Err: fmt.Errorf("%w: %w: the filter compares an encrypted field, whose stored value is ciphertext (it would send the plaintext and match nothing): compare its blind index (Where)", ErrInvalid, table.ErrInvalidFilter)}
		}
	}
	return nil
}

// The operations of this package, for telemetry.
var (
	opInsert    = obs.Write("encryption.Insert")
	opUpsert    = obs.Write("encryption.Upsert")
	opUpdate    = obs.Write("encryption.Update")
	opDelete    = obs.Write("encryption.Delete")
	opModify    = obs.Write("encryption.Modify")
	opReencrypt = obs.Write("encryption.Reencrypt")
	opGet       = obs.Read("encryption.Get")
	opQuery     = obs.Read("encryption.Query")
	opQueryPage = obs.Read("encryption.QueryPage")
	opFind      = obs.Read("encryption.Find")
)
