package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestModelIntents commits and enqueues random intents (new orders,
// changed totals, deletions, duplicate deliveries) while two workers run,
// with random crashes at any step boundary of Commit and of the workers
// and random lost responses, and checks every 40 steps, once the queue is
// drained (every 250 in make soak), that the index is what the orders call for, that every intent
// of an applied Commit ran and none of a Commit that did not apply did,
// and that no commit record or message is left. 80 steps in make test,
// 10,000 in make soak.
func TestModelIntents(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	opts := workerOptions()
	opts.MaxDeliveries = 1000 // crashes must not poison
	var ws []*eventual.Worker
	for range 2 {
		w := r.worker(t, opts)
		ws = append(ws, w)
		start(t, w)
	}
	var committed, uncommitted []string
	// A Commit whose outcome the test cannot know from its error (a crash
	// after the reserve, an unknown batch) is settled by what its batch
	// wrote: a marker row in the order's partition.
	type open struct {
		id, cust, marker string
	}
	var unsettled []open
	markers := testrig.NewTable[order](t, r.orders.Client())
	const crashP = 0.03 // per step boundary
	var crashRnd func() float64
	check := func(t *testing.T) {
		for _, w := range ws {
			drain(t, w)
		}
		for _, u := range unsettled {
			if _, err := markers.Get(ctx, u.cust, u.marker, nil); err == nil {
				committed = append(committed, u.id)
			} else if errors.Is(err, table.ErrNotFound) {
				uncommitted = append(uncommitted, u.id)
			} else {
				t.Fatal(err)
			}
		}
		unsettled = nil
		r.crash.Random(0, nil) // checkSettled's own worker does not crash
		r.checkSettled(t, committed, uncommitted)
		r.crash.Random(crashP, crashRnd)
		committed, uncommitted = nil, nil
	}
	steps, every := modelcheck.Steps(80, 10000), modelcheck.Steps(40, 250)
	var stats [3]int // commits applied, not applied, settled later
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Logf("outcomes: commits %d applied, %d not applied, %d settled after a crash or unknown outcome; %d handler runs; crashes injected: %v", stats[0], stats[1], stats[2], len(r.runs), r.crash.Injected())
	}()
	modelcheck.Run(t, 80, 10000, func(t *testing.T, rnd *rand.Rand, i int) {
		if i == 0 { // the hook's own generator: workers call it concurrently (under the Crashes' lock)
			crashRnd = rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64())).Float64
			r.crash.Random(crashP, crashRnd)
		}
		if rnd.IntN(4) == 0 {
			lost := faults.Fault{LoseResponse: true}
			switch rnd.IntN(3) {
			case 0:
				lost.Match = r.onQueue(func(q *http.Request) bool { return q.Method != http.MethodGet })
			case 1:
				lost.Match = r.onTable(func(q *http.Request) bool { return q.Method != http.MethodGet })
			default:
				lost.Match = r.onTable(func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "/$batch") })
			}
			r.Faults.Inject(lost)
		}
		cust, id := fmt.Sprint("c", rnd.IntN(3)), fmt.Sprint("o", rnd.IntN(5))
		email := id + "@x" // fixed per order, so the index key is too
		d := indexKind.New(indexOrder{cust, id, email})
		marker := fmt.Sprint("marker-", i)
		var ops []table.Op
		switch rnd.IntN(4) {
		case 0: // delete the order
			ops = []table.Op{r.orders.DeleteOp(cust, id, "*")}
		case 1: // a duplicate, stale delivery
			if _, err := r.q.Enqueue(ctx, d); err != nil && !errors.Is(err, testrig.ErrCrash) && !errors.Is(err, table.ErrOutcomeUnknown) {
				t.Fatalf("step %d: Enqueue: %v", i, err)
			}
			return
		default:
			ops = []table.Op{r.orders.UpsertOp(order{Customer: cust, ID: id, Email: email, Total: int64(i)}, table.Replace)}
		}
		ops = append(ops, markers.InsertOp(order{Customer: cust, ID: marker, Email: "marker"}))
		_, err := r.q.Commit(ctx, r.orders.Client(), ops, d)
		switch {
		case err == nil:
			committed = append(committed, d.ID())
			stats[0]++
		case errors.Is(err, table.ErrNotFound) || errors.Is(err, eventual.ErrCommitWindow):
			uncommitted = append(uncommitted, d.ID()) // deleting a missing order
			stats[1]++
		case errors.Is(err, testrig.ErrCrash) || errors.Is(err, table.ErrOutcomeUnknown) || errors.Is(err, table.ErrNotApplied):
			unsettled = append(unsettled, open{d.ID(), cust, marker})
			stats[2]++
		default:
			t.Fatalf("step %d: Commit: %v", i, err)
		}
		if (i+1)%every == 0 || i == steps-1 {
			check(t)
			if t.Failed() {
				t.FailNow()
			}
		}
	})
}
