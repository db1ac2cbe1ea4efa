package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
)

// rotateLogins keeps login records in a table per day, reads them across
// days, and drops the oldest days with one request each (guide pattern 8).
func (t *tour) rotateLogins(ctx context.Context) error {
	type Login struct {
		User string `table:",pk"`
		At   string `table:",rk"` // ticks: a user's logins in time order
		IP   string
	}
	// The rotation's clock stands at noon on August 2, 2024, and moves
	// four days on below, instead of the tour waiting for the days to pass.
	now := time.Date(2024, 8, 2, 12, 0, 0, 0, time.UTC)
	prefix := t.name + "logins"
	logins, err := rotation.New[Login](t.svc, prefix, &rotation.Options{Period: rotation.Day, Grace: 48 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		return err
	}
	defer func() { // the tour's cleanup of what the step leaves
		rest, _ := logins.Periods(context.WithoutCancel(ctx))
		for _, p := range rest {
			_ = table.DeleteTable(context.WithoutCancel(ctx), t.svc, p.Name)
		}
	}()
	n := 0
	for d := range 3 {
		for h, user := range []string{"jones", "smith", "jones"} {
			at := time.Date(2024, 7, 31+d, 8+h, 15, 0, 0, time.UTC)
			l := Login{User: user, At: keys.Pad(uint64(keys.Ticks(at)), 19), IP: fmt.Sprintf("10.0.%d.%d", d, h)}
			if _, err := logins.Insert(ctx, at, l); err != nil {
				return err
			}
			n++
		}
	}
	periods, err := logins.Periods(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range periods {
		names = append(names, "..."+p.Name[len(prefix)-6:])
	}
	t.say("%d logins of July 31 to August 2 went to a table per day, each created by its day's first insert: %s", n, strings.Join(names, ", "))
	t.say("(the days are found by listing the tables of the prefix: no registry to drift)")
	var ips []string
	q := &rotation.RangeOptions{Filter: table.PartitionKey("jones")}
	for l, err := range logins.Range(ctx, time.Date(2024, 8, 1, 0, 0, 0, 0, time.UTC), now, q) {
		if err != nil {
			return err
		}
		ips = append(ips, l.Value.IP)
	}
	t.say("Range(August 1 to now, jones): %s: one list request and a query per day, merged as one table", strings.Join(ips, ", "))
	now = now.AddDate(0, 0, 4)
	swept, err := logins.Sweep(ctx, &rotation.SweepOptions{Before: time.Date(2024, 8, 2, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	t.say("four days later, Sweep(before August 2) deleted %d days, one request each however many logins they held", len(swept.Deleted))
	if _, err := logins.Insert(ctx, time.Date(2024, 7, 31, 23, 0, 0, 0, time.UTC), Login{User: "late", At: "1", IP: "10.9.9.9"}); err == nil {
		return fmt.Errorf("a write to a swept day was accepted")
	}
	t.say("a late login for July 31 is refused (ErrExpired), so its table's name is never used again")
	return nil
}

// spreadAccesses spreads the inserts of one hot partition over 4 bucket
// partitions and reads them back as one (guide pattern 12).
func (t *tour) spreadAccesses(ctx context.Context) error {
	type Access struct {
		Hour     string `table:",pk"` // the logical partition
		Sequence string `table:",rk"`
		Resource string
	}
	tbl, err := table.New[Access](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	hour := "access-2014-07-31T18" // every access of the hour: the append anti-pattern's hot spot
	spread, err := buckets.New(tbl, &buckets.Options{Buckets: 4})
	if err != nil {
		return err
	}
	parts := map[string]int{}
	moved := "" // a RowKey whose bucket under 8 is not its bucket under 4
	for i := range 12 {
		rk := keys.Join(keys.Pad(uint64(100+i%5), 6), keys.Pad(uint64(i), 4)) // employee, then sequence
		res, err := spread.Insert(ctx, Access{Hour: hour, Sequence: rk, Resource: fmt.Sprint("door", i%3)})
		if err != nil {
			return err
		}
		parts[res.Partition]++
		if moved == "" && keys.Bucket(rk, 8) != keys.Bucket(rk, 4) {
			moved = rk
		}
	}
	t.say("12 accesses of the hour 18:00 spread by a hash of the RowKey over %d partitions (%s ... %s), not one",
		len(parts), spread.Partitions(hour)[0], spread.Partitions(hour)[3])
	var first []string
	for e, err := range spread.Range(ctx, hour, "", "", nil) {
		if err != nil {
			return err
		}
		if len(first) < 4 {
			first = append(first, e.RowKey)
		}
	}
	t.say("Range: 4 range queries in parallel, merged by RowKey as one partition returns them: %s, ...", strings.Join(first, ", "))
	wider, err := buckets.New(tbl, &buckets.Options{Buckets: 8, Earlier: []int{4}})
	if err != nil {
		return err
	}
	n := 0
	for _, err := range wider.Range(ctx, hour, "", "", nil) {
		if err != nil {
			return err
		}
		n++
	}
	if moved == "" {
		return fmt.Errorf("no access changed buckets from 4 to 8")
	}
	got, err := wider.Get(ctx, hour, moved)
	if err != nil {
		return err
	}
	t.say("grown to 8 buckets with Earlier: [4]: Range still sees all %d; Get(%s) misses in its bucket under 8, %s,", n, moved, wider.Partitions(hour)[keys.Bucket(moved, 8)[0]-'0'])
	t.say("and finds it in its bucket under 4, %s: 2 point reads, and nothing was moved", got.Partition)
	return nil
}
