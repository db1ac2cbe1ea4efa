package table

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// FieldRole is what a struct field is to the codec.
type FieldRole uint8

// The roles of a struct field.
const (
	// PropertyField is stored as the property Field.Property.
	PropertyField FieldRole = iota
	// PartitionKeyField and RowKeyField hold the entity's keys.
	PartitionKeyField
	RowKeyField
	// TimestampField is a time.Time named Timestamp: the service's
	// last-modified time, read and never written.
	TimestampField
	// MetaField is a Meta: ETag and Timestamp, read and never written.
	MetaField
	// ExtraField is a map[string]any tagged `table:",extra"`: the stored
	// properties T has no field for.
	ExtraField
)

// Field is one field of a struct type as the codec maps it: the field
// model of tablekit, which every package reads instead of parsing `table`
// tags itself.
type Field struct {
	// Name is the Go field's name; Index its index path
	// (reflect.Value.FieldByIndex), through embedded structs.
	Name  string
	Index []int
	// Type is the field's Go type.
	Type reflect.Type
	// Role is what the field is; Property the name it is stored under
	// (for PropertyField only).
	Role     FieldRole
	Property string
	// JSON, GUID and OmitEmpty report the tag's options json, guid and
	// omitempty.
	JSON, GUID, OmitEmpty bool
}

// FieldsOf returns the fields of T that the codec maps, in field order
// (embedded structs flattened, `table:"-"` and unexported fields left
// out). It fails, with ErrInvalidEntity, for a type New would reject
// (apart from its number of properties). Safe for concurrent use.
func FieldsOf[T any]() ([]Field, error) {
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	var out []Field
	at := func(index []int, role FieldRole) {
		if index != nil {
			f := c.typ.FieldByIndex(index)
			out = append(out, Field{Name: f.Name, Index: index, Type: f.Type, Role: role})
		}
	}
	at(c.pk, PartitionKeyField)
	at(c.rk, RowKeyField)
	at(c.timestamp, TimestampField)
	at(c.meta, MetaField)
	at(c.extra, ExtraField)
	for _, f := range c.fields {
		sf := c.typ.FieldByIndex(f.index)
		out = append(out, Field{Name: sf.Name, Index: f.index, Type: sf.Type, Role: PropertyField, Property: f.name,
			JSON: f.kind == kJSON, GUID: f.kind == kGUIDString || f.kind == kGUID, OmitEmpty: f.omitempty})
	}
	slices.SortStableFunc(out, func(a, b Field) int { return slices.Compare(a.Index, b.Index) })
	return out, nil
}

// ValidPropertyName checks a property name a package lets its users choose
// (an index's property, a field to encrypt): the service's rules (1 to 255
// characters, a C# identifier, not an OData keyword) and tablekit's
// reserved names (PartitionKey, RowKey, Timestamp and every name under
// ReservedPropertyPrefix). The error matches ErrInvalidEntity.
func ValidPropertyName(name string) error {
	if err := validPropertyName(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, ReservedPropertyPrefix) {
		return fmt.Errorf("%w: property name %q starts with %q (table.ReservedPropertyPrefix), which tablekit's patterns keep for their own properties", ErrInvalidEntity, name, ReservedPropertyPrefix)
	}
	return nil
}

// KeysOf returns v's keys from T's key fields (a PartitionKey and a RowKey
// field, or fields tagged pk and rk): for packages that take a T and store
// it their own way. ErrInvalidEntity when T has no key fields.
func KeysOf[T any](v *T) (pk, rk string, err error) {
	keys, err := KeyFunc[T](nil)
	if err != nil {
		return "", "", err
	}
	pk, rk = keys(v)
	return pk, rk, nil
}

// CheckKeys checks an entity's keys as every write of an application's
// Table does: keys the service accepts (keys.Validate), a PartitionKey the
// SDK can address (not empty), and neither under ReservedPrefix. The error
// matches ErrInvalidKey and ErrInvalid. For packages that take keys of
// their own before the network (an entity addressed by key); mark it with
// the package's ErrInvalid (MarkInvalid).
func CheckKeys(pk, rk string) error {
	if err := validKeys(pk, rk); err != nil {
		return relabel(err, "keys", "")
	}
	return relabel(notReserved(pk, rk), "keys", "")
}

// KeyFunc returns the function that gives a T's keys, for packages that
// take a T and store it their own way: fn when it is not nil (a package's
// Options.Keys, as WithKeys for a Table), else one that reads T's key
// fields. For a T with neither it returns nil and an ErrInvalidEntity to
// report when such a T is written.
func KeyFunc[T any](fn func(*T) (pk, rk string)) (func(*T) (pk, rk string), error) {
	if fn != nil {
		return fn, nil
	}
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if c.pk == nil || c.rk == nil {
		return nil, fmt.Errorf("%w: %v has no PartitionKey and RowKey fields: tag them, or give a key function", ErrInvalidEntity, c.typ)
	}
	return func(v *T) (string, string) {
		e := reflect.ValueOf(v).Elem()
		return e.FieldByIndex(c.pk).String(), e.FieldByIndex(c.rk).String()
	}, nil
}

// Keys returns the keys t stores v under: from T's key fields, or from
// the function given to WithKeys or NewWithKeys. The keys are not checked;
// a write checks them.
func (t *Table[T]) Keys(v *T) (pk, rk string, err error) {
	if t.keyFn == nil {
		return "", "", &Error{Op: "keys", Table: t.name, Err: fmt.Errorf("%w: %v has no PartitionKey and RowKey fields; tag them, or build the Table with NewWithKeys", ErrInvalidEntity, t.codec.typ)}
	}
	pk, rk = t.keyFn(v)
	return pk, rk, nil
}
