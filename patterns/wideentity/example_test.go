package wideentity_test

import (
	"context"
	"fmt"
	"log"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// The guide's example: a user's message counts for each day of a year, 365
// properties, more than one entity holds. Stored as a header and two part
// rows, written in one transaction, read with one range query; one day is
// changed with one merge, without reading.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "days")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()

	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}
	counts, err := wideentity.New(tbl, &wideentity.Options[table.Dynamic]{Parts: 2})
	if err != nil {
		log.Fatal(err)
	}
	year := table.Dynamic{PartitionKey: "user42", RowKey: "2023", Properties: map[string]any{}}
	for day := 1; day <= 365; day++ {
		year.Properties[fmt.Sprintf("D%03d", day)] = int64(day % 7)
	}
	if _, err := counts.Insert(ctx, year); err != nil {
		log.Fatal(err)
	}
	feb1 := table.Dynamic{PartitionKey: "user42", RowKey: "2023", Properties: map[string]any{"D032": int64(40)}}
	if _, err := counts.Update(ctx, feb1, azcore.ETagAny, table.Fields("D032")); err != nil {
		log.Fatal(err)
	}
	got, err := counts.Get(ctx, "user42", "2023")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(got.Value.Properties), "days in", got.Parts, "part rows")
	fmt.Println("Feb 1:", got.Value.Properties["D032"], "Dec 31:", got.Value.Properties["D365"])
	// Output:
	// 365 days in 2 part rows
	// Feb 1: 40 Dec 31: 1
}

// A typed wide entity changed with a read-modify-write: Modify reads the
// whole entity with one range query and writes it back in one transaction
// conditioned on the version read, again if another writer came first.
func ExampleStore_Modify() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "weeks")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()

	// Week is small for the example; a struct of more than 252 fields is
	// stored the same way.
	type Week struct {
		User                              string `table:",pk"`
		Week                              string `table:",rk"`
		Mon, Tue, Wed, Thu, Fri, Sat, Sun int64
		Note                              string
	}
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}
	weeks, err := wideentity.New[Week](tbl, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := weeks.Insert(ctx, Week{User: "user42", Week: "2024-W31", Mon: 3, Note: "holiday"}); err != nil {
		log.Fatal(err)
	}
	e, err := weeks.Modify(ctx, "user42", "2024-W31", func(w *Week) error {
		w.Mon++
		w.Tue = 5
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Value.Mon, e.Value.Tue, e.Value.Note, "in", e.Parts, "part rows")
	// Output: 4 5 holiday in 8 part rows
}
