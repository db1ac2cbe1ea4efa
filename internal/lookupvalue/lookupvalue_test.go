package lookupvalue

import (
	"reflect"
	"testing"
	"time"
)

type name string

func TestSet(t *testing.T) {
	var v struct {
		S  string
		N  name
		I  int64
		U  uint8
		T  time.Time
		P  *string
		Bs []byte
	}
	rv := reflect.ValueOf(&v).Elem()
	ok := []struct {
		field string
		value any
	}{{"S", "a"}, {"S", name("b")}, {"N", "c"}, {"I", 30}, {"I", int32(-4)}, {"I", uint8(7)}, {"U", 255}, {"T", time.Unix(1, 0)}, {"P", "d"}, {"Bs", []byte{1}}}
	for _, c := range ok {
		if err := Set(rv.FieldByName(c.field), c.value); err != nil {
			t.Errorf("%s = %#v: %v", c.field, c.value, err)
		}
	}
	if v.S != "b" || v.N != "c" || v.I != 7 || v.U != 255 || *v.P != "d" {
		t.Errorf("set: %+v", v)
	}
	bad := []struct {
		field string
		value any
	}{{"S", 1}, {"I", "30"}, {"I", 1.5}, {"U", 256}, {"U", -1}, {"I", uint64(1 << 63)}, {"T", "2024"}, {"P", 3}, {"S", nil}, {"Bs", "x"}}
	for _, c := range bad {
		if err := Set(rv.FieldByName(c.field), c.value); err == nil {
			t.Errorf("%s = %#v: no error", c.field, c.value)
		}
	}
}
