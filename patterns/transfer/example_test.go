package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit/patterns/rotation"
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

// Back up a rotation's periods as one set, and restore them as the
// periods of another rotation.
func ExampleExportTables() {
	ctx := context.Background()
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	svc, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}
	blobs, err := azblob.NewClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}
	id := time.Now().UnixNano() % 1e9
	name := fmt.Sprintf("backups%d", id)
	if _, err := blobs.CreateContainer(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = blobs.DeleteContainer(ctx, name, nil) }()
	backups := blobs.ServiceClient().NewContainerClient(name)

	type Login struct {
		User string `table:",pk"`
		At   string `table:",rk"`
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	opts := &rotation.Options{Period: rotation.Month, Grace: 90 * 24 * time.Hour, Now: func() time.Time { return now }}
	logins, err := rotation.New[Login](svc, fmt.Sprintf("logins%dx", id), opts)
	if err != nil {
		log.Fatal(err)
	}
	restored, err := rotation.New[Login](svc, fmt.Sprintf("restored%dx", id), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { // delete both rotations' tables
		for _, r := range []*rotation.Tables[Login]{logins, restored} {
			_, _ = r.Sweep(ctx, &rotation.SweepOptions{Before: now.AddDate(1, 0, 0)})
		}
	}()
	for _, at := range []time.Time{now.AddDate(0, -1, 0), now} {
		if err := logins.Prepare(ctx, at); err != nil {
			log.Fatal(err)
		}
		if _, err := logins.Insert(ctx, at, Login{User: "ada", At: at.Format(time.DateOnly)}); err != nil {
			log.Fatal(err)
		}
	}

	// The set: every period of the rotation.
	periods, err := logins.Periods(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var tables []string
	for _, p := range periods {
		tables = append(tables, p.Name)
	}
	if _, err := transfer.ExportTables(ctx, svc, tables, backups, "logins/2026-11-29", nil); err != nil {
		log.Fatal(err)
	}
	// Restored as the periods of the rotation "restored...".
	rename := &transfer.Options{Rename: func(name string) string { return "restored" + strings.TrimPrefix(name, "logins") }}
	sums, err := transfer.ImportTables(ctx, backups, "logins/2026-11-29", svc, rename)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(sums), "tables restored")
	for e, err := range restored.Range(ctx, now.AddDate(-1, 0, 0), now.AddDate(0, 1, 0), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Value.User, e.Value.At)
	}
	// Output:
	// 2 tables restored
	// ada 2026-10-29
	// ada 2026-11-29
}
