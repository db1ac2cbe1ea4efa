package table_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestModelWriteOutcomes runs random writes (every kind, single and in
// Submit) on a few entities while responses are lost and requests dropped
// at random, and checks after every step that each reported outcome
// matches what is stored: applied means stored, not applied means
// unchanged, unknown means either. 80 steps in make test, 20,000 in make
// soak.
func TestModelWriteOutcomes(t *testing.T) {
	t.Parallel()
	f := newOutcomeFixture(t)
	ctx := context.Background()
	model := map[string]int64{} // RowKey -> N of the stored entity
	stale := map[string]azcore.ETag{}
	var counts struct{ applied, verified, notApplied, unknown int }
	modelcheck.Run(t, 80, 20000, func(t *testing.T, r *rand.Rand, step int) {
		rk := fmt.Sprintf("r%d", r.IntN(4))
		n := int64(step + 1)
		cur, exists := f.stored(t, rk)
		etag := cur.ETag
		if !exists || r.IntN(5) == 0 {
			etag = stale[rk] // a stale (or missing) ETag now and then
		}
		if etag == "" {
			etag = `W/"datetime'2000-01-01T00%3A00%3A00Z'"`
		}
		if exists {
			stale[rk] = cur.ETag
		}
		cur.N = n
		mode := []table.Mode{table.Merge, table.Replace}[r.IntN(2)]
		switch r.IntN(3) {
		case 1:
			f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
		case 2:
			f.ft.Inject(faults.Fault{Match: writes, Err: faults.ErrLost})
		}
		// post is the state the write leaves when applied (-1: absent).
		var post int64
		var err error
		var res table.Result
		e := counter{PartitionKey: "p", RowKey: rk, N: n}
		if exists {
			e = cur
		}
		kind := r.IntN(7)
		switch kind {
		case 0:
			res, err = f.tb.Insert(ctx, counter{PartitionKey: "p", RowKey: rk, N: n})
			post = n
		case 1:
			res, err = f.tb.Upsert(ctx, counter{PartitionKey: "p", RowKey: rk, N: n}, mode)
			post = n
		case 2:
			res, err = f.tb.Update(ctx, e, etag, mode)
			post = n
		case 3:
			res, err = f.tb.Update(ctx, e, azcore.ETagAny, mode)
			post = n
		case 4:
			err = f.tb.Delete(ctx, "p", rk, etag)
			post = -1
		case 5:
			err = f.tb.Delete(ctx, "p", rk, azcore.ETagAny)
			post = -1
		case 6:
			// One op in an atomic group with an upsert of another entity.
			other := fmt.Sprintf("s%d", r.IntN(2))
			var br table.BatchResult
			br, err = f.tb.Submit(ctx, table.Atomic(
				f.tb.UpdateOp(e, etag, mode),
				f.tb.UpsertOp(counter{PartitionKey: "p", RowKey: other, N: n}, table.Replace)), nil)
			post = n
			if err == nil || br.Ops[0].Applied {
				model[other] = n
			}
			if errors.Is(err, table.ErrOutcomeUnknown) {
				got, _ := f.stored(t, other)
				model[other] = got.N
			}
		}
		f.ft.Reset()
		pre, had := model[rk]
		if !had {
			pre = -1
		}
		truth := int64(-1)
		got, ok := f.stored(t, rk)
		if ok {
			truth = got.N
		}
		switch {
		case err == nil:
			counts.applied++
			if res.Verified {
				counts.verified++
			}
			if truth != post {
				t.Fatalf("step %d: write %d reported applied, stored %d, want %d", step, kind, truth, post)
			}
			if res.ETag != "" && res.ETag != got.ETag {
				t.Fatalf("step %d: write %d reported ETag %s, stored %s", step, kind, res.ETag, got.ETag)
			}
		case errors.Is(err, table.ErrOutcomeUnknown):
			counts.unknown++
			if truth != pre && truth != post {
				t.Fatalf("step %d: write %d of unknown outcome, stored %d, neither %d nor %d", step, kind, truth, pre, post)
			}
		default:
			counts.notApplied++
			if truth != pre {
				t.Fatalf("step %d: write %d reported not applied (%v), stored %d, was %d", step, kind, err, truth, pre)
			}
		}
		if truth < 0 {
			delete(model, rk)
		} else {
			model[rk] = truth
		}
	})
	t.Logf("outcomes: %+v", counts)
}
