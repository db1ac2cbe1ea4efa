package indexentity_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// runWorker runs a worker until the queue is empty, then stops it.
func (r *rig) runWorker(t testing.TB) {
	t.Helper()
	w, err := eventual.NewWorker(r.q, []eventual.Handler{r.idx.Handler()}, workerOptions())
	if err != nil {
		t.Fatal(err)
	}
	stop := testrig.Start(t, w.Run)
	drain(t, w)
	stop()
}

// entityReads counts the reads of entity rk since the last reset.
func (r *rig) entityReads(rk string) int {
	n := 0
	for _, q := range r.requests(entities) {
		if q.Method == http.MethodGet && strings.Contains(q.URL, "RowKey='"+rk+"'") {
			n++
		}
	}
	return n
}

// writes counts the requests that are not reads.
func writes(qs []faults.Request) int {
	n := 0
	for _, q := range qs {
		if q.Method != http.MethodGet && q.Method != http.MethodHead {
			n++
		}
	}
	return n
}

func notGet(q *http.Request) bool { return q.Method != http.MethodGet }

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestEventualRoundTrips: the eventual stores' writes cost what the
// documentation says (Commit: 3; with the entity read first: 4), the
// handler reads the entity twice, each value's list once, and writes only
// the lists that differ; a lookup is 1 round trip. Lists follow the
// entities once the worker ran, not before.
func TestEventualRoundTrips(t *testing.T) {
	t.Parallel()
	for _, store := range []int{ownTable, blobStore} {
		t.Run(storeNames[store], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, store)
			ctx := context.Background()
			write := func(what string, tables, queued int) {
				t.Helper()
				if n, m, l := len(r.requests(entities)), len(r.requests(queue)), len(r.requests(lists)); n != tables || m != queued || l != 0 {
					t.Fatalf("%s: %d table, %d queue and %d list round trips, want %d, %d and 0", what, n, m, l, tables, queued)
				}
				r.Faults.Reset()
			}
			handled := func(what, rk string, listReads, listWrites int) {
				t.Helper()
				r.runWorker(t)
				l := r.requests(lists)
				if n, w := len(l), writes(l); r.entityReads(rk) != 2 || n-w != listReads || w != listWrites {
					t.Fatalf("%s: the handler read the entity %d times and made %d list reads and %d list writes, want 2, %d and %d", what, r.entityReads(rk), n-w, w, listReads, listWrites)
				}
				r.Faults.Reset()
				r.check(t)
			}
			ana := emp("Sales", 1, "Jones")
			res, err := r.idx.Insert(ctx, ana)
			if err != nil || res.Intent == "" || res.ETag == "" {
				t.Fatalf("Insert: %+v, %v", res, err)
			}
			write("Insert", 1, 2)
			if ids, err := r.idx.FindIDs(ctx, "", "Jones"); err != nil || len(ids) != 0 {
				t.Fatalf("FindIDs before the worker ran: %v, %v (the list follows eventually)", ids, err)
			}
			r.Faults.Reset()
			handled("Insert", ana.ID, 1, 1)

			ids, err := r.idx.FindIDs(ctx, "", "Jones")
			if want := []indexentity.ID{{"Sales", ana.ID}}; err != nil || !slices.Equal(ids, want) {
				t.Fatalf("FindIDs = %v, %v; want %v", ids, err, want)
			}
			if n := r.Faults.Count(); n != 1 || len(r.requests(lists)) != 1 {
				t.Fatalf("FindIDs: %d round trips", n)
			}
			r.Faults.Reset()
			got, err := table.Collect(r.idx.Find(ctx, "Sales", "Jones"))
			if err != nil || len(got) != 1 || got[0].Value.FirstName != ana.FirstName || got[0].ETag == "" {
				t.Fatalf("Find = %+v, %v", got, err)
			}
			if n, m := len(r.requests(lists)), len(r.requests(entities)); n != 1 || m != 1 || r.Faults.Count() != 2 {
				t.Fatalf("Find of 1: %d list and %d table round trips, want 1 and 1", n, m)
			}
			r.Faults.Reset()

			ana.Age++
			if res, err := r.idx.Update(ctx, ana, azcore.ETagAny); err != nil || res.Intent != "" {
				t.Fatalf("Update, value unchanged: %+v, %v", res, err)
			}
			write("Update, value unchanged", 2, 0)
			ana.LastName = "Smith"
			if _, err := r.idx.Update(ctx, ana, azcore.ETagAny); err != nil {
				t.Fatal(err)
			}
			write("Update, renamed", 2, 2)
			handled("rename", ana.ID, 2, 2) // Jones emptied (deleted), Smith created
			if err := r.idx.Delete(ctx, "Sales", ana.ID, azcore.ETagAny); err != nil {
				t.Fatal(err)
			}
			write("Delete", 2, 2)
			handled("Delete", ana.ID, 1, 1)
			if err := indexentity.Enqueue(ctx, r.idx, "Sales", ana.ID, "Jones", "Smith"); err != nil {
				t.Fatal(err)
			}
			r.Faults.Reset()
			handled("a late duplicate", ana.ID, 2, 0)
			if lists := r.stored(t); len(lists) != 0 {
				t.Fatalf("lists left: %v", lists)
			}
		})
	}
}

// TestReconcileRace: a handler's pass is overtaken by a rename and that
// rename's own intent, between the pass's read of the entity and its list
// write. The pass's write then follows a replaced version (the id back in
// Jones); its second read sees the entity changed and the pass runs
// again, so the lists end as the entity is, with no id in two lists.
func TestReconcileRace(t *testing.T) {
	t.Parallel()
	for _, store := range []int{sameTable, blobStore} {
		t.Run(storeNames[store], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, store)
			ctx := context.Background()
			ana := emp("Sales", 1, "Jones")
			if _, err := r.idx.Insert(ctx, ana); err != nil {
				t.Fatal(err)
			}
			var first, raced atomic.Bool
			processed := make(chan string, 64)
			indexentity.SetHook(r.idx, func(step string) error {
				if step != "ensure" || !first.CompareAndSwap(false, true) {
					return nil
				}
				// The Insert's pass has read ana as Jones; rename her and
				// let the rename's intent run to its end first.
				renamed := ana
				renamed.LastName = "Smith"
				res, err := r.idx.Update(ctx, renamed, azcore.ETagAny)
				if err != nil {
					t.Error(err)
					return nil
				}
				for id := range processed {
					if id == res.Intent {
						raced.Store(true)
						return nil
					}
				}
				return nil
			})
			opts := workerOptions()
			opts.Concurrency = 2
			opts.OnEvent = func(e eventual.Event) {
				if e.Type == eventual.Processed {
					select {
					case processed <- e.ID:
					default:
					}
				}
			}
			w := r.start(t, opts)
			drain(t, w)
			if !raced.Load() {
				t.Fatal("the rename's intent did not run inside the first pass")
			}
			r.check(t)
			lists := r.stored(t)
			if len(lists) != 1 || len(lists["Smith"]) != 1 {
				t.Fatalf("lists %v, want Smith only", lists)
			}
		})
	}
}

// TestBlobListOf100000: a blob list of 100,000 ids (seeded directly) takes
// an add and a removal through the worker, and is looked up whole (1 round
// trip) or filtered by partition.
func TestBlobListOf100000(t *testing.T) {
	t.Parallel()
	r := newRig(t, blobStore)
	ctx := context.Background()
	const n = 100000
	seed := make([]indexentity.ID, n)
	for i := range seed {
		seed[i] = indexentity.ID{PartitionKey: fmt.Sprintf("D%02d", i%50), RowKey: fmt.Sprintf("%08d", i)}
	}
	if err := indexentity.SeedList(ctx, r.idx, "", "Jones", seed); err != nil {
		t.Fatal(err)
	}
	ana := emp("Sales", 1, "Jones")
	if _, err := r.idx.Insert(ctx, ana); err != nil {
		t.Fatal(err)
	}
	r.runWorker(t)
	r.Faults.Reset()
	ids, err := r.idx.FindIDs(ctx, "", "Jones")
	if err != nil || len(ids) != n+1 || !slices.Contains(ids, indexentity.ID{PartitionKey: "Sales", RowKey: ana.ID}) {
		t.Fatalf("FindIDs: %d ids, %v; want %d with ana's", len(ids), err, n+1)
	}
	if c := r.Faults.Count(); c != 1 || len(r.requests(lists)) != 1 {
		t.Fatalf("FindIDs of 100,001 ids: %d round trips", c)
	}
	if ids, err := r.idx.FindIDs(ctx, "D07", "Jones"); err != nil || len(ids) != n/50 {
		t.Fatalf("FindIDs in partition D07: %d ids, %v", len(ids), err)
	}
	if got, err := table.Collect(r.idx.Find(ctx, "Sales", "Jones")); err != nil || len(got) != 1 {
		t.Fatalf("Find in Sales: %v, %v", got, err)
	}
	if err := r.idx.Delete(ctx, "Sales", ana.ID, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	r.runWorker(t)
	if ids, err := r.idx.FindIDs(ctx, "", "Jones"); err != nil || len(ids) != n {
		t.Fatalf("after the delete: %d ids, %v", len(ids), err)
	}
}

// TestTableListFull: an eventual table store's list at its limit cannot
// take another id; the worker's pass fails with table.ErrTooLarge naming
// the blob store, and after MaxDeliveries the intent is poisoned with
// that error, while the entity stays written.
func TestTableListFull(t *testing.T) {
	testrig.StorageOnly(t, "a list filled to Table Storage's limit; under the simulation the emulator still stores at most 1 MiB, and TestCosmosListLimits covers Cosmos DB's lists")
	t.Parallel()
	r := newRig(t, ownTable)
	ctx := context.Background()
	full := fill(r.idx, "", "P", 60)
	if err := indexentity.SeedList(ctx, r.idx, "", "Jones", full); err != nil {
		t.Fatal(err)
	}
	if _, err := r.idx.Insert(ctx, Employee{Department: "Sales", ID: strings.Repeat("9", 60), LastName: "Jones"}); err != nil {
		t.Fatal(err)
	}
	opts := workerOptions()
	opts.MaxDeliveries = 2
	w := r.start(t, opts)
	drain(t, w)
	poisoned, err := r.q.Poisoned(ctx, 10)
	if err != nil || len(poisoned) != 1 || !strings.Contains(poisoned[0].Error, "Options.Blobs") {
		t.Fatalf("poisoned: %+v, %v; want the intent, with an error naming the blob store", poisoned, err)
	}
}

// TestEventualCrashes stops the flow at every step: Commit's reserve,
// transaction and release fail (faults on the queue and table requests),
// the handler stops before each list write, before its second read and
// before a blob write, and list writes lose their responses. After Drain
// the lists are exactly what the entities call for, whatever stopped
// where.
func TestEventualCrashes(t *testing.T) {
	t.Parallel()
	for _, store := range []int{sameTable, blobStore} {
		t.Run(storeNames[store], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, store)
			ctx := context.Background()
			w := r.start(t, nil)
			post := func(q *http.Request) bool { return q.Method == http.MethodPost }
			put := func(q *http.Request) bool { return q.Method == http.MethodPut }
			del := func(q *http.Request) bool { return q.Method == http.MethodDelete }
			for i, c := range []struct {
				name  string
				setup func()
			}{
				{"the reserve fails", func() { r.Faults.Inject(faults.Fault{Match: r.on(queue, post), Status: 403}) }},
				{"the transaction fails", func() { r.Faults.Inject(faults.Fault{Match: r.on(entities, isBatch), Status: 403}) }},
				{"the transaction's response is lost", func() { r.Faults.Inject(faults.Fault{Match: r.on(entities, isBatch), LoseResponse: true}) }},
				{"the transaction fails, its reserved message stays", func() {
					r.Faults.Inject(faults.Fault{Match: r.on(entities, isBatch), Status: 403})
					for range 1 + testrig.Fast.MaxRetries { // every attempt of the cancel
						r.Faults.Inject(faults.Fault{Match: r.on(queue, del), Status: 500})
					}
				}},
				{"the release fails", func() { r.Faults.Inject(faults.Fault{Match: r.on(queue, put), Status: 403}) }},
				{"the handler stops before its first list", func() { r.crashes.At("ensure", 1) }},
				{"the handler stops before its second list", func() { r.crashes.At("ensure", 2) }},
				{"the handler stops before its second read", func() { r.crashes.At("verify", 1) }},
				{"the handler stops before a blob write", func() { r.crashes.At("blob", 1) }},
				{"a list write's response is lost", func() { r.Faults.Inject(faults.Fault{Match: r.on(lists, notGet), LoseResponse: true}) }},
			} {
				// Each case inserts an employee and renames it (two lists),
				// and every third deletes it once its lists were written
				// (so that the case's fault meets a list write).
				crashed := total(r.crashes.Injected())
				c.setup()
				e := emp("Sales", i, []string{"Jones", "Smith"}[i%2])
				_, err := r.idx.Insert(ctx, e)
				e.LastName = []string{"Smith", "Jones"}[i%2]
				if err == nil {
					_, err = r.idx.Update(ctx, e, azcore.ETagAny)
				}
				drain(t, w)
				if err == nil && i%3 == 0 {
					err = r.idx.Delete(ctx, "Sales", e.ID, azcore.ETagAny)
					drain(t, w)
				}
				msg, _, _ := strings.Cut(fmt.Sprint(err), "\n") // package eventual's errors may quote azcore's dumps
				t.Logf("%s: %s", c.name, msg)
				faulted := slices.ContainsFunc(r.Faults.Requests(), func(q faults.Request) bool { return q.Injected })
				if !faulted && total(r.crashes.Injected()) == crashed && (store == blobStore || !strings.Contains(c.name, "blob")) {
					t.Fatalf("%s: nothing was injected", c.name)
				}
				r.Faults.Reset()
				r.check(t)
			}
			if got := r.crashes.Injected(); got["ensure"] != 2 || got["verify"] != 1 || store == blobStore && got["blob"] != 1 {
				t.Fatalf("crashes injected: %v", got)
			}
			if lists := r.stored(t); len(lists["Jones"])+len(lists["Smith"]) == 0 {
				t.Fatal("no list was written")
			}
		})
	}
}

// TestLongestName: an index Name of 48 characters, the most allowed, makes
// a valid intent kind on a table with a name of 63 characters, the most
// the service allows.
func TestLongestName(t *testing.T) {
	t.Parallel()
	r := newRig(t, blobStore)
	ctx := context.Background()
	name := "t" + strings.Repeat("x", 62)
	tc := r.CreateTable(name, nil)
	employees := testrig.NewTable[Employee](t, tc)
	q, err := eventual.New(r.queue, r.CleanQueue(), &eventual.Options{Tables: []*aztables.Client{tc}})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := indexentity.New(employees, strings.Repeat("N", 48), lastName, &indexentity.Options{Blobs: r.Container(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Insert(ctx, emp("Sales", 1, "Jones")); err != nil {
		t.Fatalf("Insert with the longest names: %v", err)
	}
	if _, err := eventual.NewWorker(q, []eventual.Handler{idx.Handler()}, nil); err != nil {
		t.Fatalf("NewWorker with the longest names: %v", err)
	}
}

// An intent reserved after its commit window passed (a slow reserve: the
// queue answers late) is refused by eventual.Commit itself, nothing
// applied (ErrCommitWindow): Insert commits again with a new intent and
// succeeds, as it does when a worker's aborted record refuses the batch.
func TestCommitWindowPassedWhileReserving(t *testing.T) {
	t.Parallel()
	r := newRig(t, ownTable)
	ctx := context.Background()
	r.Faults.Inject(faults.Fault{Match: r.on(queue, func(q *http.Request) bool { return q.Method == http.MethodPost }), Delay: 2500 * time.Millisecond})
	if _, err := r.idx.Insert(ctx, Employee{Department: "Sales", ID: "000001", LastName: "Jones"}); err != nil {
		t.Fatalf("Insert after a reserve that outlived the commit window = %v, want a second intent and success", err)
	}
	if _, err := r.clean.Get(ctx, "Sales", "000001", nil); err != nil {
		t.Fatalf("the entity was not written: %v", err)
	}
}
