package indexentity_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestConcurrentAdders: 16 writers each add 50 employees named Jones to
// one partition at once, all contending for one index entity. Every id
// ends up in the list exactly once (no lost update, no duplicate), and the
// conflicts the ETag loop met are reported.
func TestConcurrentAdders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const writers, each = 16, 50
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				res, err := f.idx.Insert(ctx, emp("Sales", w*each+i, "Jones"))
				if err != nil {
					t.Error(err)
					return
				}
				conflicts.Add(int64(res.Conflicts))
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	lists := f.storedLists(t, "Sales")
	if n := len(lists["Jones"]); n != writers*each {
		t.Fatalf("the list holds %d ids, want %d", n, writers*each)
	}
	f.check(t, "Sales")
	t.Logf("%d adds by %d writers met %d conflicts (412 or 409 on the index entity), each followed by a new read and transaction", writers*each, writers, conflicts.Load())
	if conflicts.Load() == 0 {
		t.Fatal("16 writers on one index entity never conflicted: the test did not exercise the ETag loop")
	}
}

// TestRenameWithAdders: employees are renamed Jones -> Smith while other
// writers add Joneses and Smiths to the same partition: no id ends in
// both lists, none in neither, none in the wrong one.
func TestRenameWithAdders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const renamed = 24
	for i := range renamed {
		if _, err := f.idx.Insert(ctx, emp("Sales", i, "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	run := func(fn func() (int, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := fn()
			conflicts.Add(int64(n))
			if err != nil {
				t.Error(err)
			}
		}()
	}
	for r := range 4 { // renamers
		run(func() (int, error) {
			total := 0
			for i := r; i < renamed; i += 4 {
				e, err := f.employees.Get(ctx, "Sales", emp("Sales", i, "").ID, nil)
				if err != nil {
					return total, err
				}
				e.Value.LastName = "Smith"
				res, err := f.idx.Update(ctx, e.Value, e.ETag)
				total += res.Conflicts
				if err != nil {
					return total, err
				}
			}
			return total, nil
		})
	}
	for a := range 4 { // adders, alternating Jones and Smith
		run(func() (int, error) {
			total := 0
			for i := range 12 {
				last := []string{"Jones", "Smith"}[i%2]
				res, err := f.idx.Insert(ctx, emp("Sales", 1000+a*100+i, last))
				total += res.Conflicts
				if err != nil {
					return total, err
				}
			}
			return total, nil
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	f.check(t, "Sales")
	lists := f.storedLists(t, "Sales")
	if len(lists["Jones"]) != 24 || len(lists["Smith"]) != 24+24 {
		t.Fatalf("Jones %d, Smith %d ids; want 24 and 48", len(lists["Jones"]), len(lists["Smith"]))
	}
	t.Logf("24 renames and 48 adds met %d conflicts", conflicts.Load())
}

// TestLostResponses loses the response of every kind of transaction
// after the service applied it: the pipeline resends, the resend answers
// 409, 412 or 404, and the core settles it by reading the write history.
// Each write is then reported applied (Verified; a Delete without error),
// never failed, no id is
// stored twice or left out; a Delete that also deletes the index entity
// leaves nothing to read, and reports ErrOutcomeUnknown (which matches
// ErrNotFound), with the entity and its id gone together.
func TestLostResponses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	lose := func() { f.Faults.Inject(faults.Fault{Match: isBatch, LoseResponse: true}) }
	var applied func(what string, err error)
	verified := func(what string, res indexentity.Result, err error) {
		t.Helper()
		if err != nil || !res.Verified {
			t.Fatalf("%s with its response lost: %+v, %v", what, res, err)
		}
		applied(what, err)
	}
	// applied checks a write reported applied after its lost response
	// (Delete returns no Result: its error says it).
	applied = func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s with its response lost: %v", what, err)
		}
		resent := 0
		for _, r := range f.Faults.Requests() {
			if r.Method == http.MethodPost {
				resent++
			}
		}
		if resent != 2 {
			t.Fatalf("%s: %d transactions sent, want the lost one and its resend", what, resent)
		}
		f.Faults.Reset()
		f.check(t, "Sales")
	}
	lose()
	res, err := f.idx.Insert(ctx, emp("Sales", 1, "Jones")) // inserts the index entity
	verified("Insert, new list", res, err)
	lose()
	res, err = f.idx.Insert(ctx, emp("Sales", 2, "Jones")) // replaces it If-Match
	verified("Insert", res, err)
	lose()
	res, err = f.idx.Update(ctx, emp("Sales", 2, "Jones"), azcore.ETagAny)
	verified("Update, value unchanged", res, err)
	lose()
	res, err = f.idx.Update(ctx, emp("Sales", 2, "Smith"), azcore.ETagAny)
	verified("Update, renamed", res, err)
	lose()
	res, err = f.idx.Update(ctx, emp("Sales", 1, "Smith"), azcore.ETagAny) // deletes the emptied Jones list
	verified("Update, renamed out of the last list", res, err)
	lose()
	err = f.idx.Delete(ctx, "Sales", emp("Sales", 1, "").ID, azcore.ETagAny) // the Smith list remains
	applied("Delete", err)
	lose()
	err = f.idx.Delete(ctx, "Sales", emp("Sales", 2, "").ID, azcore.ETagAny)
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete of the last id with its response lost: %v, want ErrOutcomeUnknown and ErrNotFound", err)
	}
	f.check(t, "Sales")
	if lists := f.storedLists(t, "Sales"); len(lists) != 0 {
		t.Fatalf("lists left: %v", lists)
	}
}
