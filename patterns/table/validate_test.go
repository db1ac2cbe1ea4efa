package table_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// Every rule the real service enforces is checked before the network: the
// transport must see zero requests, even where Azurite would accept.
func TestValidationSendsNothing(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[table.Dynamic](t)
	ctx := context.Background()
	dyn := func(pk, rk string, props map[string]any) table.Dynamic {
		return table.Dynamic{PartitionKey: pk, RowKey: rk, Properties: props}
	}
	many := map[string]any{}
	for i := 0; i <= table.Storage.MaxProperties; i++ {
		many[fmt.Sprintf("P%d", i)] = int32(i)
	}
	exactly := map[string]any{}
	for i := 0; i < table.Storage.MaxProperties; i++ {
		exactly[fmt.Sprintf("P%d", i)] = int32(i)
	}
	huge := map[string]any{}
	for i := 0; i < 17; i++ { // 17 x 32K chars x 2 bytes (UTF-16) > 1 MiB
		huge[fmt.Sprintf("S%d", i)] = strings.Repeat("a", table.Storage.MaxValueSize/2)
	}
	cases := []struct {
		name string
		v    table.Dynamic
		want error
	}{
		{"slash in PartitionKey", dyn("a/b", "r", nil), table.ErrInvalidKey},
		{"hash in RowKey", dyn("p", "r#1", nil), table.ErrInvalidKey},
		{"control char", dyn("p", "r\x01", nil), table.ErrInvalidKey},
		{"empty PartitionKey", dyn("", "r", nil), table.ErrInvalidKey},
		{"key too long", dyn(strings.Repeat("k", keys.MaxKeyLength+1), "r", nil), table.ErrInvalidKey},
		{"253 properties", dyn("p", "r", many), table.ErrInvalidEntity},
		{"property name with space", dyn("p", "r", map[string]any{"a b": "x"}), table.ErrInvalidEntity},
		{"property name starting with digit", dyn("p", "r", map[string]any{"1a": "x"}), table.ErrInvalidEntity},
		{"property name too long", dyn("p", "r", map[string]any{strings.Repeat("n", 256): "x"}), table.ErrInvalidEntity},
		{"reserved property name", dyn("p", "r", map[string]any{"Timestamp": "x"}), table.ErrInvalidEntity},
		{"string over 64 KiB in UTF-16", dyn("p", "r", map[string]any{"S": strings.Repeat("é", table.Storage.MaxValueSize/2+1)}), table.ErrTooLarge},
		{"binary over 64 KiB", dyn("p", "r", map[string]any{"B": make([]byte, table.Storage.MaxValueSize+1)}), table.ErrTooLarge},
		{"entity over 1 MiB", dyn("p", "r", huge), table.ErrTooLarge},
		{"unsupported value", dyn("p", "r", map[string]any{"X": struct{}{}}), table.ErrInvalidEntity},
		{"unsigned value", dyn("p", "r", map[string]any{"X": uint64(1)}), table.ErrInvalidEntity},
		{"malformed GUID", dyn("p", "r", map[string]any{"G": aztables.EDMGUID("not-a-guid")}), table.ErrInvalidEntity},
		{"time before 1601", dyn("p", "r", map[string]any{"T": time.Date(1600, 12, 31, 0, 0, 0, 0, time.UTC)}), table.ErrInvalidEntity},
	}
	for _, c := range cases {
		_, err := tb.Insert(ctx, c.v)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Insert = %v, want %v", c.name, err, c.want)
		}
		var te *table.Error
		if !errors.As(err, &te) || te.Op != "insert" || te.StatusCode != 0 {
			t.Errorf("%s: error %#v does not name the operation as a client-side *table.Error", c.name, err)
		}
		if _, err := tb.Upsert(ctx, c.v, table.Replace); !errors.Is(err, c.want) {
			t.Errorf("%s: Upsert = %v", c.name, err)
		}
		if _, err := tb.Update(ctx, c.v, azcore.ETagAny, table.Merge); !errors.Is(err, c.want) {
			t.Errorf("%s: Update = %v", c.name, err)
		}
		if res, err := tb.Submit(ctx, []table.Op{tb.InsertOp(dyn("p", "ok", nil)), tb.InsertOp(c.v)}, nil); !errors.Is(err, c.want) || res.Ops[0].Applied {
			t.Errorf("%s: Submit = %v, want %v with nothing applied", c.name, err, c.want)
		}
	}
	for _, k := range [][2]string{{"a/b", "r"}, {"", "r"}, {"p", "r?"}} {
		if _, err := tb.Get(ctx, k[0], k[1], nil); !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("Get(%q, %q) = %v", k[0], k[1], err)
		}
		if err := tb.Delete(ctx, k[0], k[1], azcore.ETagAny); !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("Delete(%q, %q) = %v", k[0], k[1], err)
		}
	}
	if _, err := tb.Upsert(ctx, dyn("p", "r", nil), table.Mode{}); !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("Upsert with no mode = %v", err)
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests were sent for invalid input", n)
	}
	// The limits themselves are allowed (and Azurite agrees).
	if _, err := tb.Insert(ctx, dyn("p", "max", exactly)); err != nil {
		t.Fatalf("252 properties: %v", err)
	}
	// ASCII at the limit: Azurite 3.37 sometimes answers PropertyValueTooLarge
	// for a 32,768-character string of multi-byte characters, depending on
	// the RowKey's length (an emulator bug; the service counts UTF-16).
	if _, err := tb.Insert(ctx, dyn("p", "maxstr", map[string]any{"S": strings.Repeat("a", table.Storage.MaxValueSize/2), "B": make([]byte, table.Storage.MaxValueSize)})); err != nil {
		t.Fatalf("64 KiB values: %v", err)
	}
}

func TestNewRejectsUnstorableTypes(t *testing.T) {
	env := newEnvClient(t)
	type nested struct{ A struct{ B int } }
	type badName struct {
		PartitionKey, RowKey string
		X                    string `table:"a-b"`
	}
	type dup struct {
		PartitionKey, RowKey string
		A                    string
		B                    string `table:"A"`
	}
	type unsigned struct {
		PartitionKey, RowKey string
		U                    uint64
	}
	type badKey struct {
		PartitionKey int
	}
	type twoKeys struct {
		PartitionKey string
		Dept         string `table:",pk"`
		RowKey       string
	}
	type onlyPK struct {
		PartitionKey string
		Name         string
	}
	fields := []reflect.StructField{{Name: "PartitionKey", Type: reflect.TypeOf("")}, {Name: "RowKey", Type: reflect.TypeOf("")}}
	for i := 0; i <= table.Storage.MaxProperties; i++ { // 253 properties
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeOf(int32(0))})
	}
	if err := newWide(fields[:len(fields)-1]); err != nil {
		t.Errorf("252 fields: %v", err)
	}
	checks := map[string]error{
		"nested":   newErr[nested](env),
		"bad name": newErr[badName](env),
		"dup":      newErr[dup](env),
		"unsigned": newErr[unsigned](env),
		"bad key":  newErr[badKey](env),
		"two keys": newErr[twoKeys](env),
		"only pk":  newErr[onlyPK](env),
		"keyword": func() error {
			type kw struct {
				PartitionKey, RowKey string
				Null                 string `table:"null"`
			}
			return newErr[kw](env)
		}(),
		"reserved history": func() error {
			type h struct {
				PartitionKey, RowKey string
				TkWrites             string
			}
			return newErr[h](env)
		}(),
		"unexported Meta": func() error {
			type m struct {
				meta                 table.Meta
				PartitionKey, RowKey string
			}
			_ = m{}.meta
			return newErr[m](env)
		}(),
		"two Metas": func() error {
			type m struct {
				table.Meta
				Other                table.Meta
				PartitionKey, RowKey string
			}
			return newErr[m](env)
		}(),
		"not a struct": func() error {
			_, err := table.New[int](env, nil)
			return err
		}(),
	}
	for name, err := range checks {
		if !errors.Is(err, table.ErrInvalidEntity) {
			t.Errorf("%s: New = %v, want ErrInvalidEntity", name, err)
		}
	}
	// One hint for 64-bit unsigned values, in structs and property bags.
	if !strings.Contains(fmt.Sprint(checks["unsigned"]), "use int64, or tag") {
		t.Errorf("unsigned hint: %v", checks["unsigned"])
	}
	if !strings.Contains(fmt.Sprint(checks["nested"]), "table:\",json\"") {
		t.Errorf("the error for a nested struct should suggest the json tag: %v", checks["nested"])
	}
	if err := newWide(fields); !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("253 fields: %v", err)
	}
}
