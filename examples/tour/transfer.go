package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// backup exports the company's table to blobs, restores it into a new
// table, verifies the restore against the export, and copies the table
// into one held to Cosmos DB's limits, where an entity it cannot hold is
// reported, not sent.
func (t *tour) backup(ctx context.Context) error {
	backups, _, drop, err := t.container(ctx, t.name+"backups")
	if err != nil {
		return err
	}
	defer drop()
	src := table.NewClient(t.svc, t.name)
	sum, err := transfer.Export(ctx, src, backups, "company/2026-11-29", &transfer.Options{Ranges: 4})
	if err != nil {
		return err
	}
	t.say("exported %d entities (%d KB of EDM-typed JSON lines) in %d gzip chunks, each with its SHA-256 in the manifest", sum.Entities, sum.Bytes>>10, sum.Chunks)

	restored := t.name + "restored"
	if err := table.CreateTable(ctx, t.svc, restored); err != nil {
		return err
	}
	defer func() { _ = table.DeleteTable(context.WithoutCancel(ctx), t.svc, restored) }()
	dst := table.NewClient(t.svc, restored)
	sum, err = transfer.Import(ctx, backups, "company/2026-11-29", dst, nil)
	if err != nil {
		return err
	}
	t.say("restored them into %s in %d transactions (each chunk's checksum checked before anything from it is written)", restored, sum.Transactions)
	sum, err = transfer.VerifyExport(ctx, backups, "company/2026-11-29", dst, nil)
	if err != nil {
		return err
	}
	t.say("verified the restore against the export: %d entities, %d differences", sum.Entities, sum.Differences)

	// A row Table Storage holds and Cosmos DB cannot: a 300-byte RowKey.
	planted, err := table.New[table.Dynamic](src, nil)
	if err != nil {
		return err
	}
	if _, err := planted.Insert(ctx, table.Dynamic{PartitionKey: "Imports", RowKey: strings.Repeat("k", 300)}); err != nil {
		return err
	}
	cosmosName := t.name + "cosmos"
	if err := table.CreateTable(ctx, t.svc, cosmosName); err != nil {
		return err
	}
	defer func() { _ = table.DeleteTable(context.WithoutCancel(ctx), t.svc, cosmosName) }()
	cosmos := table.Describe(table.NewClient(t.svc, cosmosName), cosmosName, table.Cosmos)
	sum, err = transfer.Copy(ctx, src, cosmos, nil)
	if len(sum.Rejects) != 1 || !errors.Is(err, transfer.ErrRejected) {
		return fmt.Errorf("copy into the Cosmos DB profile: %d rejects (want 1), %v", len(sum.Rejects), err)
	}
	r := sum.Rejects[0]
	t.say("copied %d entities into a table held to Cosmos DB's limits; rejected, with its keys, never sent: (%s, %.12s...): %s", sum.Entities, r.PartitionKey, r.RowKey, r.Reason)
	return nil
}
