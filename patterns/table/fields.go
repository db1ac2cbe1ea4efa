package table

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/fieldmodel"
	"github.com/tablekit/tablekit/internal/reserved"
)

func init() {
	fieldmodel.Register(fieldmodel.Codec{Of: fieldsOf, Keys: keysOf, CheckKeys: checkKeys, ValidName: validName,
		FilterProperties: func(f any) []string { return f.(Filter).properties() },
		ModeFields:       func(m any) []string { return m.(Mode).fieldNames() },
		TableKeys:        func(t, v any) (string, string, error) { return t.(keyed).tableKeys(v) },
	})
}

// fieldsOf is fieldmodel.Of.
func fieldsOf(t reflect.Type) ([]fieldmodel.Field, error) {
	c, err := codecFor(t)
	if err != nil {
		return nil, err
	}
	var out []fieldmodel.Field
	at := func(index []int, role fieldmodel.Role) {
		if index != nil {
			f := c.typ.FieldByIndex(index)
			out = append(out, fieldmodel.Field{Name: f.Name, Index: index, Type: f.Type, Role: role})
		}
	}
	at(c.pk, fieldmodel.PartitionKey)
	at(c.rk, fieldmodel.RowKey)
	at(c.timestamp, fieldmodel.Timestamp)
	at(c.meta, fieldmodel.Meta)
	at(c.extra, fieldmodel.Extra)
	for _, f := range c.fields {
		sf := c.typ.FieldByIndex(f.index)
		out = append(out, fieldmodel.Field{Name: sf.Name, Index: f.index, Type: sf.Type, Role: fieldmodel.Property, Property: f.name,
			JSON: f.kind == kJSON, GUID: f.kind == kGUIDString || f.kind == kGUID, OmitEmpty: f.omitempty})
	}
	slices.SortStableFunc(out, func(a, b fieldmodel.Field) int { return slices.Compare(a.Index, b.Index) })
	return out, nil
}

// validName is fieldmodel.ValidName.
func validName(name string) error {
	if err := validPropertyName(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, reserved.PropertyPrefix) {
		return fmt.Errorf("%w: property name %q starts with %q (reserved.PropertyPrefix), which tablekit's patterns keep for their own properties", ErrInvalidEntity, name, reserved.PropertyPrefix)
	}
	return nil
}

// checkKeys is fieldmodel.CheckKeys.
func checkKeys(pk, rk string) error {
	if err := validKeys(pk, rk); err != nil {
		return relabel(err, "keys", "")
	}
	return relabel(notReserved(pk, rk), "keys", "")
}

// keysOf gives fieldmodel.KeyFunc and fieldmodel.KeysOf the reader of a type's
// key fields.
func keysOf(t reflect.Type) (func(any) (pk, rk string), error) {
	c, err := codecFor(t)
	if err != nil {
		return nil, err
	}
	if c.pk == nil || c.rk == nil {
		return nil, fmt.Errorf("%w: %v has no PartitionKey and RowKey fields: tag them, or give a key function", ErrInvalidEntity, c.typ)
	}
	return func(v any) (string, string) {
		e := reflect.ValueOf(v).Elem()
		return e.FieldByIndex(c.pk).String(), e.FieldByIndex(c.rk).String()
	}, nil
}

// tableKeys is fieldmodel.TableKeys: the keys t stores v (a *T) under,
// from T's key fields, Options.Keys or WithKeys, unchecked (a write
// checks them).
func (t *Table[T]) tableKeys(v any) (pk, rk string, err error) {
	if t.keyFn == nil {
		return "", "", &Error{Op: "keys", Table: t.name, Err: fmt.Errorf("%w: %v has no PartitionKey and RowKey fields; tag them, or give Options.Keys", ErrInvalidEntity, t.codec.typ)}
	}
	pk, rk = t.keyFn(v.(*T))
	return pk, rk, nil
}

// keyed is a *Table[T] of any T, for fieldmodel.TableKeys.
type keyed interface {
	tableKeys(v any) (pk, rk string, err error)
}
