package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// indexEntity finds all employees named Jones in one department through an
// index entity kept in the department's partition, in the same transaction
// as each employee (the guide's option 2, strongly consistent).
func (t *tour) indexEntity(ctx context.Context) error {
	byName, err := indexentity.New(t.employees, "LastName", func(e *Employee) string { return e.LastName }, nil)
	if err != nil {
		return err
	}
	// Six support staff, added by three writers at once: each add reads the
	// index entity and writes employee and index entity in one transaction
	// If-Match, again when another writer came first.
	staff := []Employee{
		{FirstName: "Ada", LastName: "Jones"}, {FirstName: "Bo", LastName: "Smith"}, {FirstName: "Cal", LastName: "Jones"},
		{FirstName: "Dee", LastName: "Jones"}, {FirstName: "Eve", LastName: "Brown"}, {FirstName: "Fay", LastName: "Jones"},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts, failed := 0, error(nil)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(staff); i += 3 {
				e := staff[i]
				e.Department, e.ID = "Support", keys.Pad(uint64(500+i), 6)
				res, err := byName.Insert(ctx, e)
				mu.Lock()
				conflicts += res.Conflicts
				if err != nil && failed == nil {
					failed = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	t.say("6 employees added to Support by 3 concurrent writers: each add 2 round trips (index read + one")
	t.say("transaction If-Match); conflicts on the index entity (412 or 409), each read and tried again: %d", conflicts)

	joneses, err := table.Collect(byName.Find(ctx, "Support", "Jones"))
	if err != nil {
		return err
	}
	names := make([]string, len(joneses))
	for i, e := range joneses {
		names[i] = e.RowKey + " " + e.Value.FirstName
	}
	t.say("all employees named Jones: index entity %s (1 point read), then %d point reads:", keys.Join(indexentity.KeyPrefix, "LastName", "Jones"), len(joneses))
	t.say("-> %s", strings.Join(names, ", "))
	if len(joneses) != 4 {
		return fmt.Errorf("found %d Joneses, want 4", len(joneses))
	}

	cal := joneses[1]
	cal.Value.LastName = "Smith"
	if _, err := byName.Update(ctx, cal.Value, cal.ETag); err != nil {
		return err
	}
	jones, _ := byName.FindIDs(ctx, "Support", "Jones")
	smiths, _ := byName.FindIDs(ctx, "Support", "Smith")
	t.say("Cal renamed Jones -> Smith: one transaction over three entities (Cal, the Jones and the Smith index")
	t.say("entities), each with its ETag; now %d Joneses, %d Smiths", len(jones), len(smiths))

	all, err := table.Collect(t.employees.Query(ctx, &table.Query{Filter: table.PartitionKey("Support")}))
	if err != nil {
		return err
	}
	t.say("a query of Support returns %d employees: the index entities are reserved rows (RowKey %q...)", len(all), reserved.Prefix)
	t.say("other stores: Options.Table (another partition or table) or Options.Blobs (one blob per value, any size),")
	t.say("both kept eventually by a patterns/eventual worker and searchable across every department")
	return nil
}
