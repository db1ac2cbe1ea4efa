package table_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/tablekit/tablekit/patterns/table"
)

type modelled struct {
	table.Meta
	Dept  string         `table:",pk"`
	ID    string         `table:",rk"`
	Name  string         `table:"FullName,omitempty"`
	Blob  []byte         `table:",json"`
	Skip  int            `table:"-"`
	Ref   string         `table:",guid"`
	Extra map[string]any `table:",extra"`
	inner
}

type inner struct{ Nested int64 }

// FieldsOf is the one field model: what every package reads instead of
// parsing `table` tags.
func TestFieldsOf(t *testing.T) {
	fs, err := fieldmodel.Of[modelled]()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, prop string
		role       fieldmodel.Role
		json, guid bool
		omit       bool
	}
	var got []row
	for _, f := range fs {
		got = append(got, row{f.Name, f.Property, f.Role, f.JSON, f.GUID, f.OmitEmpty})
	}
	want := []row{
		{"Meta", "", fieldmodel.Meta, false, false, false},
		{"Dept", "", fieldmodel.PartitionKey, false, false, false},
		{"ID", "", fieldmodel.RowKey, false, false, false},
		{"Name", "FullName", fieldmodel.Property, false, false, true},
		{"Blob", "Blob", fieldmodel.Property, true, false, false},
		{"Ref", "Ref", fieldmodel.Property, false, true, false},
		{"Extra", "", fieldmodel.Extra, false, false, false},
		{"Nested", "Nested", fieldmodel.Property, false, false, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FieldsOf =\n%v\nwant\n%v", got, want)
	}
	if v := reflect.ValueOf(modelled{inner: inner{7}}).FieldByIndex(fs[len(fs)-1].Index); v.Int() != 7 {
		t.Fatalf("the nested field's Index reads %v", v)
	}
	if _, err := fieldmodel.Of[struct{ C chan int }](); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("FieldsOf of a type New rejects = %v", err)
	}
}

func TestValidPropertyNameAndKeys(t *testing.T) {
	for name, ok := range map[string]bool{"Email": true, "e_1": true, "": false, "a-b": false, "and": false, "RowKey": false, "TkRef": false, "TkWrites": false} {
		if err := fieldmodel.ValidName(name); (err == nil) != ok || (err != nil && !errors.Is(err, table.ErrInvalid)) {
			t.Errorf("ValidPropertyName(%q) = %v", name, err)
		}
	}
	v := modelled{Dept: "Sales", ID: "7"}
	if pk, rk, err := fieldmodel.KeysOf(&v); pk != "Sales" || rk != "7" || err != nil {
		t.Fatalf("KeysOf = %q, %q, %v", pk, rk, err)
	}
	if _, _, err := fieldmodel.KeysOf(&inner{}); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("KeysOf of a type without keys = %v", err)
	}
	errX := invalid.New("x: invalid request")
	//lint:ignore SA1032 the reverse order is the point: the root must not match a package's sentinel
	if !errors.Is(errX, table.ErrInvalid) || errX.Error() != "x: invalid request" || errors.Is(table.ErrInvalid, errX) {
		t.Fatalf("NewErrInvalid: %v", errX)
	}
}

func TestKeysIdempotentSteps(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	e := employee{Department: "Sales", ID: "1"}
	if pk, rk, err := fieldmodel.TableKeys(tb.WithKeys(func(e *employee) (string, string) { return "x", e.ID + "!" }), &e); pk != "x" || rk != "1!" || err != nil {
		t.Fatalf("Keys of a WithKeys view = %q, %q, %v", pk, rk, err)
	}
	if pk, rk, err := fieldmodel.TableKeys(tb, &e); pk != "Sales" || rk != "1" || err != nil {
		t.Fatalf("Keys = %q, %q, %v", pk, rk, err)
	}
	for i, want := range []error{nil, table.ErrAlreadyExists} {
		if _, err := tb.Insert(ctx, e); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("Insert #%d = %v; want %v", i+1, err, want)
		}
	}
	for i, want := range []error{nil, table.ErrNotFound} {
		if err := tb.Delete(ctx, "Sales", "1", "*"); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("Delete #%d = %v; want %v", i+1, err, want)
		}
	}
	if n := ft.Count(); n != 4 {
		t.Fatalf("%d round trips, want 4 (one each)", n)
	}
}

func TestFilterProperties(t *testing.T) {
	f := table.And(table.PartitionKey("Sales"), table.Or(table.Eq("SSN", "1"), table.Not(table.Gt("Age", 3))), table.Eq("SSN", "2"), table.RowKeyPrefix("a"))
	if got := fieldmodel.FilterProperties(f); !reflect.DeepEqual(got, []string{"PartitionKey", "SSN", "Age", "RowKey"}) {
		t.Fatalf("Properties = %v", got)
	}
	if got := fieldmodel.FilterProperties(table.Filter{}); got != nil {
		t.Fatalf("the zero Filter compares %v", got)
	}
}

func TestFailedOp(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	boom := errors.New("boom")
	op := batchplan.Failed[table.Op](boom)
	if !errors.Is(op.Err(), boom) {
		t.Fatalf("Err = %v", op.Err())
	}
	_, err := tb.Submit(context.Background(), []table.Op{tb.InsertOp(employee{Department: "a", ID: "1"}), op}, nil)
	var be *table.BatchError
	if !errors.As(err, &be) || !errors.Is(err, boom) || ft.Count() != 0 {
		t.Fatalf("Submit with a failed op = %v after %d requests; want a BatchError naming it, nothing sent", err, ft.Count())
	}
	if !errors.Is(batchplan.Failed[table.Op](nil).Err(), table.ErrInvalidBatch) {
		t.Fatal("FailedOp(nil) carries no error")
	}
}

func TestMarkInvalid(t *testing.T) {
	pkg := invalid.New("pkg: invalid request")
	_, _, keyErr := fieldmodel.KeysOf(&inner{})
	m := invalid.Mark(pkg, keyErr)
	if !errors.Is(m, pkg) || !errors.Is(m, table.ErrInvalidEntity) || !errors.Is(m, table.ErrInvalid) || m.Error() != keyErr.Error() {
		t.Fatalf("MarkInvalid = %v", m)
	}
	other := errors.New("network")
	if invalid.Mark(pkg, other) != other || invalid.Mark(pkg, nil) != nil {
		t.Fatal("MarkInvalid changed an error that is not a validation error")
	}
}
