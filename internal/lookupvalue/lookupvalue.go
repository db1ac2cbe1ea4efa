// Package lookupvalue sets a lookup's value into a field of T, as T holds
// it: the one rule by which the patterns that find entities by a field's
// value (patterns/secondaryindex's Find, Lookup and Range,
// patterns/encryption's Find) take that value as an any, and refuse one of
// another type before the network.
package lookupvalue

import (
	"fmt"
	"reflect"
)

// Set sets fv, a settable field of T, to v: v's type is the field's, or
// assignable to it (or to its element, for a pointer field, which then
// points at a new value); a string of any string type for a string-kinded
// field; an integer of any integer type that fits an integer field (an
// untyped constant 30 for an int64 field). Otherwise it returns an error
// naming the type wanted, and leaves fv unchanged.
func Set(fv reflect.Value, v any) error {
	ft := fv.Type()
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return fmt.Errorf("%v, not nil", ft)
	}
	if ft.Kind() == reflect.Pointer && rv.Type() != ft {
		elem := reflect.New(ft.Elem())
		if err := Set(elem.Elem(), v); err != nil {
			return fmt.Errorf("%v, not %T", ft, v)
		}
		fv.Set(elem)
		return nil
	}
	switch {
	case rv.Type().AssignableTo(ft):
		fv.Set(rv)
	case rv.Kind() == reflect.String && ft.Kind() == reflect.String:
		fv.Set(rv.Convert(ft))
	case isInt(rv.Kind()) && isInt(ft.Kind()):
		// Through int64 or uint64, refusing what does not fit.
		x := reflect.New(ft).Elem()
		if isSigned(rv.Kind()) {
			n := rv.Int()
			if isSigned(ft.Kind()) && x.OverflowInt(n) || !isSigned(ft.Kind()) && (n < 0 || x.OverflowUint(uint64(n))) {
				return fmt.Errorf("%v (%T too large for it)", ft, v)
			}
			x.Set(rv.Convert(ft))
		} else {
			n := rv.Uint()
			if isSigned(ft.Kind()) && (n > 1<<63-1 || x.OverflowInt(int64(n))) || !isSigned(ft.Kind()) && x.OverflowUint(n) {
				return fmt.Errorf("%v (%T too large for it)", ft, v)
			}
			x.Set(rv.Convert(ft))
		}
		fv.Set(x)
	default:
		return fmt.Errorf("%v, not %T", ft, v)
	}
	return nil
}

func isInt(k reflect.Kind) bool { return isSigned(k) || k >= reflect.Uint && k <= reflect.Uintptr }

func isSigned(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Int64 }
