package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// The guide's pattern 2: copies in other partitions (email2!Sales) and in
// an organisation-wide partition of another table, kept by intents.
func TestInterPartition(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), true)
	ctx := context.Background()
	s := r.store
	w := r.worker(t)
	r.Faults.Reset()
	if _, err := s.Insert(ctx, jo()); err != nil || r.Faults.Count() != 1 {
		t.Fatalf("Insert: %v, %d table round trips (the batch with the commit record), want 1", err, r.Faults.Count())
	}
	drain(t, w)
	e, err := s.Lookup(ctx, "Sales", "email2", "jonesj@contoso.com", nil)
	if err != nil || e.Value != jo() {
		t.Fatalf("Lookup through the other partition: %+v, %v", e, err)
	}
	if cur, ok, err := s.Verify(ctx, "email2", e); err != nil || !ok || cur.ETag == "" {
		t.Fatalf("Verify: %v, %v", ok, err)
	}
	// The organisation-wide age index: pk "" is every partition, a pk
	// only its own.
	for pk, want := range map[string]string{"": "[Jones/]", "Sales": "[Jones/]", "Ops": "[]"} {
		var ages []string
		for e, err := range s.Range(ctx, pk, "age", 0, 999, nil) {
			if err != nil {
				t.Fatal(err)
			}
			ages = append(ages, e.Value.LastName+"/"+e.Value.FirstName)
		}
		if fmt.Sprint(ages) != want { // a Listed copy holds LastName only
			t.Fatalf("the organisation-wide age index, partition %q: %v, want %s", pk, ages, want)
		}
	}
	if _, err := s.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Email, e.Age = "jo@contoso.com", 30; return nil }); err != nil {
		t.Fatal(err)
	}
	// Before the worker runs, the copy is stale and Verify says so.
	if stale, err := s.Lookup(ctx, "Sales", "email2", "jonesj@contoso.com", nil); err == nil {
		if _, ok, err := s.Verify(ctx, "email2", stale); err != nil || ok {
			t.Fatalf("Verify of a stale copy: %v, %v", ok, err)
		}
	}
	drain(t, w)
	r.clean(t, "")
	if _, err := s.Lookup(ctx, "Sales", "email2", "jonesj@contoso.com", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the old email's copy: %v", err)
	}
	if err := s.Delete(ctx, "Sales", "000223", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	r.clean(t, "")
	if d, _ := s.Check(ctx, ""); d.Entities != 0 {
		t.Fatalf("%d entities left", d.Entities)
	}
}

// A crash (the handler stops with an error) before each step of the
// worker's reconciliation, and lost responses on the copies' writes: the
// intent is delivered again and the indexes end exactly right.
func TestInterPartitionCrashesAndLostResponses(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"read", "put", "delete", "reread", "lost"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil, true)
			ctx := context.Background()
			var mu sync.Mutex
			crashes := 0
			secondaryindex.SetHook(r.store, func(s string) error {
				mu.Lock()
				defer mu.Unlock()
				if s == step && crashes < 2 {
					crashes++
					return errors.New("crash")
				}
				return nil
			})
			if step == "lost" {
				for range 3 {
					r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool {
						return q.Method != http.MethodGet && !strings.HasSuffix(q.URL.Path, "$batch")
					}, LoseResponse: true})
				}
			}
			w := r.worker(t)
			if _, err := r.store.Insert(ctx, jo()); err != nil {
				t.Fatal(err)
			}
			if _, err := r.store.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Email, e.Age = "jo@contoso.com", 31; return nil }); err != nil {
				t.Fatal(err)
			}
			drain(t, w)
			r.clean(t, "")
			mu.Lock()
			defer mu.Unlock()
			if step != "lost" && crashes == 0 {
				t.Fatalf("no crash at %s", step)
			}
		})
	}
}

// Duplicate and reordered intents converge: intents delivered late, after
// newer ones, and again.
func TestInterPartitionReordering(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, true)
	ctx := context.Background()
	s := r.store
	for i := range 10 { // no worker yet: ten intents queue up
		e := jo()
		e.Email, e.Age = fmt.Sprintf("v%d@contoso.com", i), int64(20+i)
		if i == 0 {
			_, err := s.Insert(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := s.Modify(ctx, "Sales", "000223", func(v *Employee) error { *v = e; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// Two workers take them in any order, several at once.
	w1, w2 := r.worker(t), r.worker(t)
	drain(t, w1)
	drain(t, w2)
	r.clean(t, "")
	if e, err := s.Lookup(ctx, "Sales", "email2", "v9@contoso.com", nil); err != nil || e.Value.Age != 29 {
		t.Fatalf("the last version's copy: %+v, %v", e, err)
	}
	rows, err := table.Collect(r.tbl.Query(ctx, &table.Query{Filter: table.PartitionKey("email2!Sales")}))
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d copies in email2!Sales (%v), want 1", len(rows), err)
	}
}

// The race the reconciliation's second read closes: a worker reads the
// primary (email v0) and, before it writes the copy, the entity changes
// (v1) and the newer intent is fully reconciled (v1 written, v0 deleted,
// though not yet written). The first worker's copy of v0 would then stay
// forever; its second read sees the change and removes it.
func TestInterPartitionStaleWriteRace(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, true)
	ctx := context.Background()
	newerDone := make(chan struct{})
	var mu sync.Mutex
	phase := 0
	secondaryindex.SetHook(r.store, func(step string) error {
		mu.Lock()
		switch {
		case phase == 0 && step == "put":
			phase = 1
			mu.Unlock()
			if _, err := r.store.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Email = "v1@contoso.com"; return nil }); err != nil {
				t.Error(err)
			}
			<-newerDone // the newer intent is reconciled by another goroutine
			return nil
		case phase == 1 && step == "reread":
			phase = 2
			close(newerDone)
		}
		mu.Unlock()
		return nil
	})
	w := r.worker(t)
	e := jo()
	e.Email = "v0@contoso.com"
	if _, err := r.store.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	r.clean(t, "")
	rows, err := table.Collect(r.tbl.Query(ctx, &table.Query{Filter: table.PartitionKey("email2!Sales")}))
	if err != nil || len(rows) != 1 || rows[0].RowKey != "email2!v1@contoso.2Ecom" {
		t.Fatalf("copies in email2!Sales: %v (%v), want only v1's", rows, err)
	}
}

// Two entities swap a unique value through a third (C: e1 -> tmp, A: e0
// -> e1, C: tmp -> e0) while no worker runs. Whatever order the intents
// then run in, none can wait forever for another: each removes its old
// copies even when a new copy's value is still held, so the swap
// completes.
func TestInterPartitionUniqueSwap(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, true)
	ctx := context.Background()
	s := r.store
	a, c := jo(), jo()
	a.ID, a.Email = "00000A", "e0@contoso.com"
	c.ID, c.Email = "00000C", "e1@contoso.com"
	for _, e := range []Employee{a, c} {
		if _, err := s.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Their copies exist (a first worker runs, then stops).
	first, err := eventual.NewWorker(r.q, []eventual.Handler{s.Handler()}, &eventual.WorkerOptions{Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- first.Run(runCtx) }()
	drain(t, first)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	set := func(id, email string) {
		if _, err := s.Modify(ctx, "Sales", id, func(e *Employee) error { e.Email = email; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	set("00000C", "tmp@contoso.com")
	set("00000A", "e1@contoso.com")
	set("00000C", "e0@contoso.com")
	w := r.worker(t) // now the three intents run, several at once
	drain(t, w)
	r.clean(t, "")
	if e, err := s.Lookup(ctx, "Sales", "email2", "e0@contoso.com", nil); err != nil || e.RowKey != "00000C" {
		t.Fatalf("e0 after the swap: %+v, %v", e, err)
	}
}

// An organisation-wide index (one constant partition): the copies of
// Sales/000223 and Ops/000223 with the same value are two rows, Find with
// pk "" returns both, with a pk only that partition's; Check sees a lost
// copy.
func TestOrgWideIndexKeepsEveryPartition(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, true)
	ctx := context.Background()
	s := r.store
	w := r.worker(t)
	ops := jo()
	ops.Department, ops.FirstName, ops.Email = "Ops", "Ola", "ola@contoso.com"
	for _, e := range []Employee{jo(), ops} {
		if _, err := s.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, w)
	r.clean(t, "")
	find := func(pk string) string {
		t.Helper()
		var got []string
		r.Faults.Reset()
		for e, err := range s.Find(ctx, pk, "age", 29, nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.PartitionKey+"/"+e.RowKey+"/"+e.Value.LastName)
		}
		if r.Faults.Count() != 1 {
			t.Errorf("Find %q: %d round trips, want 1", pk, r.Faults.Count())
		}
		return strings.Join(got, " ")
	}
	if got := find(""); got != "Ops/000223/Jones Sales/000223/Jones" {
		t.Fatalf("Find in every partition: %q", got)
	}
	if got := find("Sales"); got != "Sales/000223/Jones" {
		t.Fatalf("Find in Sales: %q", got)
	}
	if got := find("Ops"); got != "Ops/000223/Jones" {
		t.Fatalf("Find in Ops: %q", got)
	}
	if got := find("HR"); got != "" {
		t.Fatalf("Find in HR: %q", got)
	}
	// Each copy is its own row, keyed by value, then partition, then id.
	rk := keys.Join("age", "029", "Sales", "000223")
	if err := r.other.Delete(ctx, "everyone", rk, azcore.ETagAny); err != nil {
		t.Fatalf("deleting Sales's copy %q: %v", rk, err)
	}
	d, err := s.Check(ctx, "")
	if err != nil || len(d.Missing) != 1 || d.Missing[0].RowKey != rk || len(d.Stale)+len(d.Orphans) != 0 {
		t.Fatalf("Check after a copy was lost: %+v, %v", d, err)
	}
	if d, err = s.Rebuild(ctx, ""); err != nil || d.Fixed != 1 {
		t.Fatalf("Rebuild: %+v, %v", d, err)
	}
	if got := find(""); got != "Ops/000223/Jones Sales/000223/Jones" {
		t.Fatalf("Find after Rebuild: %q", got)
	}
}

// A unique organisation-wide index keeps one copy per value: when two
// entities of different partitions have the same value, the one without
// the copy is Missing to Check (before and after Rebuild, which cannot
// give a unique value twice and says so), never hidden by the other.
func TestOrgWideUniqueDuplicateIsSeen(t *testing.T) {
	t.Parallel()
	mail := secondaryindex.Index[Employee]{Name: "mail", Unique: true, Holds: secondaryindex.KeysOnly, Where: secondaryindex.OtherPartition,
		Partition: func(string) string { return "mail" }, On: []string{"Email"}}
	r := newRig(t, []secondaryindex.Index[Employee]{mail}, true)
	ctx := context.Background()
	s := r.store
	ops := jo()
	ops.Department = "Ops"
	for _, e := range []Employee{jo(), ops} { // no worker: Rebuild makes the copies
		if _, err := s.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	missing := func(d secondaryindex.Drift) (n int) {
		for _, m := range d.Missing {
			if m.Index == "mail" {
				n++
			}
		}
		return n
	}
	d, err := s.Check(ctx, "")
	if err != nil || missing(d) != 2 {
		t.Fatalf("Check before any copy: %+v, %v; want both mail copies missing", d, err)
	}
	d, err = s.Rebuild(ctx, "")
	if !errors.Is(err, secondaryindex.ErrDuplicate) || !strings.Contains(err.Error(), `"mail"`) {
		t.Fatalf("Rebuild: %+v, %v; want ErrDuplicate for the second entity", d, err)
	}
	holder, err := s.Lookup(ctx, "", "mail", jo().Email, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		d, err = s.Check(ctx, "")
		if err != nil || missing(d) != 1 || len(d.Stale)+len(d.Orphans) != 0 {
			t.Fatalf("Check with a duplicate: %+v, %v; want the one mail copy missing", d, err)
		}
		other := map[string]string{"Sales": "Ops", "Ops": "Sales"}[holder.PartitionKey]
		if d, err := s.Check(ctx, other); err != nil || missing(d) != 1 {
			t.Fatalf("Check of %s, which lacks its copy: %+v, %v", other, d, err)
		}
		if d, err := s.Check(ctx, holder.PartitionKey); missing(d) != 0 || !d.Clean() {
			t.Fatalf("Check of %s, which holds the copy: %+v, %v", holder.PartitionKey, d, err)
		}
		if _, err := s.Rebuild(ctx, ""); !errors.Is(err, secondaryindex.ErrDuplicate) {
			t.Fatalf("Rebuild again: %v", err)
		}
		if e, err := s.Lookup(ctx, "", "mail", jo().Email, nil); err != nil || e.PartitionKey != holder.PartitionKey {
			t.Fatalf("Rebuild moved the value to %+v, %v", e, err)
		}
	}
}
