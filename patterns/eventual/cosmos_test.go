package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
		r := newRigOn(t, base, nil)
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
