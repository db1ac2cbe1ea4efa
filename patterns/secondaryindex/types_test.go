package secondaryindex_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// A primary row as stored: the Store keeps it under keys.Join(Primary, id).
type employeeRow struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
}

// A whole copy of the email index: the primary's properties and TkRef.
type emailCopy struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Email      string
	TkRef      string
}

type deptRow struct {
	Name    string `table:",pk"`
	Key     string `table:",rk"`
	Manager string
}

// An index's rows are types to table.Types by their key prefixes (the
// guide's own layout): one query of a partition holding the Store's
// primaries and copies, and a department, reads each into its Go type.
func TestIndexRowsAreTypesByPrefix(t *testing.T) {
	t.Parallel()
	if secondaryindex.RefProperty != "TkRef" {
		t.Fatalf("emailCopy's TkRef field does not match RefProperty %q", secondaryindex.RefProperty)
	}
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	for _, e := range []Employee{
		{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jonesj@contoso.com"},
		{Department: "Sales", ID: "000123", FirstName: "Ana", LastName: "Jones", Email: "jonesa@contoso.com"},
	} {
		if _, err := r.store.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	types, err := table.NewTypes(r.tbl.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := func(name string) string { return keys.Join(name, "") }
	if _, err := table.Register[employeeRow](types, "Employee", &table.RegisterOptions{Prefix: prefix("empid")}); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Register[emailCopy](types, "EmailIndex", &table.RegisterOptions{Prefix: prefix("email")}); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Register[table.Dynamic](types, "NameIndex", &table.RegisterOptions{Prefix: prefix("name")}); err != nil {
		t.Fatal(err)
	}
	depts, err := table.Register[deptRow](types, "Department", &table.RegisterOptions{Prefix: "DEPT"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := depts.Insert(ctx, deptRow{Name: "Sales", Key: "DEPT", Manager: "Ann"}); err != nil {
		t.Fatal(err)
	}

	var got []string
	for v, err := range types.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := v.(type) {
		case employeeRow:
			got = append(got, "employee "+e.Key+" "+e.FirstName)
		case emailCopy:
			got = append(got, "email "+e.Email+" -> "+e.TkRef)
		case table.Dynamic:
			got = append(got, "name "+e.RowKey)
		case deptRow:
			got = append(got, "department "+e.Manager)
		default:
			t.Fatalf("unexpected %T", v)
		}
	}
	want := []string{
		"department Ann",
		"email jonesa@contoso.com -> Sales!000123", "email jonesj@contoso.com -> Sales!000223",
		"employee empid!000123 Ana", "employee empid!000223 Jo",
		"name name!Jones!Ana!000123", "name name!Jones!Jo!000223",
	}
	if testrig.Cosmos() {
		slices.Sort(got) // a query's rows come in no order on Cosmos DB
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// The Store still reads its rows (the department is not among them).
	n := 0
	for _, err := range r.store.Find(ctx, "Sales", "name", []any{"Jones"}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("Find after the department was added: %d", n)
	}
}
