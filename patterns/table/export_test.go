package table

import "reflect"

// CheckType exposes the codec's type analysis to tests, for struct types
// built at run time (New is generic and cannot take them).
func CheckType(t reflect.Type) error {
	_, err := codecFor(t)
	return err
}
