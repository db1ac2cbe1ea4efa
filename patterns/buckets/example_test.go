package buckets_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The guide's access log: every access of the hour goes to that hour's
// partition, the hot spot of the append anti-pattern. Spread over 4
// buckets, the inserts hit 4 partitions, and Range reads them back as one
// partition would return them.
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
	name := fmt.Sprintf("access%d", time.Now().UnixNano())
	if err := table.CreateTable(ctx, svc, name); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = table.DeleteTable(ctx, svc, name) }()

	type Access struct{ Resource string }
	tbl, _ := table.New[Access](svc.NewClient(name))
	accesses, err := buckets.New(tbl, &buckets.Options{Buckets: 4})
	if err != nil {
		log.Fatal(err)
	}
	hour := "2014-07-31T18"
	partitions := map[string]bool{}
	for i, emp := range []string{"000123", "000042", "000777", "000123", "000500", "000042"} {
		rk := keys.Join(emp, keys.Pad(uint64(i), 2)) // employee, then sequence
		res, err := accesses.Insert(ctx, hour, rk, Access{Resource: fmt.Sprint("door", i)})
		if err != nil {
			log.Fatal(err)
		}
		partitions[res.Partition] = true
	}
	fmt.Printf("6 accesses in %d of the 4 bucket partitions\n", len(partitions))
	for e, err := range accesses.Range(ctx, hour, "", "") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.RowKey, e.Value.Resource)
	}
	// Output:
	// 6 accesses in 3 of the 4 bucket partitions
	// 000042!01 door1
	// 000042!05 door5
	// 000123!00 door0
	// 000123!03 door3
	// 000500!04 door4
	// 000777!02 door2
}
