package testrig_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestCrashes(t *testing.T) {
	var c testrig.Crashes
	if err := c.Hook("commit"); err != nil {
		t.Fatalf("the zero Crashes crashed: %v", err)
	}
	c.At("commit", 2)
	if err := c.Hook("commit"); err != nil {
		t.Fatalf("first pass after At(2) = %v", err)
	}
	if err := c.Hook("commit"); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("second pass after At(2) = %v, want ErrCrash", err)
	}
	if err := c.Hook("commit"); err != nil {
		t.Fatalf("third pass = %v: a crash point fires once", err)
	}
	c.Random(1, func() float64 { return 0.5 })
	if err := c.Hook("release"); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("Random(1) = %v", err)
	}
	c.Random(0, nil)
	if err := c.Hook("release"); err != nil {
		t.Fatalf("after Random(0) = %v", err)
	}
	if got := c.Injected(); got["commit"] != 1 || got["release"] != 1 || c.Passes("commit") != 4 {
		t.Fatalf("Injected = %v, Passes(commit) = %d", got, c.Passes("commit"))
	}
}

func TestMain(m *testing.M) { tabletest.Main(m) }

// Under the Cosmos DB simulation the rig's queues and blobs still reach
// the emulator as they are (a Cosmos DB account has none: they are a
// Storage account's beside it), and a listing of tables comes whole, in
// no name order.
func TestCosmosRigQueuesBlobsTables(t *testing.T) {
	t.Parallel()
	r := testrig.NewCosmos(t)
	ctx := context.Background()
	q := r.Queue()
	if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
		t.Fatalf("enqueue through the simulated rig: %v", err)
	}
	got, err := q.DequeueMessage(ctx, nil)
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].MessageText != "m" {
		t.Fatalf("dequeue: %+v, %v", got, err)
	}
	c := r.Container()
	if _, err := c.NewBlockBlobClient("b").UploadBuffer(ctx, []byte("x"), nil); err != nil {
		t.Fatalf("upload through the simulated rig: %v", err)
	}
	var want []string
	for range 3 {
		tb := testrig.NewTable[table.Dynamic](t, r.Table())
		want = append(want, tb.Name())
	}
	var listed []string
	for name, err := range table.ListTables(ctx, r.Service(t), "tk") {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, name)
	}
	for _, name := range want {
		if !slices.Contains(listed, name) {
			t.Fatalf("ListTables = %v, missing %s", listed, name)
		}
	}
	if !slices.IsSorted(listed) {
		t.Fatalf("ListTables = %v: not in name order", listed)
	}
}
