package secondaryindex

import (
	"fmt"
	"reflect"
	"time"

	"github.com/tablekit/tablekit/internal/fieldmodel"
	"github.com/tablekit/tablekit/internal/lookupvalue"
	"github.com/tablekit/tablekit/keys"
)

// onField is one field of an index's On: where T holds it, and how its
// value becomes a RowKey part when the index has no Key.
type onField struct {
	name  string
	index []int
	typ   reflect.Type
	part  func(reflect.Value) (string, error) // nil: only with a Key
}

// resolveOn finds the fields of ix.On in T.
func resolveOn[T any](ix *Index[T]) error {
	if len(ix.On) == 0 {
		return fmt.Errorf("%w: index %q has no On: name the properties it indexes", ErrInvalid, ix.Name)
	}
	fields, err := fieldmodel.Of[T]()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	ix.on = nil
	for _, name := range ix.On {
		var f *fieldmodel.Field
		for i := range fields {
			if fields[i].Role == fieldmodel.Property && fields[i].Property == name {
				f = &fields[i]
			}
		}
		if f == nil {
			return fmt.Errorf("%w: index %q: %v has no property %q", ErrInvalid, ix.Name, reflect.TypeFor[T](), name)
		}
		of := onField{name: name, index: f.Index, typ: f.Type, part: partOf(f)}
		if of.part == nil && ix.Key == nil {
			return fmt.Errorf("%w: index %q: property %q is a %v: only strings, integers and times index without a Key", ErrInvalid, ix.Name, name, f.Type)
		}
		ix.on = append(ix.on, of)
	}
	return nil
}

// partOf is the order-preserving RowKey part of a field's value: a string
// as it is (Join escapes it), an integer as keys.Int64 (or keys.Pad for
// unsigned), a time as its .NET ticks, 19 digits (keys.Ticks); nil for
// other types.
func partOf(f *fieldmodel.Field) func(reflect.Value) (string, error) {
	if f.JSON || f.GUID {
		return nil
	}
	switch t := f.Type; {
	case t.Kind() == reflect.String:
		return func(v reflect.Value) (string, error) { return v.String(), nil }
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return func(v reflect.Value) (string, error) { return keys.Int64(v.Int()), nil }
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return func(v reflect.Value) (string, error) { return keys.Pad(v.Uint(), 20), nil }
	case t == reflect.TypeFor[time.Time]():
		return func(v reflect.Value) (string, error) {
			tm := v.Interface().(time.Time).UTC()
			if tm.Year() < 1 || tm.Year() > 9999 {
				return "", fmt.Errorf("time %v is outside the years 1 to 9999", tm)
			}
			return keys.Pad(uint64(keys.Ticks(tm)), 19), nil
		}
	}
	return nil
}

// keyOf is ix's value of v as RowKey parts: Key's, or its On fields'
// parts; nil when v has no copy in ix.
func (ix *Index[T]) keyOf(v *T) ([]string, error) {
	if ix.Key != nil {
		return ix.Key(v), nil
	}
	rv := reflect.ValueOf(v).Elem()
	parts := make([]string, len(ix.on))
	for i, f := range ix.on {
		p, err := f.part(rv.FieldByIndex(f.index))
		if err != nil {
			return nil, fmt.Errorf("%w: index %q: %s: %w", ErrInvalid, ix.Name, f.name, err)
		}
		parts[i] = p
	}
	return parts, nil
}

// partsOf turns value, a lookup's value as T holds it (one field: its
// value; several: a []any of up to one value per field, in On's order,
// all of them unless prefix), into RowKey parts; ok false when no entity
// can have it (Key gives no copy for it). ErrInvalid names the index and
// the type wanted.
func (ix *Index[T]) partsOf(value any, prefix bool) (parts []string, ok bool, err error) {
	vals := []any{value}
	if len(ix.on) > 1 {
		var isList bool
		vals, isList = value.([]any)
		want := fmt.Sprintf("a []any of %d values (%s)", len(ix.on), ix.types())
		if prefix {
			want = fmt.Sprintf("a []any of 1 to %d values (%s)", len(ix.on), ix.types())
		}
		if !isList || len(vals) == 0 || len(vals) > len(ix.on) || !prefix && len(vals) != len(ix.on) {
			return nil, false, fmt.Errorf("%w: index %q takes %s, not %s", ErrInvalid, ix.Name, want, describe(value))
		}
	}
	var probe T
	rv := reflect.ValueOf(&probe).Elem()
	for i, v := range vals {
		f := ix.on[i]
		if err := lookupvalue.Set(rv.FieldByIndex(f.index), v); err != nil {
			return nil, false, fmt.Errorf("%w: index %q: %s takes %v", ErrInvalid, ix.Name, f.name, err)
		}
	}
	all, err := ix.keyOf(&probe)
	if err != nil {
		return nil, false, err
	}
	if len(all) < len(vals) {
		return nil, false, nil
	}
	return all[:len(vals)], true, nil
}

func (ix *Index[T]) types() string {
	s := ""
	for i, f := range ix.on {
		if i > 0 {
			s += ", "
		}
		s += f.typ.String()
	}
	return s
}

func describe(v any) string {
	if l, ok := v.([]any); ok {
		return fmt.Sprintf("%d values", len(l))
	}
	return fmt.Sprintf("%T", v)
}
