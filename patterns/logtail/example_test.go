package logtail_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// A user's most recent logins: one range query, newest first.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "logins")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()

	type Login struct{ IP string }
	logins, err := table.New[Login](c, nil)
	if err != nil {
		log.Fatal(err)
	}
	tail, err := logtail.New(logins, nil)
	if err != nil {
		log.Fatal(err)
	}
	base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	for i, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		if _, err := tail.AppendAt(ctx, "user42", base.Add(time.Duration(i)*time.Hour), Login{IP: ip}); err != nil {
			log.Fatal(err)
		}
	}
	latest, err := tail.Latest(ctx, "user42", 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range latest {
		fmt.Println(e.Time.Format(time.DateTime), e.Value.IP)
	}
	// Output:
	// 2024-07-31 21:00:00 10.0.0.4
	// 2024-07-31 20:00:00 10.0.0.3
}
