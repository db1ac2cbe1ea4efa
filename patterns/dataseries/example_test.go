package dataseries_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The guide's hourly message counts: one entity per day, one property per
// hour.
func Example() {
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	svc, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("counts%d", time.Now().UnixNano())
	if err := table.CreateTable(ctx, svc, name); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = table.DeleteTable(ctx, svc, name) }()

	tbl, _ := table.New[table.Dynamic](svc.NewClient(name))
	counts, err := dataseries.New[int64](tbl, &dataseries.Options{Slots: dataseries.Hours()})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, _, err := counts.Add(ctx, "user42", "2024-07-31", "H18", 1); err != nil {
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
	fmt.Println(day.Slots["H09"], day.Slots["H18"], day.Slots["H23"])
	// Output: 12 3 0
}
