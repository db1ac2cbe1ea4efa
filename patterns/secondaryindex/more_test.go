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
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// 8 goroutines x 25 updates of one entity, each changing both indexed
// values: no lost update, no stale or duplicate copy.
func TestConcurrentUpdaters(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	p := retry.Policy{Default: 5 * time.Millisecond, Max: 50 * time.Millisecond, MaxRetries: 200, FullJitter: true}
	s, err := secondaryindex.New(r.tbl, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: intraIndexes(), Retry: &p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				_, err := s.Modify(ctx, "Sales", "000223", func(e *Employee) error {
					e.Age++
					e.Email = fmt.Sprintf("jo%d.%d@contoso.com", g, i)
					e.LastName = fmt.Sprint("Jones", g)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	cur, err := s.Get(ctx, "Sales", "000223")
	if err != nil || cur.Value.Age != 29+200 {
		t.Fatalf("after 200 updates: %+v, %v; want age 229", cur.Value, err)
	}
	r.clean(t, "Sales")
	n := 0
	for _, err := range s.Find(ctx, "Sales", "name", []any{cur.Value.LastName}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d entities under the last name, want 1", n)
	}
}

// Adding an index to existing data, and repairing drift of every kind.
func TestCheckAndRebuild(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, false) // no index yet
	ctx := context.Background()
	for i := range 30 {
		e := jo()
		e.ID, e.Email, e.FirstName = fmt.Sprintf("%06d", i), fmt.Sprintf("e%d@contoso.com", i), fmt.Sprint("F", i%3)
		if _, err := r.store.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s, err := secondaryindex.New(r.tbl, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: intraIndexes()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Check(ctx, "")
	if err != nil || d.Entities != 30 || len(d.Missing) != 60 || d.Fixed != 0 {
		t.Fatalf("Check before the rebuild: %d entities, %d missing, %v", d.Entities, len(d.Missing), err)
	}
	if d, err = s.Rebuild(ctx, "Sales"); err != nil || d.Fixed != 60 {
		t.Fatalf("Rebuild: fixed %d, %v", d.Fixed, err)
	}
	if d, err = s.Check(ctx, "Sales"); err != nil || !d.Clean() {
		t.Fatalf("Check after the rebuild: %+v, %v", d, err)
	}
	// Drift: a copy deleted, a copy changed, an orphan.
	if err := r.tbl.Delete(ctx, "Sales", "email!e1@contoso.2Ecom", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tbl.Update(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "email!e2@contoso.2Ecom", Properties: map[string]any{"Age": int64(99)}}, azcore.ETagAny, table.Merge); err != nil {
		t.Fatal(err)
	}
	if _, err := reserved.Properties(r.tbl).Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "name!Nobody!X!999999", Properties: map[string]any{secondaryindex.RefProperty: "Sales!999999"}}); err != nil {
		t.Fatal(err)
	}
	d, err = s.Check(ctx, "Sales")
	if err != nil || len(d.Missing) != 1 || len(d.Stale) != 1 || len(d.Orphans) != 1 || d.Stale[0].RowKey != "email!e2@contoso.2Ecom" {
		t.Fatalf("Check of the drift: %+v, %v", d, err)
	}
	// Updates work over drift: the missing copy's delete is skipped.
	if _, err := s.Modify(ctx, "Sales", "000001", func(e *Employee) error { e.Email = "moved@contoso.com"; return nil }); err != nil {
		t.Fatalf("Modify over a missing copy: %v", err)
	}
	if d, err = s.Rebuild(ctx, ""); err != nil || d.Fixed != 2 {
		t.Fatalf("Rebuild of the drift: %+v, %v", d, err)
	}
	if d, err = s.Check(ctx, ""); err != nil || !d.Clean() {
		t.Fatalf("Check after repair: %+v, %v", d, err)
	}
	if _, err := s.Lookup(ctx, "Sales", "email", "moved@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, "Sales", "email", "e1@contoso.com", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the old value: %v", err)
	}
}

// Find through a keys-only index reads the primaries ahead in parallel,
// in index order; a primary gone since its copy was read is left out, and
// a primary that cannot be read ends the sequence with its error.
func TestFindFetchesInOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	for i := range 20 {
		e := jo()
		e.ID, e.Email, e.FirstName = fmt.Sprintf("%06d", i), fmt.Sprintf("e%d@contoso.com", i), fmt.Sprintf("F%02d", i)
		if _, err := r.store.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Drift: the primary of F05 is gone, its name copy stays.
	if err := r.tbl.Delete(ctx, "Sales", "empid!000005", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	var names []string
	for e, err := range r.store.Find(ctx, "Sales", "name", []any{"Jones"}, &secondaryindex.LookupOptions{Concurrency: 3, PageSize: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Value.FirstName)
	}
	if len(names) != 19 || names[0] != "F00" || names[5] != "F06" || names[18] != "F19" {
		t.Fatalf("Find: %v, want F00..F19 without F05, in order", names)
	}
	for range 6 { // more than the client's retries
		r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return strings.Contains(q.URL.Path, "empid!000007") }, Status: 500})
	}
	var err error
	n := 0
	for _, err = range r.store.Find(ctx, "Sales", "name", []any{"Jones"}, nil) {
		if err != nil {
			break
		}
		n++
	}
	if err == nil || !strings.Contains(err.Error(), "000007") || n != 6 {
		t.Fatalf("Find with a primary that cannot be read: %d entities, then %v", n, err)
	}
}

// Rebuild repairs an entity that lost copies of both kinds: its
// SamePartition copy in its own transaction, its OtherPartition copy by
// reconciling it.
func TestRebuildBothKindsOfDrift(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), true)
	ctx := context.Background()
	w := r.worker(t)
	if _, err := r.store.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	for _, k := range [][2]string{{"Sales", "email!jonesj@contoso.2Ecom"}, {"email2!Sales", "email2!jonesj@contoso.2Ecom"}} {
		if err := r.tbl.Delete(ctx, k[0], k[1], azcore.ETagAny); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := r.store.Rebuild(ctx, ""); err != nil || len(d.Missing) != 2 || d.Fixed != 2 {
		t.Fatalf("Rebuild: %+v, %v", d, err)
	}
	r.clean(t, "")
}
