package table_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/patterns/table"
)

type worker struct {
	PartitionKey string
	RowKey       string
	Name         string
	Age          int32
	Logins       int64
	Salary       float64
}

// TestTypedFilters: a Table[T] types each literal by T's field, so a Go int
// compares right with Int32, Int64 and Double properties; misspelled
// properties and impossible values fail before the network.
func TestTypedFilters(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[worker](t)
	ctx := context.Background()
	for _, w := range []worker{
		{PartitionKey: "p", RowKey: "1", Name: "Ann", Age: 21, Logins: 5, Salary: 120000},
		{PartitionKey: "p", RowKey: "2", Name: "Bob", Age: 35, Logins: 9, Salary: 90000},
	} {
		if _, err := tb.Insert(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		f       table.Filter
		literal string // as sent, URL-encoded
		want    string // the names found
	}{
		{table.Eq("Age", 21), "Age+eq+21%29", "Ann"},
		{table.Eq("Logins", 9), "Logins+eq+9L", "Bob"},
		{table.Gt("Salary", 100000), "Salary+gt+100000.0", "Ann"},
		{table.And(table.Ge("Age", int64(30)), table.Lt("Salary", 100000)), "Age+ge+30%29", "Bob"},
		{table.Not(table.Eq("Name", "Ann")), "Name+eq+%27Ann%27", "Bob"},
	}
	for _, c := range cases {
		ft.Reset()
		got, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("p"), c.f)}))
		if err != nil {
			t.Fatalf("%v: %v", c.f, err)
		}
		var names []string
		for _, w := range got {
			names = append(names, w.Name)
		}
		if strings.Join(names, ",") != c.want {
			t.Errorf("%v: found %v, want %s", c.f, names, c.want)
		}
		if u := ft.Requests()[0].URL; !strings.Contains(u, c.literal) {
			t.Errorf("%v: sent %s, want %s in it", c.f, u, c.literal)
		}
	}
	ft.Reset()
	bad := []struct {
		q    *table.Query
		want error
	}{
		{&table.Query{Filter: table.Eq("Name", 5)}, table.ErrInvalidFilter},
		{&table.Query{Filter: table.Eq("Age", 3.5)}, table.ErrInvalidFilter},
		{&table.Query{Filter: table.Eq("Age", int64(1)<<40)}, table.ErrInvalidFilter},
		{&table.Query{Filter: table.Eq("Frstname", "Ann")}, table.ErrInvalidFilter},
		{&table.Query{Filter: table.Or(table.Eq("Age", 1), table.Eq("Salary", "high"))}, table.ErrInvalidFilter},
		{&table.Query{Select: []string{"Frstname"}}, table.ErrInvalidEntity},
	}
	for _, b := range bad {
		_, err := tb.QueryPage(ctx, b.q)
		if !errors.Is(err, b.want) {
			t.Errorf("%+v: %v, want %v", b.q, err, b.want)
		}
		// Errors name the table (and the filter, when there is one).
		var te *table.Error
		if !errors.As(err, &te) || te.Table != tb.Name() || te.Table == "" || (b.q.Filter.String() != "" && te.Filter == "") {
			t.Errorf("%+v: error %#v does not name the table and filter", b.q, te)
		}
	}
	if _, err := tb.Get(ctx, "p", "1", &table.GetOptions{Select: []string{"Frstname"}}); !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("Get with a misspelled Select = %v", err)
	}
	if ft.Count() != 0 {
		t.Fatalf("%d requests sent for invalid queries", ft.Count())
	}
	// Dynamic keeps the untyped builder: the Go type decides.
	dyn, err := table.New[table.Dynamic](tb.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := table.Collect(dyn.Query(ctx, &table.Query{Filter: table.Eq("Age", int32(21))}))
	if err != nil || len(got) != 1 || got[0].RowKey != "1" {
		t.Fatalf("Dynamic query: %v, %v", got, err)
	}
}
