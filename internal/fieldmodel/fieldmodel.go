// Package fieldmodel is tablekit's one field model: how package table's codec
// maps a struct type (tag grammar, key roles, property names), for the
// pattern packages that take a T and store it their own way. No package
// parses `table` tags itself. Package table provides the functions behind
// it (Register, called by its init); being internal, this package is
// tablekit's own.
package fieldmodel

import "reflect"

// MaxNameLength is the longest property name, in characters (on both
// services). The limits that differ between services are table.Profile's.
const MaxNameLength = 255

// Role is what a struct field is to the codec.
type Role uint8

// The roles of a struct field.
const (
	// Property is stored as the property Field.Property.
	Property Role = iota
	// PartitionKey and RowKey hold the entity's keys.
	PartitionKey
	RowKey
	// Timestamp is a time.Time named Timestamp: the service's
	// last-modified time, read and never written.
	Timestamp
	// Meta is a table.Meta: ETag and Timestamp, read and never written.
	Meta
	// Extra is a map[string]any tagged `table:",extra"`: the stored
	// properties T has no field for.
	Extra
)

// Field is one field of a struct type as the codec maps it.
type Field struct {
	// Name is the Go field's name; Index its index path
	// (reflect.Value.FieldByIndex), through embedded structs.
	Name  string
	Index []int
	// Type is the field's Go type.
	Type reflect.Type
	// Role is what the field is; Property the name it is stored under
	// (for Property fields only).
	Role     Role
	Property string
	// JSON, GUID and OmitEmpty report the tag's options json, guid and
	// omitempty.
	JSON, GUID, OmitEmpty bool
}

// Codec is what package table provides.
type Codec struct {
	// Of returns the fields of a struct type (see Of).
	Of func(reflect.Type) ([]Field, error)
	// Keys returns the function reading the keys of a *T given as any, or
	// an error naming the type when it has no key fields.
	Keys func(reflect.Type) (func(any) (pk, rk string), error)
	// CheckKeys and ValidName are CheckKeys and ValidName below.
	CheckKeys func(pk, rk string) error
	ValidName func(string) error
	// FilterProperties and ModeFields are FilterProperties and ModeFields
	// below, over a table.Filter and a table.Mode given as any.
	FilterProperties func(f any) []string
	ModeFields       func(m any) []string
	// TableKeys is TableKeys below, over a *table.Table[T] and a *T.
	TableKeys func(t, v any) (pk, rk string, err error)
}

var codec Codec

// Register is called once by package table's init.
func Register(c Codec) { codec = c }

// Of returns the fields of T that the codec maps, in field order (embedded
// structs flattened, `table:"-"` and unexported fields left out). It
// fails, with table.ErrInvalidEntity, for a type table.New would reject
// (apart from its number of properties). Safe for concurrent use.
func Of[T any]() ([]Field, error) { return codec.Of(reflect.TypeFor[T]()) }

// KeyFunc returns the function that gives a T's keys, for packages that
// take a T and store it their own way: fn when it is not nil (a package's
// Options.Keys, as table.Options.Keys for a Table), else one that reads
// T's key fields. For a T with neither it returns nil and an
// table.ErrInvalidEntity to report when such a T is written.
func KeyFunc[T any](fn func(*T) (pk, rk string)) (func(*T) (pk, rk string), error) {
	if fn != nil {
		return fn, nil
	}
	keys, err := codec.Keys(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	return func(v *T) (string, string) { return keys(v) }, nil
}

// KeysOf returns v's keys from T's key fields (a PartitionKey and a RowKey
// field, or fields tagged pk and rk). table.ErrInvalidEntity when T has no
// key fields.
func KeysOf[T any](v *T) (pk, rk string, err error) {
	keys, err := codec.Keys(reflect.TypeFor[T]())
	if err != nil {
		return "", "", err
	}
	pk, rk = keys(v)
	return pk, rk, nil
}

// CheckKeys checks an entity's keys as every write of an application's
// table.Table does: keys the service accepts (keys.Validate), a
// PartitionKey the SDK can address (not empty), and neither under
// reserved.Prefix. The error matches table.ErrInvalidKey and
// table.ErrInvalid. For packages that take keys of their own before the
// network (an entity addressed by key); mark it with the package's
// ErrInvalid (invalid.Mark).
func CheckKeys(pk, rk string) error { return codec.CheckKeys(pk, rk) }

// ValidName checks a property name a package lets its users choose (an
// index's property, a field to encrypt): the service's rules (1 to 255
// characters, a C# identifier, not an OData keyword) and tablekit's
// reserved names (PartitionKey, RowKey, Timestamp and every name under
// reserved.PropertyPrefix). The error matches table.ErrInvalidEntity.
func ValidName(name string) error { return codec.ValidName(name) }

// FilterProperties returns the names of the properties a table.Filter
// compares, in the order they first appear, each once: for packages that
// must refuse a filter on some properties (an encrypted field's
// plaintext). Filter is table.Filter.
func FilterProperties[Filter any](f Filter) []string { return codec.FilterProperties(f) }

// ModeFields returns the property names of a table.Fields merge, and nil
// for table.Merge and table.Replace, for packages that extend a partial
// update with properties of their own. Mode is table.Mode.
func ModeFields[Mode any](m Mode) []string { return codec.ModeFields(m) }

// TableKeys returns the keys t, a *table.Table[V], stores v under: from
// V's key fields, or the table's key function (table.Options.Keys,
// Table.WithKeys). The keys are not checked; a write checks them.
func TableKeys[V any](t any, v *V) (pk, rk string, err error) { return codec.TableKeys(t, v) }
