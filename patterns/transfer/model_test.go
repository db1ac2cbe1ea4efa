package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// TestModelTransfer changes a table of rows of every EDM type, reserved
// rows and large entities with photos at random, then backs it up and
// restores it into a fresh table and container with crashes injected at
// random step boundaries (each run resumed until it completes): the
// restore must hold exactly what the model says the table holds, every
// photo reading back through the restored table's Store, and Verify must
// find no difference. Small N in make test, large in make soak.
func TestModelTransfer(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src := r.Table()
	raw := reserved.Table(testrig.NewTable[table.Dynamic](t, src))
	photos := r.Container()
	staff := store(t, src, photos)
	backups := r.Container()
	model := map[transfer.Key]table.Dynamic{} // rows written with raw
	people := map[transfer.Key][]byte{}       // employees and their photos
	modelcheck.Run(t, 2, 25, func(t *testing.T, rnd *rand.Rand, step int) {
		for range 1 + rnd.IntN(30) {
			switch i := rnd.IntN(200); rnd.IntN(5) {
			case 0: // delete a row
				for k := range model {
					if err := raw.Delete(ctx, k.PartitionKey, k.RowKey, "*"); err != nil {
						t.Fatal(err)
					}
					delete(model, k)
					break
				}
			case 1: // an employee, with a photo or without
				e := employee{Department: fmt.Sprintf("d%d", i%4), ID: fmt.Sprintf("e%03d", i), Name: fmt.Sprint("employee ", i)}
				if rnd.IntN(3) > 0 {
					e.Photo = bytes.Repeat([]byte{byte(rnd.IntN(256))}, 1+rnd.IntN(70_000))
				}
				if _, err := staff.Upsert(ctx, e); err != nil {
					t.Fatal(err)
				}
				people[transfer.Key{PartitionKey: e.Department, RowKey: e.ID}] = e.Photo
			default: // a row of every type, or a reserved row
				d := entity(i)
				d.Properties["Step"] = int64(step)
				if rnd.IntN(10) == 0 {
					d = table.Dynamic{PartitionKey: d.PartitionKey, RowKey: reserved.Prefix + fmt.Sprint("commit!", i), Properties: map[string]any{"TkState": "pending"}}
				}
				if _, err := raw.Upsert(ctx, d, table.Replace); err != nil {
					t.Fatal(err)
				}
				model[transfer.Key{PartitionKey: d.PartitionKey, RowKey: d.RowKey}] = d
			}
		}
		prefix := fmt.Sprint("model/", step)
		var crashes testrig.Crashes
		crashes.Random(0.05, rnd.Float64)
		o := &transfer.Options{Blobs: &transfer.Blobs{Container: photos}, Ranges: 1 + rnd.IntN(4), ChunkBytes: 1 << (10 + rnd.IntN(8))}
		transfer.SetHook(o, crashes.Hook)
		resumed(t, "export", func() error { _, err := transfer.Export(ctx, src, backups, prefix, o); return err }, o)

		dst, dstPhotos := r.Table(), r.Container()
		to := &transfer.Blobs{Container: dstPhotos}
		io := &transfer.Options{TargetBlobs: to, Concurrency: 1 + rnd.IntN(4)}
		transfer.SetHook(io, crashes.Hook)
		resumed(t, "import", func() error { _, err := transfer.Import(ctx, backups, prefix, dst, io); return err }, io)
		t.Logf("step %d: %d rows, %d employees; crashes injected %v", step, len(model), len(people), crashes.Injected())

		// The restore holds the model's rows, exactly.
		got := reserved.Table(testrig.NewTable[table.Dynamic](t, dst))
		for k, want := range model {
			e, err := got.Get(ctx, k.PartitionKey, k.RowKey, nil)
			if err != nil {
				t.Fatalf("step %d: row %v: %v", step, k, err)
			}
			if fmt.Sprint(e.Value.Properties) != fmt.Sprint(want.Properties) {
				t.Fatalf("step %d: row %v restored as %v, want %v", step, k, e.Value.Properties, want.Properties)
			}
		}
		restored := store(t, dst, dstPhotos)
		for k, photo := range people {
			e, err := restored.Get(ctx, k.PartitionKey, k.RowKey, nil)
			if err != nil || !bytes.Equal(e.Value.Photo, photo) {
				t.Fatalf("step %d: employee %v: %v (photo %d bytes, want %d)", step, k, err, len(e.Value.Photo), len(photo))
			}
		}
		sum, err := transfer.Verify(ctx, src, dst, &transfer.Options{Blobs: &transfer.Blobs{Container: photos}, TargetBlobs: to})
		if err != nil {
			t.Fatalf("step %d: verify: %v (missing %v, extra %v, changed %v)", step, err, sum.Missing, sum.Extra, sum.Changed)
		}
		if sum.Entities != int64(len(model)+len(people)) {
			t.Fatalf("step %d: verify compared %d entities, the model has %d", step, sum.Entities, len(model)+len(people))
		}
	})
}

// resumed runs fn until it completes, with o.Resume from the second run;
// each failure must be an injected crash. A hundred crashes in a row is a
// failure of the test (a run that never completes).
func resumed(t *testing.T, what string, fn func() error, o *transfer.Options) {
	t.Helper()
	o.Resume = false
	for try := 0; ; try++ {
		err := fn()
		if err == nil {
			return
		}
		if !errors.Is(err, testrig.ErrCrash) || try == 100 {
			t.Fatalf("%s: %v", what, err)
		}
		o.Resume = true
	}
}

