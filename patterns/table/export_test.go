package table

import "reflect"

// CheckType exposes the codec's type analysis to tests, for struct types
// built at run time (New is generic and cannot take them).
func CheckType(t reflect.Type) error {
	_, err := codecFor(t)
	return err
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
