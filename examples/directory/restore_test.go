package main

import (
	"context"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/transfer"
)

// TestRestore backs the directory up (its two tables, and the photos its
// employees' rows point at) with patterns/transfer, restores it into new
// tables and a new container, and opens a directory over the restore:
// every employee reads back with its photo (largeentity checks each
// photo's SHA-256), its change log and its office, and Check finds no
// drift in any index.
func TestRestore(t *testing.T) {
	r := newDirRig(t, true)
	ctx := context.Background()
	ids := []string{"000223", "000224", "000225", "000226"}
	for _, id := range ids {
		if err := hire(ctx, r.d, employee(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.d.Rename(ctx, "Sales", "000223", "Jo", "Smith"); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Move(ctx, "Sales", "000224", "HR"); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Fire(ctx, "Sales", "000225"); err != nil {
		t.Fatal(err)
	}
	if err := r.drain(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, id := range ids {
		s, err := r.state(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = s
	}

	backups := r.Container()
	people := &transfer.Blobs{Container: r.c.Photos}
	if sum, err := transfer.Export(ctx, r.c.People, backups, "people", &transfer.Options{Blobs: people}); err != nil || sum.Blobs != 3 {
		t.Fatalf("export of the people: %v, %d photos", err, sum.Blobs)
	}
	if _, err := transfer.Export(ctx, r.c.Offices, backups, "offices", nil); err != nil {
		t.Fatal(err)
	}

	restored := Clients{People: r.Table(), Offices: r.Table(), Queue: r.Queue(), Poison: r.CleanQueue(), Photos: r.Container()}
	photos := &transfer.Blobs{Container: restored.Photos}
	if sum, err := transfer.Import(ctx, backups, "people", restored.People, &transfer.Options{TargetBlobs: photos}); err != nil || sum.Blobs != 3 {
		t.Fatalf("import of the people: %v, %d photos", err, sum.Blobs)
	}
	if _, err := transfer.Import(ctx, backups, "offices", restored.Offices, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Verify(ctx, r.c.People, restored.People, &transfer.Options{Blobs: people, TargetBlobs: photos}); err != nil {
		t.Fatal(err)
	}
	d, err := open(restored, 8*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	again := &dirRig{Rig: r.Rig, c: restored, d: d}
	for _, id := range ids {
		got, err := again.state(ctx, id)
		if err != nil {
			t.Fatalf("restored employee %s: %v", id, err)
		}
		if got != want[id] {
			t.Errorf("restored employee %s:\n got %s\nwant %s", id, got, want[id])
		}
		t.Log(got)
	}
}
