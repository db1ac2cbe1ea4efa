package indexentity_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// runWorker runs a worker until the queue is empty, then stops it.
func (r *rig) runWorker(t testing.TB) {
	t.Helper()
	w, err := eventual.NewWorker(r.q, workerOptions(), r.idx.Handler())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	drain(t, w)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// lists is the transport of the lists' store.
func (r *rig) lists() *faults.Transport {
	if r.blob {
		return r.bft
	}
	return r.ixft
}

// entityReads counts the reads of entity rk since the last reset.
func (r *rig) entityReads(rk string) int {
	n := 0
	for _, q := range r.tft.Requests() {
		if q.Method == http.MethodGet && strings.Contains(q.URL, "RowKey='"+rk+"'") {
			n++
		}
	}
	return n
}

// writes counts the requests of a transport that are not reads.
func writes(ft *faults.Transport) int {
	n := 0
	for _, q := range ft.Requests() {
		if q.Method != http.MethodGet && q.Method != http.MethodHead {
			n++
		}
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
			write := func(what string, tables, queue int) {
				t.Helper()
				if n, m, l := r.tft.Count(), r.qft.Count(), r.lists().Count(); n != tables || m != queue || l != 0 {
					t.Fatalf("%s: %d table, %d queue and %d list round trips, want %d, %d and 0", what, n, m, l, tables, queue)
				}
				r.reset()
			}
			handled := func(what, rk string, listReads, listWrites int) {
				t.Helper()
				r.runWorker(t)
				l := r.lists()
				if n, w := l.Count(), writes(l); r.entityReads(rk) != 2 || n-w != listReads || w != listWrites {
					t.Fatalf("%s: the handler read the entity %d times and made %d list reads and %d list writes, want 2, %d and %d", what, r.entityReads(rk), n-w, w, listReads, listWrites)
				}
				r.reset()
				r.check(t)
			}
			ana := emp("Sales", 1, "Jones")
			res, err := r.idx.Insert(ctx, ana)
			if err != nil || res.Intent == "" || res.ETag == "" {
				t.Fatalf("Insert: %+v, %v", res, err)
			}
			write("Insert", 1, 2)
			if ids, err := r.idx.Lookup(ctx, "", "Jones"); err != nil || len(ids) != 0 {
				t.Fatalf("Lookup before the worker ran: %v, %v (the list follows eventually)", ids, err)
			}
			r.reset()
			handled("Insert", ana.ID, 1, 1)

			ids, err := r.idx.Lookup(ctx, "", "Jones")
			if want := []indexentity.ID{{"Sales", ana.ID}}; err != nil || !slices.Equal(ids, want) {
				t.Fatalf("Lookup = %v, %v; want %v", ids, err, want)
			}
			if n := r.lists().Count(); n != 1 {
				t.Fatalf("Lookup: %d round trips", n)
			}
			r.reset()
			got, err := r.idx.LookupEntities(ctx, "Sales", "Jones")
			if err != nil || len(got) != 1 || got[0].FirstName != ana.FirstName {
				t.Fatalf("LookupEntities = %+v, %v", got, err)
			}
			if n, m := r.lists().Count(), r.tft.Count(); n != 1 || m != 1 {
				t.Fatalf("LookupEntities of 1: %d list and %d table round trips, want 1 and 1", n, m)
			}
			r.reset()

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
			if _, err := r.idx.Delete(ctx, "Sales", ana.ID, azcore.ETagAny); err != nil {
				t.Fatal(err)
			}
			write("Delete", 2, 2)
			handled("Delete", ana.ID, 1, 1)
			if err := indexentity.Enqueue(ctx, r.idx, "Sales", ana.ID, "Jones", "Smith"); err != nil {
				t.Fatal(err)
			}
			r.reset()
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
	r.reset()
	ids, err := r.idx.Lookup(ctx, "", "Jones")
	if err != nil || len(ids) != n+1 || !slices.Contains(ids, indexentity.ID{PartitionKey: "Sales", RowKey: ana.ID}) {
		t.Fatalf("Lookup: %d ids, %v; want %d with ana's", len(ids), err, n+1)
	}
	if c := r.bft.Count(); c != 1 {
		t.Fatalf("Lookup of 100,001 ids: %d round trips", c)
	}
	if ids, err := r.idx.Lookup(ctx, "D07", "Jones"); err != nil || len(ids) != n/50 {
		t.Fatalf("Lookup in partition D07: %d ids, %v", len(ids), err)
	}
	if got, err := r.idx.LookupEntities(ctx, "Sales", "Jones"); err != nil || len(got) != 1 {
		t.Fatalf("LookupEntities in Sales: %v, %v", got, err)
	}
	if _, err := r.idx.Delete(ctx, "Sales", ana.ID, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	r.runWorker(t)
	if ids, err := r.idx.Lookup(ctx, "", "Jones"); err != nil || len(ids) != n {
		t.Fatalf("after the delete: %d ids, %v", len(ids), err)
	}
}

// TestTableListFull: an eventual table store's list at its limit cannot
// take another id; the worker's pass fails with table.ErrTooLarge naming
// the blob store, and after MaxDeliveries the intent is poisoned with
// that error, while the entity stays written.
func TestTableListFull(t *testing.T) {
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
			var mu sync.Mutex
			crashAt := map[string]int{}
			indexentity.SetHook(r.idx, func(step string) error {
				mu.Lock()
				defer mu.Unlock()
				if crashAt[step] > 0 {
					crashAt[step]--
					return errCrash
				}
				return nil
			})
			crash := func(step string, n int) {
				mu.Lock()
				crashAt[step] = n
				mu.Unlock()
			}
			w := r.start(t, nil) // after SetHook: the handlers read the hook
			post := func(q *http.Request) bool { return q.Method == http.MethodPost }
			put := func(q *http.Request) bool { return q.Method == http.MethodPut }
			list := func(q *http.Request) bool { return q.Method != http.MethodGet }
			del := func(q *http.Request) bool { return q.Method == http.MethodDelete }
			for i, c := range []struct {
				name  string
				setup func()
			}{
				{"the reserve fails", func() { r.qft.Inject(faults.Fault{Match: post, Status: 403}) }},
				{"the transaction fails", func() { r.tft.Inject(faults.Fault{Match: isBatch, Status: 403}) }},
				{"the transaction's response is lost", func() { r.tft.Inject(faults.Fault{Match: isBatch, LoseResponse: true}) }},
				{"the transaction fails, its reserved message stays", func() {
					r.tft.Inject(faults.Fault{Match: isBatch, Status: 403})
					for range 1 + clientRetry.MaxRetries { // every attempt of the cancel
						r.qft.Inject(faults.Fault{Match: del, Status: 500})
					}
				}},
				{"the release fails", func() { r.qft.Inject(faults.Fault{Match: put, Status: 403}) }},
				{"the handler stops before its first list", func() { crash("ensure", 1) }},
				{"the handler stops before its second list", func() { crash("ensure", 2) }},
				{"the handler stops before its second read", func() { crash("verify", 1) }},
				{"the handler stops before a blob write", func() { crash("blob", 1) }},
				{"a list write's response is lost", func() {
					r.ixft.Inject(faults.Fault{Match: list, LoseResponse: true})
					r.bft.Inject(faults.Fault{Match: list, LoseResponse: true})
				}},
			} {
				// Each case renames an employee (two lists), inserts one and
				// deletes one.
				c.setup()
				e := emp("Sales", i, []string{"Jones", "Smith"}[i%2])
				_, err := r.idx.Insert(ctx, e)
				e.LastName = []string{"Smith", "Jones"}[i%2]
				if err == nil {
					_, err = r.idx.Update(ctx, e, azcore.ETagAny)
				}
				if err == nil && i%3 == 0 {
					_, err = r.idx.Delete(ctx, "Sales", e.ID, azcore.ETagAny)
				}
				msg, _, _ := strings.Cut(fmt.Sprint(err), "\n")
				t.Logf("%s: %s", c.name, msg)
				drain(t, w)
				r.reset()
				r.check(t)
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
	tc := r.env.CreateTable(name, nil)
	employees, err := table.New[Employee](tc)
	if err != nil {
		t.Fatal(err)
	}
	q, err := eventual.New(r.queue, &eventual.Options{Poison: r.env.Queue(nil), Tables: []*aztables.Client{tc}})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := indexentity.New(employees, &indexentity.Options[Employee]{Name: strings.Repeat("N", 48), Value: lastName, Blobs: r.env.Container(nil), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Insert(ctx, emp("Sales", 1, "Jones")); err != nil {
		t.Fatalf("Insert with the longest names: %v", err)
	}
	if _, err := eventual.NewWorker(q, nil, idx.Handler()); err != nil {
		t.Fatalf("NewWorker with the longest names: %v", err)
	}
}
