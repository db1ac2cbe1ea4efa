package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/transfer"
	"github.com/tablekit/tablekit/retry"
)

// Back up a table to blobs, restore it into another table, and check the
// restore is equal.
func Example() {
	ctx := context.Background()
	orders, cleanup, err := tabletest.ScratchTable(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	restored, cleanup2, err := tabletest.ScratchTable(ctx, "restored")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup2()
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	bo := &azblob.ClientOptions{}
	retry.Default.ApplyTo(&bo.ClientOptions)
	blobs, err := azblob.NewClientFromConnectionString(cs, bo)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("backups%d", time.Now().UnixNano())
	if _, err := blobs.CreateContainer(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = blobs.DeleteContainer(ctx, name, nil) }()
	backups := blobs.ServiceClient().NewContainerClient(name)

	tbl, err := table.New[table.Dynamic](orders, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		_, err := tbl.Insert(ctx, table.Dynamic{PartitionKey: "2026-11", RowKey: fmt.Sprint(i),
			Properties: map[string]any{"Total": int64(i) * 1_000_000_000_000, "Paid": i%2 == 0}})
		if err != nil {
			log.Fatal(err)
		}
	}

	exported, err := transfer.Export(ctx, orders, backups, "orders/2026-11-29", nil)
	if err != nil {
		log.Fatal(err)
	}
	imported, err := transfer.Import(ctx, backups, "orders/2026-11-29", restored, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = transfer.VerifyExport(ctx, backups, "orders/2026-11-29", restored, nil)
	fmt.Println(exported.Entities, "exported,", imported.Entities, "imported, equal:", err == nil)
	// Output: 3 exported, 3 imported, equal: true
}

// Copy a table into the Cosmos DB Table API, reporting what it cannot
// hold.
func ExampleCopy() {
	ctx := context.Background()
	var storage, cosmos = exampleClients()
	sum, err := transfer.Copy(ctx, storage, cosmos, &transfer.Options{Ranges: 8})
	if errors.Is(err, transfer.ErrRejected) {
		for _, r := range sum.Rejects {
			fmt.Printf("not copied: %q %q: %s\n", r.PartitionKey, r.RowKey, r.Reason)
		}
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum.Entities, "copied")
}

// exampleClients stands for the application's clients of the two tables
// (table.NewClient over table.NewServiceClientFromConnectionString, or
// table.NewServiceClient with an azidentity credential).
func exampleClients() (storage, cosmos *aztables.Client) { return nil, nil }
