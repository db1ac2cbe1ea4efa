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
	"unicode"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/table"
)

// Sentinel errors; every error of this package for these conditions
// satisfies errors.Is with one of them. None of this package's errors
// carries a plaintext, a ciphertext or key bytes.
var (
	// ErrDecrypt: a stored value failed to decrypt: it was changed,
	// copied from another entity, property or table, is not an encrypted
	// value at all, or is not encrypted under the key its header names.
	ErrDecrypt = errors.New("encryption: the stored value failed to decrypt (tampered with, moved from another entity or property, or not encrypted with the key its header names)")
	// ErrUnknownKey: a key id the KeyProvider does not know (also what a
	// stored value whose header's key id was altered reports).
	ErrUnknownKey = errors.New("encryption: unknown key id")
	// ErrBadKey: a key that is not 32 bytes, or a key id that does not fit
	// the header (1 to 255 printable ASCII characters).
	ErrBadKey = errors.New("encryption: invalid key")
	// ErrInvalid: an invalid configuration (Options) or use: a field T
	// does not have, an index property in user data, a value of a type
	// that cannot be encrypted, a filter that compares an encrypted field,
	// an invalid key (which also matches table.ErrInvalidKey).
	ErrInvalid = errors.New("encryption: invalid options or use")
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

// Options configures a Table. Fields is required, and so is Keys.
type Options struct {
	// Fields are the properties to encrypt, by their stored names (a
	// field's name, or its `table:"Name"` tag). Each must be a property of
	// T (any name when T is table.Dynamic or has an extra map). Keys
	// cannot be encrypted: the service needs them.
	Fields []string
	// Keys supplies the data keys (NewStaticKeys, or your own KeyProvider
	// over Key Vault).
	Keys KeyProvider
	// Indexes adds a blind index to some of the Fields, for equality
	// lookups (Lookup, Where). Default: none.
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
}

// Index is a blind index on an encrypted field: HMAC-SHA256 under
// Options.IndexKey of the field's normalized value, stored beside the
// ciphertext in its own string property, for equality lookups.
type Index struct {
	// Field is the encrypted field (one of Options.Fields).
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
// addresses: strings.ToLower(strings.TrimSpace(s)).
func TrimLower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Table is a view of a table whose entities of type T have some properties
// encrypted on the client. It offers the verbs of table.Table over them:
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
	anyName    bool // T takes any property name (extra map, Dynamic)
	ciphers    ciphers
}

// New returns a Table for entities of type T over tbl, encrypting the
// properties opts.Fields names. T is a struct type table.New accepts,
// with its keys in fields (PartitionKey and RowKey, or tagged pk and rk),
// or table.Dynamic. Every static mistake is an ErrInvalid (or
// ErrBadKey for IndexKey) here: missing Keys, no Fields, a field T does
// not have, an index on a field that is not encrypted, an index property
// that collides with a property of T.
func New[T any](tbl *table.Table[table.Dynamic], opts *Options) (*Table[T], error) {
	if tbl == nil || opts == nil || opts.Keys == nil || len(opts.Fields) == 0 {
		return nil, fmt.Errorf("%w: a table, and Options with Fields and Keys, are required", ErrInvalid)
	}
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a struct type", ErrInvalid, typ)
	}
	fields, err := table.FieldsOf[T]()
	if err != nil {
		return nil, err // T is not a type table accepts
	}
	var names []string
	extra := false
	for _, f := range fields {
		switch f.Role {
		case table.PropertyField:
			names = append(names, f.Property)
		case table.ExtraField:
			extra = true
		}
	}
	t := &Table[T]{tbl: tbl, name: opts.TableName, keys: opts.Keys, indexes: map[string]*Index{}, byProp: map[string]bool{}}
	if t.name == "" {
		t.name = tbl.Name()
	}
	t.name = strings.ToLower(t.name) // table names are case-insensitive
	t.props = map[string]bool{}
	for _, n := range names {
		t.props[n] = true
	}
	t.anyName = extra
	keyNames := keyFieldNames(typ)
	t.fieldIndex = map[string][]int{}
	for _, f := range reflect.VisibleFields(typ) {
		name, _, _ := strings.Cut(f.Tag.Get("table"), ",")
		if name == "" {
			name = f.Name
		}
		if t.props[name] && f.IsExported() {
			t.fieldIndex[name] = f.Index
		}
	}
	for _, f := range opts.Fields {
		switch {
		case reserved[f] || keyNames[f]:
			return nil, fmt.Errorf("%w: %s cannot be encrypted", ErrInvalid, f)
		case !t.props[f] && !t.anyName:
			return nil, fmt.Errorf("%w: %v has no property %q", ErrInvalid, typ, f)
		case slices.Contains(t.fields, f):
			return nil, fmt.Errorf("%w: field %q is listed twice", ErrInvalid, f)
		case table.Eq(f, "").Err() != nil:
			return nil, fmt.Errorf("%w: %q is not a valid property name", ErrInvalid, f)
		}
		t.fields = append(t.fields, f)
	}
	for _, ix := range opts.Indexes {
		if ix.Property == "" {
			ix.Property = ix.Field + "_bidx"
		}
		switch {
		case reserved[ix.Property] || keyNames[ix.Property]:
			return nil, fmt.Errorf("%w: index property %q is reserved or names a key of %v", ErrInvalid, ix.Property, typ)
		case !slices.Contains(t.fields, ix.Field):
			return nil, fmt.Errorf("%w: index on %q, which is not one of Fields", ErrInvalid, ix.Field)
		case t.indexes[ix.Field] != nil:
			return nil, fmt.Errorf("%w: two indexes on %q", ErrInvalid, ix.Field)
		case t.props[ix.Property] || t.byProp[ix.Property] || slices.Contains(t.fields, ix.Property):
			return nil, fmt.Errorf("%w: index property %q is also a property of %v or another index", ErrInvalid, ix.Property, typ)
		case table.Eq(ix.Property, "").Err() != nil:
			return nil, fmt.Errorf("%w: index property %q is not a valid property name", ErrInvalid, ix.Property)
		}
		t.indexes[ix.Field] = &ix
		t.byProp[ix.Property] = true
	}
	if len(t.indexes) == 0 && len(opts.IndexKey) > 0 {
		return nil, fmt.Errorf("%w: IndexKey is set but Indexes is empty", ErrInvalid)
	}
	if len(t.indexes) > 0 {
		if len(opts.IndexKey) != 32 {
			return nil, fmt.Errorf("%w: IndexKey has %d bytes (32 needed)", ErrBadKey, len(opts.IndexKey))
		}
		t.ikey = slices.Clone(opts.IndexKey)
	}
	for _, f := range reflect.VisibleFields(typ) {
		if f.Type == reflect.TypeFor[table.Meta]() {
			t.meta = f.Index
			break
		}
	}
	return t, nil
}

// reserved are the property names the service or the core keeps.
var reserved = map[string]bool{"PartitionKey": true, "RowKey": true, "Timestamp": true, table.WriteProperty: true}

// keyFieldNames returns the names (Go and tag) of typ's key fields: the
// string fields tagged pk or rk, which table stores as PartitionKey and
// RowKey.
func keyFieldNames(typ reflect.Type) map[string]bool {
	out := map[string]bool{}
	for _, f := range reflect.VisibleFields(typ) {
		name, opts, _ := strings.Cut(f.Tag.Get("table"), ",")
		if o := strings.Split(opts, ","); f.Type.Kind() == reflect.String && (slices.Contains(o, "pk") || slices.Contains(o, "rk")) {
			out[f.Name] = true
			if name != "" {
				out[name] = true
			}
		}
	}
	return out
}

// Table returns the underlying table of encrypted entities: for Submit of
// this package's ops, and for reading the stored form.
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
		return d, mode, t.coreErr(op, "", "", err)
	}
	if m := t.metaOf(v); m != nil {
		d.Meta = *m
	}
	if names := mode.FieldNames(); names != nil {
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
		ct, err := seal(k.aead, k.id, binding{t.name, d.PartitionKey, d.RowKey, f}, pv)
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

// propertyRe finds the property a core error names.
var propertyRe = regexp.MustCompile(`property "?([A-Za-z_][A-Za-z0-9_]*)`)

// coreErr turns err, an error of table.ToDynamic or table.FromDynamic
// about entity (pk, rk) (empty: the keys err names), into an *Error naming the operation, the entity
// and, when it names one of T's properties, the property, without the
// core's text, which may quote a value (an invalid GUID, a time out of
// range, an integer that does not fit). errors.Is still matches
// table.ErrTooLarge or table.ErrInvalidEntity.
func (t *Table[T]) coreErr(op, pk, rk string, err error) error {
	cause := ErrInvalid
	switch {
	case errors.Is(err, table.ErrTooLarge):
		cause = table.ErrTooLarge
	case errors.Is(err, table.ErrInvalidEntity):
		cause = table.ErrInvalidEntity
	}
	e := &Error{Op: op, Table: t.tbl.Name(), PartitionKey: pk, RowKey: rk, Err: fmt.Errorf("%w (details withheld: they may quote a value)", cause)}
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
		return zero, t.coreErr(op, d.PartitionKey, d.RowKey, err)
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
	names := m.FieldNames()
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

// Insert encrypts v's fields and inserts it (table.Table.Insert): one
// round trip, ErrAlreadyExists when the entity exists.
func (t *Table[T]) Insert(ctx context.Context, v T) (table.Result, error) {
	d, _, err := t.encrypt(ctx, "insert", &v, table.Mode{})
	if err != nil {
		return table.Result{}, err
	}
	res, err := t.tbl.Insert(ctx, d)
	return res, keyErr(err)
}

// Upsert encrypts v's fields and inserts or merges or replaces it
// (table.Table.Upsert): one round trip. A Fields merge naming an
// encrypted field also writes its blind index.
func (t *Table[T]) Upsert(ctx context.Context, v T, mode table.Mode) (table.Result, error) {
	d, m, err := t.encrypt(ctx, "upsert", &v, mode)
	if err != nil {
		return table.Result{}, err
	}
	res, err := t.tbl.Upsert(ctx, d, m)
	return res, keyErr(err)
}

// Update encrypts v's fields and updates the entity if etag matches
// (table.Table.Update: azcore.ETagAny for any version; empty is
// table.ErrNoETag). One round trip. Pass v as read (with its table.Meta)
// for exact verification of a lost response.
func (t *Table[T]) Update(ctx context.Context, v T, etag azcore.ETag, mode table.Mode) (table.Result, error) {
	d, m, err := t.encrypt(ctx, "update", &v, mode)
	if err != nil {
		return table.Result{}, err
	}
	res, err := t.tbl.Update(ctx, d, etag, m)
	return res, keyErr(err)
}

// Delete removes the entity if etag matches (table.Table.Delete). One
// round trip; no key is needed.
func (t *Table[T]) Delete(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) error {
	return keyErr(t.tbl.Delete(ctx, partitionKey, rowKey, etag))
}

// Get reads and decrypts one entity: one round trip. ErrDecrypt,
// ErrUnknownKey or the KeyProvider's error when a value cannot be
// decrypted; table.ErrNotFound when the entity does not exist.
func (t *Table[T]) Get(ctx context.Context, partitionKey, rowKey string, opts *table.GetOptions) (T, error) {
	d, err := t.tbl.Get(ctx, partitionKey, rowKey, opts)
	if err != nil {
		var zero T
		return zero, keyErr(err)
	}
	return t.decrypt(ctx, "get", d.Value)
}

// Modify is table.Table.Modify over decrypted values: it reads the entity,
// calls fn with it decrypted, and writes it back encrypted under the
// current key, conditioned on the ETag read, again on a conflict. Two
// round trips without contention. opts.Mode defaults to Merge; a Fields
// merge naming an encrypted field also writes its blind index.
func (t *Table[T]) Modify(ctx context.Context, partitionKey, rowKey string, fn func(*T) error, opts *table.ModifyOptions) (T, table.Result, error) {
	var zero T
	var o table.ModifyOptions
	if opts != nil {
		o = *opts
	}
	mode := o.Mode
	m, err := t.mode(mode) // the zero Mode passes: the core's default, Merge
	if err != nil {
		return zero, table.Result{}, err
	}
	o.Mode = m
	var out T
	written, err := t.tbl.Modify(ctx, partitionKey, rowKey, func(d *table.Dynamic) error {
		v, err := t.decrypt(ctx, "modify", *d)
		if err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		enc, _, err := t.encrypt(ctx, "modify", &v, mode)
		if err != nil {
			return err
		}
		out, *d = v, enc
		return nil
	}, &o)
	if err != nil {
		return zero, table.Result{}, keyErr(err)
	}
	if m := t.metaOf(&out); m != nil {
		*m = written.Value.Meta // the version written, ready for a following Update
	}
	return out, table.Result{ETag: written.ETag}, nil
}

// Query returns the decrypted results of q (table.Table.Query): one round
// trip per page. An entity that fails to decrypt ends the sequence with
// its error. Filters compare stored values: an encrypted field's stored
// value is ciphertext, so compare its blind index (Where) instead; a
// filter that names an encrypted field is refused before the network
// (ErrInvalid, also table.ErrInvalidFilter), since it would send the
// plaintext to the service and match nothing.
func (t *Table[T]) Query(ctx context.Context, q *table.Query) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		if q != nil {
			if err := t.checkFilter("query", q.Filter); err != nil {
				var zero T
				yield(zero, err)
				return
			}
		}
		for d, err := range t.tbl.Query(ctx, q) {
			var v T
			if err == nil {
				v, err = t.decrypt(ctx, "query", d)
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// QueryPage fetches and decrypts one page of q (table.Table.QueryPage):
// one round trip. Resume with q.Cursor = page.Next. A filter that names an
// encrypted field is refused, as by Query.
func (t *Table[T]) QueryPage(ctx context.Context, q *table.Query) (table.Page[T], error) {
	if q != nil {
		if err := t.checkFilter("query", q.Filter); err != nil {
			return table.Page[T]{}, err
		}
	}
	p, err := t.tbl.QueryPage(ctx, q)
	if err != nil {
		return table.Page[T]{}, err
	}
	out := table.Page[T]{Items: make([]T, len(p.Items)), Next: p.Next}
	for i, d := range p.Items {
		if out.Items[i], err = t.decrypt(ctx, "query", d); err != nil {
			return table.Page[T]{}, err
		}
	}
	return out, nil
}

// InsertOp is an encrypted insert for table.Submit (with Table().Submit or
// table.Submit on the same client). An op the core refuses (an invalid key,
// a limit) is returned with its error (op.Err()), as by UpsertOp and
// UpdateOp.
func (t *Table[T]) InsertOp(ctx context.Context, v T) (table.Op, error) {
	d, _, err := t.encrypt(ctx, "insert", &v, table.Mode{})
	if err != nil {
		return table.Op{}, err
	}
	op := t.tbl.InsertOp(d)
	return op, keyErr(op.Err())
}

// UpsertOp is an encrypted upsert for table.Submit.
func (t *Table[T]) UpsertOp(ctx context.Context, v T, mode table.Mode) (table.Op, error) {
	d, m, err := t.encrypt(ctx, "upsert", &v, mode)
	if err != nil {
		return table.Op{}, err
	}
	op := t.tbl.UpsertOp(d, m)
	return op, keyErr(op.Err())
}

// UpdateOp is an encrypted conditional update for table.Submit.
func (t *Table[T]) UpdateOp(ctx context.Context, v T, etag azcore.ETag, mode table.Mode) (table.Op, error) {
	d, m, err := t.encrypt(ctx, "update", &v, mode)
	if err != nil {
		return table.Op{}, err
	}
	op := t.tbl.UpdateOp(d, etag, m)
	return op, keyErr(op.Err())
}

// keyErr makes an invalid-key error of the core (keys given by the caller,
// checked before the network) match ErrInvalid too.
func keyErr(err error) error {
	if errors.Is(err, table.ErrInvalidKey) && !errors.Is(err, ErrInvalid) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// checkFilter refuses a filter that compares an encrypted field: its
// stored value is ciphertext, so the comparison would send the plaintext
// to the service and match nothing. table.Filter does not list the
// properties it compares, so checkFilter reads them from its OData text
// (filterProperties).
func (t *Table[T]) checkFilter(op string, f table.Filter) error {
	if f.Err() != nil {
		return nil // the core refuses it before the network
	}
	names, ok := filterProperties(f.String())
	if !ok {
		return &Error{Op: op, Table: t.tbl.Name(), Err: fmt.Errorf("%w: %w: a string literal of the filter is not closed, so the properties it compares are unknown", ErrInvalid, table.ErrInvalidFilter)}
	}
	for _, n := range names {
		if slices.Contains(t.fields, n) {
			return &Error{Op: op, Table: t.tbl.Name(), Property: n, Err: fmt.Errorf("%w: %w: the filter compares an encrypted field, whose stored value is ciphertext (it would send the plaintext and match nothing): compare its blind index (Where)", ErrInvalid, table.ErrInvalidFilter)}
		}
	}
	return nil
}

// filterProperties returns the property names an OData filter expression
// compares: every identifier outside string literals that is not the
// prefix of a typed literal (X'..', guid'..', datetime'..'). Keywords
// (and, eq, true, ...) are returned too, which is harmless: no property
// may be named like one. It reports false for an unclosed string literal.
// Every filter the table package builds quotes its values (” inside a
// string), so its text reads back exactly; a table.Raw expression reads
// exactly when it is valid OData.
func filterProperties(expr string) ([]string, bool) {
	var names []string
	identStart := func(r rune) bool { return r == '_' || unicode.IsLetter(r) }
	identPart := func(r rune) bool {
		return identStart(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)
	}
	for i := 0; i < len(expr); {
		r, size := utf8.DecodeRuneInString(expr[i:])
		switch {
		case r == '\'':
			j := i + 1
			for {
				k := strings.IndexByte(expr[j:], '\'')
				if k < 0 {
					return nil, false
				}
				j += k + 1
				if j < len(expr) && expr[j] == '\'' {
					j++ // '' is a quote inside the literal
					continue
				}
				break
			}
			i = j
		case '0' <= r && r <= '9':
			// A number: digits, '.', an exponent (1e-5), a suffix (21L).
			j := i + 1
			for j < len(expr) {
				c := expr[j]
				if !(c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' ||
					(c == '-' || c == '+') && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
					break
				}
				j++
			}
			i = j
		case identStart(r):
			j := i + size
			for j < len(expr) {
				r2, n := utf8.DecodeRuneInString(expr[j:])
				if !identPart(r2) {
					break
				}
				j += n
			}
			if j == len(expr) || expr[j] != '\'' {
				names = append(names, expr[i:j])
			}
			i = j
		default:
			i += size
		}
	}
	return names, true
}
