package table_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/tablekit/tablekit/patterns/table"
)

// Department shares its partition with the department's employees.
type Department struct {
	Name    string `table:",pk"`
	Key     string `table:",rk"`
	Manager string
}

// StaffV1 is how an older program stored employees: version 1.
type StaffV1 struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FullName   string
}

// Staff is version 2: the name split in two.
type Staff struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	First      string
	Last       string
}

// One partition holds a department and its employees of two versions; one
// query reads them into their Go types, upgrading version 1 on the way.
func ExampleTypes() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	client := table.NewClient(svc, name)

	// An older program, version 1 of Staff.
	before, _ := table.NewTypes(client, nil)
	oldStaff, err := table.Register[StaffV1](before, "Staff", nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := oldStaff.Insert(ctx, StaffV1{Department: "Sales", ID: "000123", FullName: "Jo Jones"}); err != nil {
		log.Fatal(err)
	}

	// This program: Department, and Staff at version 2.
	types, _ := table.NewTypes(client, nil)
	depts, err := table.Register[Department](types, "Department", nil)
	if err != nil {
		log.Fatal(err)
	}
	staff, err := table.Register[Staff](types, "Staff", &table.RegisterOptions{
		Version: 2,
		Upgrades: []table.Upgrade{table.UpgradeFrom(1, func(s StaffV1) (Staff, error) {
			first, last, _ := strings.Cut(s.FullName, " ")
			return Staff{First: first, Last: last}, nil
		})},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := depts.Insert(ctx, Department{Name: "Sales", Key: "DEPT", Manager: "Ann Lee"}); err != nil {
		log.Fatal(err)
	}
	if _, err := staff.Insert(ctx, Staff{Department: "Sales", ID: "000124", First: "Cy", Last: "Young"}); err != nil {
		log.Fatal(err)
	}

	for v, err := range types.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
		if err != nil {
			log.Fatal(err)
		}
		switch e := v.(type) {
		case Department:
			fmt.Println("department", e.Name, "managed by", e.Manager)
		case Staff:
			fmt.Println("employee", e.ID, e.Last+",", e.First)
		}
	}

	// Rewrite the remaining version 1 rows as version 2.
	p, err := types.Migrate(ctx, &table.MigrateOptions{Query: &table.Query{Filter: table.PartitionKey("Sales")}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %d, upgraded %d\n", p.Read, p.Upgraded)
	// Output:
	// employee 000123 Jones, Jo
	// employee 000124 Young, Cy
	// department Sales managed by Ann Lee
	// read 3, upgraded 1
}
