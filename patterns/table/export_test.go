package table

import (
	"reflect"
	"sync"
)

// CheckType exposes the codec's type analysis to tests, for struct types
// built at run time (New is generic and cannot take them).
func CheckType(t reflect.Type) error {
	c, err := codecFor(t)
	if err != nil {
		return err
	}
	return c.fitsOneEntity()
}

// SDKPath returns a view of t that uses the SDK's methods instead of the
// direct path, for tests that compare the two.
func SDKPath[T any](t *Table[T]) *Table[T] {
	c := *t
	c.direct = nil
	return &c
}

// Direct reports whether t uses the direct path.
func Direct[T any](t *Table[T]) bool { return t.direct != nil }

// ToDynamicValue is ToDynamic for values of types built at run time.
func ToDynamicValue(v any) (Dynamic, error) {
	c, err := codecFor(reflect.TypeOf(v))
	if err != nil {
		return Dynamic{}, err
	}
	rv := reflect.New(c.typ).Elem()
	rv.Set(reflect.ValueOf(v))
	return toDynamic(c, rv)
}

// FromDynamicValue is FromDynamic for a type built at run time.
func FromDynamicValue(d Dynamic, t reflect.Type) (any, error) {
	c, err := codecFor(t)
	if err != nil {
		return nil, err
	}
	rv := reflect.New(t).Elem()
	err = fromDynamic(c, d, rv)
	return rv.Interface(), err
}

// ForgetUnknownWarning lets the next Table of a client tablekit does not
// know log its warning again (it logs once per process).
func ForgetUnknownWarning() { unknownOnce = sync.Once{} }

// The service's query limits, for the tests of queries over them.
const (
	MaxFilterComparisons = maxFilterComparisons
	MaxQueryLength       = maxQueryLength
)

// WithProfile returns a view of t that follows p (nil: its client's
// profile), as New with Options.Profile gives a table, for tests that
// compare profiles over one table.
func WithProfile[T any](t *Table[T], p *Profile) *Table[T] {
	if p == nil {
		p = profileOf(t.client)
	}
	c := *t
	c.profile = p
	return &c
}
