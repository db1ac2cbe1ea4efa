package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCosmosCommitLimits: a Commit whose transaction would be 2.3 MB is
// written on Table Storage (4 MiB) and refused on Cosmos DB (2 MB) before
// anything is sent: no message reserved, no batch.
func TestCosmosCommitLimits(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, base *testrig.Rig) {
		// A window no loaded machine's 2.3 MB batch outlasts: the batch
		// must arrive within three quarters of it (2 s, the rig's
		// window, is not enough for 2.3 MB on a loaded 2-core machine).
		r := newRigOn(t, base, &eventual.Options{CommitWindow: time.Minute})
		ctx := context.Background()
		var ops []table.Op
		for i := range 70 {
			ops = append(ops, r.orders.InsertOp(order{Customer: "c1", ID: fmt.Sprint(i), Email: strings.Repeat("e", 32<<10)}))
		}
		r.Faults.Reset()
		_, err := r.q.Commit(ctx, r.orders.Client(), ops, indexKind.New(indexOrder{"c1", "0", "e"}))
		if r.Profile().Sorted {
			if err != nil {
				t.Fatalf("a 2.3 MB Commit on %s: %v", r.ServiceName(), err)
			}
			return
		}
		if !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), "Cosmos") || r.Faults.Count() != 0 {
			t.Fatalf("a 2.3 MB Commit on %s: %v after %d requests; want ErrInvalid naming Cosmos DB, nothing sent", r.ServiceName(), err, r.Faults.Count())
		}
	})
}

// TestProfileOption: Options.Profile holds Commit and Apply to a profile
// the endpoint does not tell (a Cosmos DB account behind a proxy or a
// custom domain): on Azurite, with the Cosmos DB profile, a 2.3 MB
// Commit and a 2.3 MB Apply are refused before anything is sent.
func TestProfileOption(t *testing.T) {
	t.Parallel()
	testrig.StorageOnly(t, "the endpoint is Azurite's, so Options.Profile is what makes it Cosmos DB")
	r := newRigOn(t, testrig.New(t), &eventual.Options{Profile: table.Cosmos, CommitWindow: time.Minute}) // a window the 330 KB writes below cannot outlast on a loaded machine
	ctx := context.Background()
	var ops []table.Op
	for i := range 70 {
		ops = append(ops, r.orders.InsertOp(order{Customer: "c1", ID: fmt.Sprint(i), Email: strings.Repeat("e", 32<<10)}))
	}
	r.Faults.Reset()
	if _, err := r.q.Commit(ctx, r.orders.Client(), ops, indexKind.New(indexOrder{"c1", "0", "e"})); !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), "Cosmos") {
		t.Fatalf("a 2.3 MB Commit under Options.Profile Cosmos: %v; want ErrInvalid naming Cosmos DB", err)
	}
	if _, err := r.q.Apply(ctx, r.orders.Client(), table.Change{By: "orders", Ops: ops}); !errors.Is(err, table.ErrTooLarge) || !strings.Contains(err.Error(), "Cosmos") {
		t.Fatalf("a 2.3 MB Apply under Options.Profile Cosmos: %v; want ErrTooLarge naming Cosmos DB", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	// Within the profile's limits, both write as usual.
	if _, err := r.q.Apply(ctx, r.orders.Client(), table.Change{By: "orders", Ops: ops[:10]}); err != nil {
		t.Fatalf("a 330 KB Apply: %v", err)
	}
	if _, err := r.q.Commit(ctx, r.orders.Client(), ops[10:20], indexKind.New(indexOrder{"c1", "10", "e"})); err != nil {
		t.Fatalf("a 330 KB Commit: %v", err)
	}
}
