package encryption

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/lookupvalue"

	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// blindSize is how many bytes of the HMAC a blind value keeps: 128 bits,
// 22 characters of base64url.
const blindSize = 16

// blind returns the blind value of v (a value of Dynamic's types) for ix.
func (t *Table[T]) blind(ix *Index, v any) (string, error) {
	switch x := v.(type) {
	case string:
		if ix.Normalize != nil {
			v = ix.Normalize(x)
		}
	case int32:
		v = int64(x) // all integer types alike
	}
	b := []byte("tablekit/bidx/v1")
	b = binary.BigEndian.AppendUint32(b, uint32(len(ix.Field)))
	b = append(b, ix.Field...)
	b, err := appendTyped(b, v)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, t.ikey)
	h.Write(b)
	clear(b)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:blindSize]), nil
}

// blindValue returns the blind index value of value for the indexed field:
// what the field's index property holds for an entity whose field equals
// value (after Normalize). value is the field's value as T holds it: of
// the field's type (a string of any string type for a string field, any
// integer that fits an integer field, the element for a pointer field),
// typed as T stores it (a `guid` field's GUID in any case); a `json` field
// takes a value of its type or its exact JSON text. A value of another
// type is ErrInvalid, naming the field and the type wanted. A T without
// that field (a table.Dynamic, a property of an extra map) takes any Go
// value a table.Dynamic property may hold (int, int64 and int32 compare
// alike). ErrInvalid when field has no index.
func (t *Table[T]) blindValue(field string, value any) (string, error) {
	ix := t.indexes[field]
	if ix == nil {
		return "", fmt.Errorf("%w: field %q has no blind index", ErrInvalid, field)
	}
	d, err := t.typed(field, value)
	if errors.Is(err, errType) {
		return "", &Error{Op: "blind value", Table: t.tbl.Name(), Property: field, Err: err}
	}
	if err != nil {
		e := t.coreErr("blind value", "", "", err, true).(*Error)
		e.Property = field
		return "", e
	}
	v, ok := d.Properties[field]
	if !ok {
		return "", fmt.Errorf("%w: a %T value is stored as no property; it cannot be looked up", ErrInvalid, value)
	}
	return t.blind(ix, v)
}

// errType marks typed's error for a value not of the field's type (which
// quotes no value).
var errType = errors.New("a lookup value of the wrong type")

// typed returns value as a write of T stores it in property field: as
// T's field stores it (a `guid` string as a GUID, a `json` field as its
// JSON text, or the JSON text given), or, when T has no such field, as a
// property bag stores it (int as Int64, times in UTC at 100 ns, [16]byte
// as GUID).
func (t *Table[T]) typed(field string, value any) (table.Dynamic, error) {
	fi, ok := t.fieldIndex[field]
	if !ok || t.jsonProps[field] && reflect.TypeOf(value) == reflect.TypeFor[string]() {
		return table.ToDynamic(table.Dynamic{Properties: map[string]any{field: value}})
	}
	var v T
	if err := lookupvalue.Set(reflect.ValueOf(&v).Elem().FieldByIndex(fi), value); err != nil {
		return table.Dynamic{}, fmt.Errorf("%w: %w: index %q takes %v", ErrInvalid, errType, field, err)
	}
	return table.ToDynamic(v)
}

// Where returns the filter that matches the entities whose field equals
// value, by its blind index: table.Eq(index property, the blind value of
// value). value is the field's value as T holds it (see blindValue: a
// value of the field's type, any integer for an integer field, a `json`
// field's value or JSON text; another type is ErrInvalid naming the field
// and the type wanted). Combine it with a PartitionKey filter whenever you can (without
// one the query scans the table). ErrInvalid when field has no index.
func (t *Table[T]) Where(field string, value any) (table.Filter, error) {
	b, err := t.blindValue(field, value)
	if err != nil {
		return table.Filter{}, err
	}
	return table.Eq(t.indexes[field].Property, b), nil
}

// Find returns the entities of partition pk (every partition when pk is
// empty: a scan of the table) whose field equals value, the field's value
// as T holds it (as for Where; another type is ErrInvalid naming the field
// and the type wanted, nothing sent): one query on the
// blind index, one round trip per page, each match decrypted and returned
// in its envelope (keys, ETag, value). It returns exactly the matches,
// verified by decrypting them, and skips without error every row it cannot
// verify: a stale or forged blind index (the decrypted value differs after
// normalization), a value that fails to decrypt (ErrDecrypt) or names a
// key id the KeyProvider does not know (ErrUnknownKey), a row that does
// not decode into T. So a row another writer planted or damaged never
// appears in a Find and never stops one. Find does not report the rows it
// skipped: Query with Where(field, value) and the same partition reads the
// same rows unverified and ends at the first such row with its error, and
// Reencrypt's OnError is called with every row that fails to decrypt. Any
// other error (of the service, of the KeyProvider) ends the sequence.
// ErrInvalid when field has no blind index or pk is not a valid key (also
// table.ErrInvalidKey).
func (t *Table[T]) Find(ctx context.Context, pk, field string, value any) iter.Seq2[table.Entity[T], error] {
	return obs.Seq2(t.obs, ctx, opFind, t.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[table.Entity[T], error] {
		return t.find(ctx, pk, field, value)
	})
}

// find is Find, without its span.
func (t *Table[T]) find(ctx context.Context, pk, field string, value any) iter.Seq2[table.Entity[T], error] {
	return func(yield func(table.Entity[T], error) bool) {
		want, err := t.blindValue(field, value)
		if err == nil && pk != "" {
			if err = keys.Validate(pk); err != nil {
				err = fmt.Errorf("%w: PartitionKey: %w", ErrInvalid, err)
			}
		}
		if err != nil {
			yield(table.Entity[T]{}, err)
			return
		}
		f := table.Eq(t.indexes[field].Property, want)
		if pk != "" {
			f = table.And(table.PartitionKey(pk), f)
		}
		for d, err := range t.tbl.Query(ctx, &table.Query{Filter: f}) {
			if err != nil {
				yield(table.Entity[T]{}, invalid.Mark(ErrInvalid, err))
				return
			}
			if err := t.unseal(ctx, "find", &d); err != nil {
				if errors.Is(err, ErrDecrypt) || errors.Is(err, ErrUnknownKey) {
					continue // not verifiable: a damaged or planted row
				}
				yield(table.Entity[T]{}, err)
				return
			}
			if got, err := t.blind(t.indexes[field], d.Properties[field]); err != nil || got != want {
				continue
			}
			v, err := t.fromDynamic("find", d)
			if err != nil {
				continue // its plain properties do not decode into T
			}
			if !yield(envelope(d, v), nil) {
				return
			}
		}
	}
}

// IndexKey returns a Key function for a patterns/secondaryindex Index that
// indexes the blind value of the string get returns for field (an empty
// string: no copy), so the index rows' keys reveal no more than the blind
// index does. Give the Index On: []string{field}: a Lookup or Find then
// takes the plaintext value, which Key turns into its blind value.
// ErrInvalid when field has no blind index. Use it with the
// Table as the Store's Options.Sealer, which encrypts the primary rows
// (secondaryindex then refuses copies that would hold an encrypted field:
// Whole copies, and Listed copies of an encrypted field), and index
// KeysOnly or Listed copies of plain fields.
func (t *Table[T]) IndexKey(field string, get func(*T) string) (func(*T) []string, error) {
	ix := t.indexes[field]
	if ix == nil {
		return nil, fmt.Errorf("%w: field %q has no blind index", ErrInvalid, field)
	}
	return func(v *T) []string {
		s := get(v)
		if s == "" {
			return nil
		}
		b, _ := t.blind(ix, s) // a string always has a blind value
		return []string{b}
	}, nil
}

// Seal encrypts the encrypted fields of d, an entity about to be written
// under its own keys, in place, and sets their blind indexes, as a write of
// this Table does. With Open and Sealed it makes the Table a
// patterns/secondaryindex Sealer, so that a secondaryindex Store keeps its
// primary rows encrypted. Safe for concurrent use.
func (t *Table[T]) Seal(ctx context.Context, d *table.Dynamic) error {
	return t.seal(ctx, "seal", d, nil)
}

// Open decrypts the encrypted fields of d, an entity as read, in place,
// and removes its blind index properties, as a read of this Table does.
// Safe for concurrent use.
func (t *Table[T]) Open(ctx context.Context, d *table.Dynamic) error {
	return t.unseal(ctx, "open", d)
}

// Sealed reports whether Seal encrypts property name, or writes it as a
// blind index.
func (t *Table[T]) Sealed(name string) bool {
	return slices.Contains(t.fields, name) || t.byProp[name]
}
