package table

import (
	"fmt"
	"reflect"
)

// ToDynamic returns v as a property bag: its keys (from T's key fields, if
// it has them) and its properties, each typed exactly as a Table[T] stores
// it, in the Go types Dynamic reads (string, bool, int32, int64, float64,
// time.Time, []byte, GUID). Properties a Table[T] would leave out (nil
// pointers, zero times, omitempty zeros) are left out.
//
// ToDynamic and FromDynamic are for patterns that store one T as several
// entities (patterns/wideentity): unlike a Table[T], they do not apply the
// per-entity limits (a Profile's MaxProperties, MaxEntitySize), so T may
// have more than MaxProperties fields, and they do not check the keys.
// Every property is still checked as a write to Table Storage checks it
// (names, value sizes, time ranges, GUIDs: ErrInvalidEntity or
// ErrTooLarge), and T must be a struct type New
// accepts apart from its number of fields. Safe for concurrent use.
func ToDynamic[T any](v T) (Dynamic, error) {
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		return Dynamic{}, err
	}
	return toDynamic(c, reflect.ValueOf(&v).Elem())
}

// FromDynamic is the reverse of ToDynamic: it returns the T that d holds,
// decoded as a read of T decodes an entity (d's keys into T's key fields,
// its ETag and Timestamp into T's Meta, each property into its field with
// the same type checks, so an Int32 widens to Int64 or Double and nothing
// narrows, the rest into T's extra map), without the per-entity limits. A
// property T cannot hold is an ErrInvalidEntity naming it. Safe for
// concurrent use.
func FromDynamic[T any](d Dynamic) (T, error) {
	var v T
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		return v, err
	}
	return v, fromDynamic(c, d, reflect.ValueOf(&v).Elem())
}

var dynamicType = reflect.TypeFor[Dynamic]()

// toDynamic encodes v (an addressable value of c's type) with the codec,
// then reads the JSON back as a bag: the one encoding, so the bag's values
// are typed exactly as the entity's would be.
func toDynamic(c *codec, v reflect.Value) (Dynamic, error) {
	var d Dynamic
	if c.pk != nil {
		d.PartitionKey = v.FieldByIndex(c.pk).String()
	}
	if c.rk != nil {
		d.RowKey = v.FieldByIndex(c.rk).String()
	}
	bp := bufPool.Get().(*[]byte)
	defer release(bp)
	e := encoded{pk: d.PartitionKey, rk: d.RowKey, tk: true} // a conversion, not a write
	b, err := c.appendProperties(appendKeys((*bp)[:0], &e), v, &e, nil)
	*bp = b
	if err != nil {
		return Dynamic{}, relabel(err, "convert", "")
	}
	b = append(b, '}')
	*bp = b
	pp := propsPool.Get().(*[]property)
	defer func() {
		clear(*pp)
		*pp = (*pp)[:0]
		propsPool.Put(pp)
	}()
	props, _, err := scanObject(b, (*pp)[:0])
	*pp = props
	if err != nil {
		return Dynamic{}, &Error{Op: "convert", Err: err}
	}
	d.Properties = make(map[string]any, len(props))
	for i := range props {
		p := &props[i]
		if string(p.name) == "PartitionKey" || string(p.name) == "RowKey" {
			continue
		}
		val, err := dynamicValue(p)
		if err != nil {
			return Dynamic{}, &Error{Op: "convert", Err: fmt.Errorf("property %s: %w", p.name, err)}
		}
		d.Properties[string(p.name)] = val
	}
	return d, nil
}

// fromDynamic encodes d with Dynamic's codec and decodes the JSON into v
// (an addressable value of c's type).
func fromDynamic(c *codec, d Dynamic, v reflect.Value) error {
	dc, err := codecFor(dynamicType)
	if err != nil {
		return err
	}
	bp := bufPool.Get().(*[]byte)
	defer release(bp)
	e := encoded{pk: d.PartitionKey, rk: d.RowKey, tk: true} // a conversion, not a write
	b := appendKeys((*bp)[:0], &e)
	if !d.Timestamp.IsZero() {
		b = appendTime(append(b, `,"Timestamp":`...), d.Timestamp)
	}
	b, err = dc.appendProperties(b, reflect.ValueOf(&d).Elem(), &e, nil)
	*bp = b
	if err != nil {
		return relabel(err, "convert", "")
	}
	b = append(b, '}')
	*bp = b
	if err := c.decode(b, v, d.ETag, nil, false); err != nil {
		return &Error{Op: "convert", PartitionKey: d.PartitionKey, RowKey: d.RowKey, Err: fmt.Errorf("%w: decoding %v: %w", ErrInvalidEntity, c.typ, err)}
	}
	return nil
}
