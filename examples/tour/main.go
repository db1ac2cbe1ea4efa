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
	svc   *aztables.ServiceClient
	name  string // the tour's table
	table *aztables.Client
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
	{"Range query: employees 000100-000199 of Sales", (*tour).rangeQuery},
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	where := "the account in " + tabletest.ConnectionStringEnv
	if os.Getenv(tabletest.ConnectionStringEnv) == "" {
		where = "a local Azurite emulator (in memory, free loopback ports)"
	}
	fmt.Println("tablekit tour: the Azure Table design guide, pattern by pattern")
	fmt.Println("Starting against", where)
	cs, err := tabletest.ConnectionString()
	if err != nil {
		return err
	}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		return err
	}
	t := &tour{svc: svc, name: fmt.Sprintf("tour%d", time.Now().UnixNano())}
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
	if t.table == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := t.table.Delete(ctx, nil); err != nil {
		fmt.Fprintln(os.Stderr, "deleting the tour's table:", err)
		return
	}
	fmt.Printf("Deleted table %s.\n", t.name)
}

func (t *tour) createTable(ctx context.Context) error {
	if _, err := t.svc.CreateTable(ctx, t.name, nil); err != nil {
		return err
	}
	t.table = t.svc.NewClient(t.name)
	t.say("created table %s (unique name: a deleted name cannot be reused for 40 s or more)", t.name)
	return nil
}
