package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

// cosmos shows the service profile: the same code on the Cosmos DB Table
// API follows that service's limits and order, checked before the network.
func (t *tour) cosmos(ctx context.Context) error {
	for _, u := range []string{"https://contoso.table.core.windows.net/", "https://contoso.table.cosmos.azure.com/"} {
		p := table.ProfileFor(u)
		t.say("%s -> %s: key order %v, transactions of %d ops and %d bytes", u, p.Name, p.Sorted, p.MaxBatchOps, p.MaxBatchSize)
	}
	t.say("this table's endpoint gives %s; a table with Cosmos DB's profile (Options.Profile, as for an account behind a proxy):", t.employees.Profile().Name)
	cosmos, err := table.New(t.employees.Client(), &table.Options[Employee]{Profile: table.Cosmos})
	if err != nil {
		return err
	}
	_, err = table.Collect(cosmos.Query(ctx, &table.Query{Filter: table.Gt("Timestamp", time.Now().Add(-time.Hour))}))
	t.say("a filter on Timestamp (Cosmos DB would match nothing, silently): %v", err)
	if !errors.Is(err, table.ErrUnsupported) {
		return fmt.Errorf("want ErrUnsupported, got %v", err)
	}
	dyn, err := table.New(t.employees.Client(), &table.Options[table.Dynamic]{Profile: table.Cosmos})
	if err != nil {
		return err
	}
	var ops []table.Op
	for i := range 40 {
		ops = append(ops, dyn.InsertOp(table.Dynamic{PartitionKey: "Badges", RowKey: fmt.Sprintf("%03d", i), Properties: map[string]any{"Scan": make([]byte, 60<<10)}}))
	}
	_, err = dyn.Submit(ctx, table.Atomic(ops...), nil)
	t.say("one transaction of 40 badge scans of 60 KiB (about 3.3 MB once encoded): %v", err)
	if !errors.Is(err, table.ErrTooLarge) {
		return fmt.Errorf("want ErrTooLarge, got %v", err)
	}
	t.say("refused before anything was sent; Table Storage takes it (4 MiB). Ordered reads (Range, Find, Latest, ordered FanOut)")
	t.say("sort client-side there: see the capability matrix in docs/cosmos.md")

	// What tablekit knows of a client: those it builds carry their name,
	// endpoint and profile; one built with aztables directly follows
	// Portable until described.
	raw, err := aztables.NewServiceClientFromConnectionString(t.connStr, nil)
	if err != nil {
		return err
	}
	unknown, err := table.New[table.Dynamic](raw.NewClient(t.name), nil)
	if err != nil {
		return err
	}
	t.say("a client built with aztables itself: tablekit cannot read its endpoint, so it follows %s (name %q);", unknown.Profile().Name, unknown.Name())
	endpoint, _, err := table.ParseConnectionString(t.connStr)
	if err != nil {
		return err
	}
	described, err := table.New[table.Dynamic](table.Describe(raw.NewClient(t.name), t.name, table.ProfileFor(endpoint)), nil)
	if err != nil {
		return err
	}
	t.say("table.Describe gives it its name and profile: %q, %s; table.NewClient(svc, name) needs no description", described.Name(), described.Profile().Name)
	if unknown.Profile() != table.Portable || described.Name() != t.name {
		return fmt.Errorf("an unknown client follows %s, a described one is named %q", unknown.Profile().Name, described.Name())
	}
	return nil
}
