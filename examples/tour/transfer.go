package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/rotation"
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

// backupPhotos backs up a table of large entities with the photos its
// rows point at, and restores it with two workers sharing the import
// through a queue (as two machines would), then reads a photo back from
// the restore, checked against its SHA-256.
func (t *tour) backupPhotos(ctx context.Context) error {
	type Employee struct {
		Department string `table:",pk"`
		ID         string `table:",rk"`
		Name       string
		Photo      []byte `largeentity:"offload"`
	}
	staffName, restoredName := t.name+"staff", t.name+"staffrestored"
	var photos [2]*container.Client
	for i, name := range []string{staffName, restoredName} {
		if err := table.CreateTable(ctx, t.svc, name); err != nil {
			return err
		}
		defer table.DeleteTable(context.WithoutCancel(ctx), t.svc, name) //nolint:errcheck // cleanup
		c, _, drop, err := t.container(ctx, name+"photos")
		if err != nil {
			return err
		}
		defer drop()
		photos[i] = c
	}
	backups, _, drop, err := t.container(ctx, t.name+"photobackups")
	if err != nil {
		return err
	}
	defer drop()
	store := func(tableName string, c *container.Client) (*largeentity.Store[Employee], error) {
		tbl, err := table.New[table.Dynamic](table.NewClient(t.svc, tableName), nil)
		if err != nil {
			return nil, err
		}
		return largeentity.New[Employee](tbl, c, nil)
	}
	staff, err := store(staffName, photos[0])
	if err != nil {
		return err
	}
	for i := range 6 {
		e := Employee{Department: []string{"Sales", "HR"}[i%2], ID: keys.Pad(uint64(220+i), 6), Name: fmt.Sprint("employee ", i),
			Photo: bytes.Repeat([]byte{byte(i)}, 100_000)}
		if _, err := staff.Insert(ctx, e); err != nil {
			return err
		}
	}
	src := table.NewClient(t.svc, staffName)
	sum, err := transfer.Export(ctx, src, backups, "staff", &transfer.Options{Blobs: &transfer.Blobs{Container: photos[0]}, Ranges: 2})
	if err != nil {
		return err
	}
	t.say("exported %d employees and their %d photos (%d KB), each photo read under largeentity's pointer rules, checked, and stored once by its SHA-256", sum.Entities, sum.Blobs, sum.BlobBytes>>10)

	qc, poison, dropQueues, err := t.queues(ctx)
	if err != nil {
		return err
	}
	defer dropQueues()
	q, err := eventual.New(qc, poison, nil)
	if err != nil {
		return err
	}
	dst := table.NewClient(t.svc, restoredName)
	to := &transfer.Options{TargetBlobs: &transfer.Blobs{Container: photos[1]}}
	if _, err := transfer.DistributeImport(ctx, backups, "staff", dst, q, to); err != nil {
		return err
	}
	var workers []*eventual.Worker
	for range 2 { // two machines, here two workers of one process
		w, err := eventual.NewWorker(q, []eventual.Handler{transfer.ImportHandler(backups, "staff", dst, to)}, nil)
		if err != nil {
			return err
		}
		workers = append(workers, w)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, len(workers))
	for _, w := range workers {
		go func() { ran <- w.Run(runCtx) }()
	}
	err = workers[0].Drain(ctx)
	stop()
	for range workers {
		if rerr := <-ran; err == nil && !errors.Is(rerr, context.Canceled) {
			err = rerr
		}
	}
	if err != nil {
		return err
	}
	to.Resume = true
	if sum, err = transfer.Import(ctx, backups, "staff", dst, to); err != nil {
		return err
	}
	t.say("two workers shared the import through a queue of the export's ranges; Import with Resume after them found %d chunks left, %d rejects", sum.Chunks, sum.Rejected)
	restored, err := store(restoredName, photos[1])
	if err != nil {
		return err
	}
	e, err := restored.Get(ctx, "HR", keys.Pad(221, 6), nil)
	if err != nil {
		return err
	}
	t.say("the restored employee %s reads back with its %d KB photo from %s (its pointer renamed for the new table's Store, its SHA-256 checked)", e.Value.Name, len(e.Value.Photo)>>10, e.Blobs[0].Name)
	return nil
}

// backupSet exports the days of a rotation (a table per day) as one set
// and restores them under other names: the days of another rotation,
// which reads them as its own.
func (t *tour) backupSet(ctx context.Context) error {
	type Login struct {
		User string `table:",pk"`
		At   string `table:",rk"`
	}
	now := time.Date(2024, 8, 2, 12, 0, 0, 0, time.UTC)
	opts := &rotation.Options{Period: rotation.Day, Grace: 72 * time.Hour, Now: func() time.Time { return now }}
	prefix, archive := t.name+"signins", t.name+"archived"
	logins, err := rotation.New[Login](t.svc, prefix, opts)
	if err != nil {
		return err
	}
	restored, err := rotation.New[Login](t.svc, archive, opts)
	if err != nil {
		return err
	}
	defer func() { // the tour's cleanup: both rotations' tables
		for _, r := range []*rotation.Tables[Login]{logins, restored} {
			_, _ = r.Sweep(context.WithoutCancel(ctx), &rotation.SweepOptions{Before: now.AddDate(0, 0, 1)})
		}
	}()
	for d := range 3 {
		at := time.Date(2024, 7, 31+d, 9, 0, 0, 0, time.UTC)
		if _, err := logins.Insert(ctx, at, Login{User: "jones", At: at.Format(time.RFC3339)}); err != nil {
			return err
		}
	}
	periods, err := logins.Periods(ctx)
	if err != nil {
		return err
	}
	var days []string
	for _, p := range periods {
		days = append(days, p.Name)
	}
	backups, _, drop, err := t.container(ctx, t.name+"setbackups")
	if err != nil {
		return err
	}
	defer drop()
	sums, err := transfer.ExportTables(ctx, t.svc, days, backups, "signins/2024-08-02", nil)
	if err != nil {
		return err
	}
	t.say("ExportTables: the %d days of the rotation as one set: a list (tables.json) written first, then each day's table exported to <prefix>/<table>, resumable table by table", len(sums))
	rename := func(name string) string { return archive + strings.TrimPrefix(name, prefix) }
	if _, err := transfer.ImportTables(ctx, backups, "signins/2024-08-02", t.svc, &transfer.Options{Rename: rename}); err != nil {
		return err
	}
	n := 0
	for _, err := range restored.Range(ctx, time.Date(2024, 7, 31, 0, 0, 0, 0, time.UTC), now, nil) {
		if err != nil {
			return err
		}
		n++
	}
	if n != 3 {
		return fmt.Errorf("the restored rotation holds %d logins, want 3", n)
	}
	t.say("ImportTables checked the list and every table's manifest, then restored each day under the name Rename gave it (...%s -> ...%s):", days[0][len(t.name):], rename(days[0])[len(t.name):])
	t.say("the days of the rotation %q, whose Range reads the %d logins back as its own", "..."+archive[len(t.name):], n)
	return nil
}
