package secondaryindex_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The guide's intra-partition secondary index: employees of a department
// found by id, by email (unique) and by last name (non-unique, keys only),
// each lookup one query, every write one transaction.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "employees")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}

	employees, err := secondaryindex.New(tbl, &secondaryindex.Options[Employee]{
		Primary: "empid",
		Indexes: []secondaryindex.Index[Employee]{
			{Name: "email", Unique: true, On: []string{"Email"}},
			{Name: "name", Holds: secondaryindex.KeysOnly, On: []string{"LastName", "FirstName"}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jonesj@contoso.com", Age: 29},
		{Department: "Sales", ID: "000123", FirstName: "Ana", LastName: "Jones", Email: "jonesa@contoso.com", Age: 34},
		{Department: "Sales", ID: "000155", FirstName: "Ben", LastName: "Smith", Email: "smithb@contoso.com", Age: 41},
	} {
		if _, err := employees.Insert(ctx, e); err != nil {
			log.Fatal(err)
		}
	}
	jo, err := employees.Lookup(ctx, "Sales", "email", "jonesj@contoso.com", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("by email:", jo.RowKey, jo.Value.FirstName, jo.Value.LastName)

	for e, err := range employees.Find(ctx, "Sales", "name", []any{"Jones"}, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("named Jones:", e.RowKey, e.Value.FirstName)
	}

	// Changing an indexed value moves its copy in the same transaction.
	if _, err := employees.Modify(ctx, "Sales", "000223", func(e *Employee) error {
		e.Email = "jo.jones@contoso.com"
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	_, err = employees.Lookup(ctx, "Sales", "email", "jonesj@contoso.com", nil)
	fmt.Println("old email:", err != nil)
	// Output:
	// by email: 000223 Jo Jones
	// named Jones: 000123 Ana
	// named Jones: 000223 Jo
	// old email: true
}
