// Command tour walks through the Azure Table design guide's employee and
// department scenario, narrating each step and what it found. It runs against
// the account in AZURE_STORAGE_CONNECTION_STRING when that is set, and
// otherwise against a local Azurite emulator that it starts and stops itself.
//
//	make demo          # or: go run ./examples/tour
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tour failed:", err)
		_ = tabletest.StopShared()
		os.Exit(1)
	}
	if err := tabletest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the emulator:", err)
		os.Exit(1)
	}
}

// tour holds what the steps share.
type tour struct {
	connStr   string
	svc       *aztables.ServiceClient
	name      string // the tour's table
	employees *table.Table[Employee]
}

// step is one narrated part of the tour.
type step struct {
	title string
	run   func(t *tour, ctx context.Context) error
}

var steps = []step{
	{"Create a table for the company", (*tour).createTable},
	{"Store employees: PartitionKey = department, RowKey = zero-padded employee id", (*tour).storeEmployees},
	{"Point query: one department, one employee id", (*tour).pointQuery},
	{"Range query with projection: employees 000100-000199 of Sales, names only", (*tour).rangeQuery},
	{"Continuation tokens: page through a partition and resume from a saved cursor", (*tour).continuation},
	{"Merge or replace", (*tour).mergeOrReplace},
	{"Partial updates: Fields and Modify", (*tour).partialUpdates},
	{"Typed filters: literals typed by the struct field", (*tour).typedFilters},
	{"Optimistic concurrency: two writers, one ETag", (*tour).concurrency},
	{"A lost response: the write applied, the answer never arrived", (*tour).lostResponse},
	{"Bulk load: 1,000 entities in entity group transactions", (*tour).bulkLoad},
	{"Departments and engineers in one partition: entity types with versions, one query", (*tour).entityTypes},
	{"Secondary index: employees by email and by last name (guide patterns 1, 5, 6)", (*tour).secondaryIndex},
	{"Index entity: all employees named Jones, in one department (guide pattern 4)", (*tour).indexEntity},
	{"Log tail: a user's newest logins, newest first (guide pattern 7)", (*tour).logTail},
	{"Data series: hourly message counts in one entity (guide pattern 9)", (*tour).dataSeries},
	{"Wide entity: 365 daily counts in one logical entity of several rows (guide pattern 10)", (*tour).wideEntity},
	{"High-volume delete: a table per day of logins, dropped a day at a time (guide pattern 8)", (*tour).rotateLogins},
	{"Hot partition: an hour's accesses spread over bucket partitions, read back as one (guide pattern 12)", (*tour).spreadAccesses},
	{"Large entity: an employee's photo in a blob beside the entity (guide pattern 11)", (*tour).largeEntity},
	{"Blob log: an hour of request logs in time-named append blobs (guide pattern 13)", (*tour).blobLog},
	{"Eventually consistent transaction: archive an employee through a queue (guide pattern 3)", (*tour).eventualArchive},
	{"Combining patterns: an employee, its index copy and its change-log entry in one transaction", (*tour).compose},
	{"Observability: the trace of one insert with an organisation-wide index, from the write to the worker", (*tour).observability},
	{"Client-side encryption: an encrypted Email, found by its blind index", (*tour).encryptedEmail},
	{"Shared access signature: read-only, one partition", (*tour).sas},
	{"Cosmos DB Table API: the same code under its service profile", (*tour).cosmos},
	{"Back up, restore and move: export to blobs, import, verify, copy into Cosmos DB's limits", (*tour).backup},
	{"Back up large entities with their photos; restore with two workers sharing the import", (*tour).backupPhotos},
	{"Back up a set of tables: a rotation's days exported as one, restored as another rotation's", (*tour).backupSet},
	{"Bad input is stopped before the network", (*tour).validation},
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	where := "the account in AZURE_STORAGE_CONNECTION_STRING"
	if os.Getenv("AZURE_STORAGE_CONNECTION_STRING") == "" {
		where = "a local Azurite emulator (in memory, free loopback ports)"
	}
	fmt.Println("tablekit tour: the Azure Table design guide, pattern by pattern")
	fmt.Println("Starting against", where)
	cs, err := tabletest.ConnectionString()
	if err != nil {
		return err
	}
	svc, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		return err
	}
	t := &tour{connStr: cs, svc: svc, name: fmt.Sprintf("tour%d", time.Now().UnixNano())}
	defer t.cleanup()

	for i, s := range steps {
		fmt.Printf("\n%d. %s\n", i+1, s.title)
		if err := s.run(t, ctx); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.title, err)
		}
	}
	fmt.Println("\nTour complete.")
	return nil
}

func (t *tour) say(format string, args ...any) { fmt.Printf("   "+format+"\n", args...) }

func (t *tour) cleanup() {
	if t.employees == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := table.DeleteTable(ctx, t.svc, t.name); err != nil {
		fmt.Fprintln(os.Stderr, "deleting the tour's table:", err)
		return
	}
	fmt.Printf("Deleted table %s (one request, however many entities: the guide's high-volume delete).\n", t.name)
}

func (t *tour) createTable(ctx context.Context) error {
	if err := table.CreateTable(ctx, t.svc, t.name); err != nil {
		return err
	}
	employees, err := table.New[Employee](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	t.employees = employees
	t.say("created table %s (unique name: a deleted name cannot be reused for 40 s or more)", t.name)
	return nil
}
