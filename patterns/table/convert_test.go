package table_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestDynamicConversionRoundTrips: ToDynamic types every property as the
// entity stores it, and FromDynamic gives back the same T (times at the
// service's 100 ns, in UTC), empty and nil []byte kept apart.
func TestDynamicConversionRoundTrips(t *testing.T) {
	s, i64 := "pointed", int64(math.MinInt64)
	in := allTypes{
		PartitionKey: "p", RowKey: "r",
		S: "héllo \"dq\" <&> 😀", B: true, I8: -128, I16: -32768, I32: math.MaxInt32,
		U8: 255, U16: 65535, U32: math.MaxUint32, I: math.MaxInt64, I64: math.MinInt64,
		F32: 1.5, F64: 2, T: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("+02", 7200)),
		Bin: []byte{}, G: uuidLike{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		GS: "4185404a-5818-48c3-b9be-f217df0dba6f", PS: &s, PI64: &i64,
		J: map[string][]int{"a": {1, 2}}, Renamed: "r", Skipped: "never stored",
	}
	d, err := table.ToDynamic(in)
	if err != nil {
		t.Fatal(err)
	}
	if d.PartitionKey != "p" || d.RowKey != "r" {
		t.Fatalf("keys %q %q", d.PartitionKey, d.RowKey)
	}
	wantTypes := map[string]any{
		"S": "", "B": false, "I8": int32(0), "I16": int32(0), "I32": int32(0), "U8": int32(0), "U16": int32(0),
		"U32": int64(0), "I": int64(0), "I64": int64(0), "F32": float64(0), "F64": float64(0), "T": time.Time{},
		"Bin": []byte(nil), "G": table.GUID{}, "GS": table.GUID{}, "PS": "", "PI64": int64(0), "J": "", "Other": "",
	}
	if len(d.Properties) != len(wantTypes) {
		t.Errorf("%d properties, want %d: %v", len(d.Properties), len(wantTypes), d.Properties)
	}
	for name, want := range wantTypes {
		if got := reflect.TypeOf(d.Properties[name]); got != reflect.TypeOf(want) {
			t.Errorf("property %s is a %v, want %T", name, got, want)
		}
	}
	if b := d.Properties["Bin"].([]byte); b == nil || len(b) != 0 {
		t.Errorf("empty []byte became %#v", b)
	}
	// The ETag and Timestamp of the Dynamic reach T's Meta.
	d.ETag, d.Timestamp = azcore.ETag(`W/"x"`), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	back, err := table.FromDynamic[allTypes](d)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.Skipped = ""
	want.T = in.T.UTC().Truncate(100)
	if back.ETag != d.ETag || !back.Timestamp.Equal(d.Timestamp) {
		t.Errorf("meta %+v", back.Meta)
	}
	back.Meta, want.Meta = table.Meta{}, table.Meta{}
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, want)
	}
}

// TestFromDynamicTypeChecks: what a bag read from the service holds (a
// whole-number double read as int32) decodes into the struct's field, and
// a value the field cannot hold is an error naming it, never a silent
// conversion.
func TestFromDynamicTypeChecks(t *testing.T) {
	got, err := table.FromDynamic[allTypes](table.Dynamic{Properties: map[string]any{"F64": int32(2), "I64": int32(-5), "U32": int64(7)}})
	if err != nil || got.F64 != 2 || got.I64 != -5 || got.U32 != 7 {
		t.Fatalf("widening: %+v, %v", got, err)
	}
	for _, bad := range []map[string]any{
		{"I32": int64(1 << 40)},
		{"I8": int32(300)},
		{"S": int32(1)},
		{"F64": "2"},
		{"T": "2024-01-01T00:00:00Z"},
		{"G": "not a guid"},
	} {
		if _, err := table.FromDynamic[allTypes](table.Dynamic{Properties: bad}); !errors.Is(err, table.ErrInvalidEntity) {
			t.Errorf("FromDynamic(%v) = %v, want ErrInvalidEntity", bad, err)
		}
	}
	if _, err := table.FromDynamic[allTypes](table.Dynamic{Properties: map[string]any{reserved.WriteProperty: "x"}}); !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("reserved name: %v", err)
	}
}

// TestDynamicConversionWithoutEntityLimits: a struct of 300 fields, which a
// Table cannot hold, converts both ways; values are still checked.
func TestDynamicConversionWithoutEntityLimits(t *testing.T) {
	var fields []reflect.StructField
	types := []reflect.Type{reflect.TypeFor[int64](), reflect.TypeFor[float64](), reflect.TypeFor[string](), reflect.TypeFor[time.Time](), reflect.TypeFor[[]byte]()}
	for i := range 300 {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%03d", i), Type: types[i%len(types)]})
	}
	typ := reflect.StructOf(fields)
	if err := newWide(fields); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("a Table of 300 fields: %v", err)
	}
	v := reflect.New(typ).Elem()
	for i := range 300 {
		f := v.Field(i)
		switch i % len(types) {
		case 0:
			f.SetInt(math.MaxInt64 - int64(i))
		case 1:
			f.SetFloat(float64(i)) // whole numbers stay Edm.Double
		case 2:
			f.SetString(strings.Repeat("x", i))
		case 3:
			f.Set(reflect.ValueOf(time.Date(2024, 1, 1, 0, 0, i, 100, time.UTC)))
		case 4:
			f.SetBytes([]byte{byte(i)})
		}
	}
	d, err := table.ToDynamicValue(v.Interface())
	if err != nil || len(d.Properties) != 300 {
		t.Fatalf("ToDynamic: %d properties, %v", len(d.Properties), err)
	}
	if _, ok := d.Properties["F001"].(float64); !ok {
		t.Fatalf("F001 is %T", d.Properties["F001"])
	}
	back, err := table.FromDynamicValue(d, typ)
	if err != nil || !reflect.DeepEqual(back, v.Interface()) {
		t.Fatalf("round trip: %v", err)
	}
	long := reflect.New(typ).Elem()
	long.Field(2).SetString(strings.Repeat("é", table.Storage.MaxValueSize))
	if _, err := table.ToDynamicValue(long.Interface()); !errors.Is(err, table.ErrTooLarge) {
		t.Fatalf("a string over 64 KiB: %v", err)
	}
	early := reflect.New(typ).Elem()
	early.Field(3).Set(reflect.ValueOf(time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)))
	if _, err := table.ToDynamicValue(early.Interface()); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("a time before 1601: %v", err)
	}
}
