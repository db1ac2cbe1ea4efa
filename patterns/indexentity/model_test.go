package indexentity_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

var modelNames = []string{"Jones", "Smith", "Brown"}

// state is an employee as stored: absent, or present with a last name.
type state struct {
	present bool
	last    string
	etag    azcore.ETag
}

// read returns employee id's stored state, through a clean client.
func read(t testing.TB, clean *table.Table[table.Dynamic], pk, id string) state {
	t.Helper()
	e, err := clean.Get(context.Background(), pk, id, nil)
	if errors.Is(err, table.ErrNotFound) {
		return state{}
	}
	if err != nil {
		t.Fatal(err)
	}
	last, _ := e.Value.Properties["LastName"].(string)
	return state{present: true, last: last, etag: e.ETag}
}

// op is one random write of a model test: it returns what the entity
// should be if the write applied, and the write's error.
type op func(ctx context.Context, before state) (after state, err error)

// randomOp draws an Insert, an Update (a rename or not; with azcore.ETagAny,
// the current ETag or a stale one) or a Delete of employee id.
func randomOp(rnd *rand.Rand, idx *indexentity.Index[Employee], pk, id string) (string, op) {
	last := modelNames[rnd.IntN(len(modelNames))]
	e := Employee{Department: pk, ID: id, FirstName: fmt.Sprint("F", rnd.IntN(100)), LastName: last}
	etagOf := func(before state) azcore.ETag {
		switch rnd.IntN(3) {
		case 0:
			return azcore.ETagAny
		case 1:
			if before.present {
				return before.etag
			}
		}
		return `W/"datetime'2000-01-01T00%3A00%3A00Z'"` // stale
	}
	switch rnd.IntN(4) {
	case 0:
		return "insert " + last, func(ctx context.Context, _ state) (state, error) {
			_, err := idx.Insert(ctx, e)
			return state{present: true, last: last}, err
		}
	case 1:
		return "delete", func(ctx context.Context, before state) (state, error) {
			return state{}, idx.Delete(ctx, pk, id, etagOf(before))
		}
	}
	return "update to " + last, func(ctx context.Context, before state) (state, error) {
		_, err := idx.Update(ctx, e, etagOf(before))
		return state{present: true, last: last}, err
	}
}

// settle checks a write's outcome against the stored entity: applied (no
// error) means it is what the write wrote; not applied (an error that is
// not ErrOutcomeUnknown) means it is unchanged, and the error names why;
// unknown allows either. It returns the outcome's name.
func settle(t testing.TB, step int, what string, before, want, now state, err error) string {
	t.Helper()
	same := func(a, b state) bool { return a.present == b.present && (!a.present || a.last == b.last) }
	switch {
	case err == nil:
		if !same(now, want) {
			t.Fatalf("step %d: %s reported applied, but the entity is %+v", step, what, now)
		}
		return "applied"
	case errors.Is(err, table.ErrOutcomeUnknown):
		if !same(now, want) && !same(now, before) {
			t.Fatalf("step %d: %s of unknown outcome left %+v, neither %+v nor %+v", step, what, now, before, want)
		}
		return "unknown"
	}
	if !same(now, before) || now.etag != before.etag {
		t.Fatalf("step %d: %s reported not applied (%v), but the entity changed from %+v to %+v", step, what, err, before, now)
	}
	for _, s := range []error{table.ErrAlreadyExists, table.ErrNotFound, table.ErrPreconditionFailed, testrig.ErrCrash, eventual.ErrCommitWindow} {
		if errors.Is(err, s) {
			return "not applied"
		}
	}
	t.Fatalf("step %d: %s failed with %v, which names no reason", step, what, err)
	return ""
}

// TestModelSamePartition draws random writes of 8 employees of one
// partition (inserts, renames, updates, deletes, with current, stale and
// unconditional ETags), loses a third of the transactions' responses and
// stops some writes before their transaction, and checks after every step
// that the outcome reported is what happened to the entity, and that the
// partition's index entities are exactly what its employees call for.
// 40 steps in make test, 10,000 in make soak.
func TestModelSamePartition(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	crash := false
	indexentity.SetHook(f.idx, func(step string) error {
		if crash {
			return testrig.ErrCrash
		}
		return nil
	})
	outcomes := map[string]int{}
	defer func() { t.Logf("outcomes: %v", outcomes) }()
	modelcheck.Run(t, 40, 10000, func(t *testing.T, rnd *rand.Rand, i int) {
		id := fmt.Sprintf("%06d", rnd.IntN(8))
		what, write := randomOp(rnd, f.idx, "Sales", id)
		crash = rnd.IntN(10) == 0
		if rnd.IntN(3) == 0 {
			f.Faults.Inject(faults.Fault{Match: isBatch, LoseResponse: true})
		}
		before := read(t, f.clean, "Sales", id)
		want, err := write(ctx, before)
		outcomes[settle(t, i, what, before, want, read(t, f.clean, "Sales", id), err)]++
		f.Faults.Reset()
		f.check(t, "Sales")
	})
}

// TestModelEventual draws random writes of 8 employees in two partitions
// while two workers run, with random crashes at the handler's steps (3%
// of them), lost responses of transactions, queue writes and list writes
// (a quarter of the steps), and late duplicate intents naming random
// values; it checks every outcome reported against the entity, and every
// 15 steps (250 in make soak), once the queue is drained, that the lists
// are exactly what the employees call for. 30 steps per store in make
// test, 10,000 in make soak.
func TestModelEventual(t *testing.T) {
	t.Parallel()
	for _, store := range []int{sameTable, blobStore} {
		t.Run(storeNames[store], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, store)
			ctx := context.Background()
			ws := []*eventual.Worker{r.start(t, nil), r.start(t, nil)}
			var crashes func() float64 // the crashes' own generator, seeded by the model's
			outcomes := map[string]int{}
			defer func() { t.Logf("outcomes: %v; crashes injected: %v", outcomes, r.crashes.Injected()) }()
			steps, every := modelcheck.Steps(30, 10000), modelcheck.Steps(15, 250)
			modelcheck.Run(t, 30, 10000, func(t *testing.T, rnd *rand.Rand, i int) {
				if i == 0 {
					crashes = rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64())).Float64
					r.crashes.Random(0.03, crashes)
				}
				if rnd.IntN(4) == 0 {
					r.Faults.Inject(faults.Fault{LoseResponse: true, Match: r.on([]int{entities, queue, lists}[rnd.IntN(3)], notGet)})
				}
				pk := []string{"Sales", "Marketing"}[rnd.IntN(2)]
				id := fmt.Sprintf("%06d", rnd.IntN(4))
				if rnd.IntN(6) == 0 { // a late duplicate naming random values
					if err := indexentity.Enqueue(ctx, r.idx, pk, id, modelNames[rnd.IntN(3)], modelNames[rnd.IntN(3)]); err != nil && !errors.Is(err, table.ErrOutcomeUnknown) {
						t.Fatalf("step %d: Enqueue: %v", i, err)
					}
					return
				}
				what, write := randomOp(rnd, r.idx, pk, id)
				before := read(t, r.clean, pk, id)
				want, err := write(ctx, before)
				outcomes[settle(t, i, what, before, want, read(t, r.clean, pk, id), err)]++
				if (i+1)%every == 0 || i == steps-1 {
					r.crashes.Random(0, nil)
					for _, w := range ws {
						drain(t, w)
					}
					r.Faults.Reset()
					r.check(t)
					r.crashes.Random(0.03, crashes)
				}
			})
		})
	}
}
