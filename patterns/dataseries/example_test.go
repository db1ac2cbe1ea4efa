package dataseries_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The guide's hourly message counts: one entity per day, one property per
// hour.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "counts")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()

	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}
	counts, err := dataseries.New[int64](tbl, dataseries.Hours(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, err := counts.Add(ctx, "user42", "2024-07-31", "H18", 1); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := counts.Set(ctx, "user42", "2024-07-31", "H09", 12); err != nil {
		log.Fatal(err)
	}
	day, err := counts.Get(ctx, "user42", "2024-07-31")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(day.Value["H09"], day.Value["H18"], day.Value["H23"])
	// Output: 12 3 0
}
