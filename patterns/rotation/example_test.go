package rotation_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The guide's login records, a table per day: three days of logins, read
// across days as one table, then the oldest day deleted with one request.
func Example() {
	ctx := context.Background()
	cs, err := tabletest.ConnectionString() // the emulator's, or AZURE_STORAGE_CONNECTION_STRING's
	if err != nil {
		log.Fatal(err)
	}
	svc, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}

	type Login struct {
		User string `table:",pk"`
		At   string `table:",rk"` // ticks: one user's logins in time order
		IP   string
	}
	// The example's clock stands at noon on August 2, 2024, so that its
	// dates are recent; leave Now unset in real code.
	now := time.Date(2024, 8, 2, 12, 0, 0, 0, time.UTC)
	prefix := fmt.Sprintf("logins%dx", time.Now().UnixNano())
	logins, err := rotation.New[Login](svc, prefix, &rotation.Options{Period: rotation.Day, Grace: 72 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	for day := 31; day <= 33; day++ {
		at := time.Date(2024, 7, day, 9, 30, 0, 0, time.UTC) // July 31, August 1 and 2
		for _, user := range []string{"jones", "smith"} {
			l := Login{User: user, At: keys.Pad(uint64(keys.Ticks(at)), 19), IP: fmt.Sprintf("10.0.%d.1", at.Day())}
			if _, err := logins.Insert(ctx, at, l); err != nil {
				log.Fatal(err)
			}
		}
	}
	periods, _ := logins.Periods(ctx)
	fmt.Println(len(periods), "daily tables, the first", periods[0].Name[len(prefix):])

	jones := &rotation.RangeOptions{Filter: table.PartitionKey("jones")}
	for l, err := range logins.Range(ctx, time.Date(2024, 7, 31, 0, 0, 0, 0, time.UTC), now, jones) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("jones from", l.Value.IP)
	}

	now = now.AddDate(0, 0, 4) // four days later, July 31 is past its Grace
	swept, err := logins.Sweep(ctx, &rotation.SweepOptions{Before: time.Date(2024, 8, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("swept", swept.Deleted[0].Name[len(prefix):], "in one request")
	rest, _ := logins.Periods(ctx)
	for _, p := range rest {
		_ = table.DeleteTable(ctx, svc, p.Name) // the example's cleanup
	}
	fmt.Println(len(rest), "daily tables left")
	// Output:
	// 3 daily tables, the first 20240731
	// jones from 10.0.31.1
	// jones from 10.0.1.1
	// jones from 10.0.2.1
	// swept 20240731 in one request
	// 2 daily tables left
}
