package buckets_test

import (
	"context"
	"fmt"
	"log"

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
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "access")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()

	type Access struct {
		Hour     string `table:",pk"` // the logical partition
		Key      string `table:",rk"` // employee, then sequence
		Resource string
	}
	tbl, err := table.New[Access](c, nil)
	if err != nil {
		log.Fatal(err)
	}
	accesses, err := buckets.New(tbl, &buckets.Options{Buckets: 4})
	if err != nil {
		log.Fatal(err)
	}
	hour := "2014-07-31T18"
	partitions := map[string]bool{}
	for i, emp := range []string{"000123", "000042", "000777", "000123", "000500", "000042"} {
		a := Access{Hour: hour, Key: keys.Join(emp, keys.Pad(uint64(i), 2)), Resource: fmt.Sprint("door", i)}
		res, err := accesses.Insert(ctx, a)
		if err != nil {
			log.Fatal(err)
		}
		partitions[res.Partition] = true
	}
	fmt.Printf("6 accesses in %d of the 4 bucket partitions\n", len(partitions))
	for e, err := range accesses.Range(ctx, hour, "", "", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Value.Hour, e.RowKey, e.Value.Resource)
	}
	// Output:
	// 6 accesses in 3 of the 4 bucket partitions
	// 2014-07-31T18 000042!01 door1
	// 2014-07-31T18 000042!05 door5
	// 2014-07-31T18 000123!00 door0
	// 2014-07-31T18 000123!03 door3
	// 2014-07-31T18 000500!04 door4
	// 2014-07-31T18 000777!02 door2
}
