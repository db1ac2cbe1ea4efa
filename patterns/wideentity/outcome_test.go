package wideentity_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestLostResponses loses the response of every kind of write after the
// service applied it: each is reported applied (Verified when the retry's
// answer had to be settled by reading), the entity is the one written, and
// its rows are exactly the layout's, none twice, none left over. A lost
// Delete is ErrOutcomeUnknown (and ErrNotFound): nothing is left to read.
func TestLostResponses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	s2 := newStore[table.Dynamic](t, f, 2)
	ctx := context.Background()
	lose := func() { f.ft.Inject(faults.Fault{Match: isBatch, LoseResponse: true}) }
	expect := func(what string, parts int, want map[string]any) azcore.ETag {
		t.Helper()
		e, err := s.Get(ctx, "p", "r")
		if err != nil {
			t.Fatalf("%s: Get: %v", what, err)
		}
		for name, v := range want {
			if e.Value.Properties[name] != v {
				t.Fatalf("%s: %s = %v, want %v", what, name, e.Value.Properties[name], v)
			}
		}
		if rks, _ := f.rows(t, "p"); !slices.Equal(rks, wantRows("r", parts)) || e.Parts != parts {
			t.Fatalf("%s: rows %v, want %v", what, rks, wantRows("r", parts))
		}
		return e.ETag
	}

	lose()
	res, err := s.Insert(ctx, at("p", "r", bag(300, 0)))
	if err != nil || !res.Verified {
		t.Fatalf("Insert = %+v, %v", res, err)
	}
	etag := expect("Insert", 4, map[string]any{"P0299": int64(299)})

	lose()
	if res, err = s.Update(ctx, at("p", "r", bag(300, 1000)), etag, table.Replace); err != nil || !res.Verified {
		t.Fatalf("Update = %+v, %v", res, err)
	}
	expect("Update", 4, map[string]any{"P0299": int64(1299)})

	lose()
	if _, err = s.Update(ctx, at("p", "r", bag(200, 2000)), azcore.ETagAny, table.Replace); err != nil {
		t.Fatalf("Update with ETagAny: %v", err)
	}
	etag = expect("Update with ETagAny", 4, map[string]any{"P0199": int64(2199), "P0299": nil})

	lose()
	one := table.Dynamic{Properties: map[string]any{"P0005": int64(-5), "P0150": int64(-150)}}
	if res, err = s.Update(ctx, at("p", "r", one), etag, table.Fields("P0005", "P0150")); err != nil || !res.Verified {
		t.Fatalf("Fields update = %+v, %v", res, err)
	}
	expect("Fields update", 4, map[string]any{"P0005": int64(-5), "P0150": int64(-150), "P0006": int64(2006)})

	lose()
	one.Properties["P0005"] = int64(-55)
	if _, err = s.Update(ctx, at("p", "r", one), azcore.ETagAny, table.Fields("P0005")); err != nil {
		t.Fatalf("a Fields update with ETagAny: %v", err)
	}
	expect("a Fields update with ETagAny", 4, map[string]any{"P0005": int64(-55)})

	lose()
	calls := 0
	if _, err = s.Modify(ctx, "p", "r", func(d *table.Dynamic) error {
		calls++
		d.Properties["P0000"] = d.Properties["P0000"].(int64) + 1
		return nil
	}); err != nil || calls != 1 {
		t.Fatalf("Modify = %v, fn called %d times", err, calls)
	}
	etag = expect("Modify", 4, map[string]any{"P0000": int64(2001)})

	// A layout change: the first transaction answers 404, the header is
	// read, and the response of the second transaction is lost.
	var batches atomic.Int32
	f.ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return isBatch(r) && batches.Add(1) == 2 }, LoseResponse: true})
	if res, err = s2.Update(ctx, at("p", "r", bag(50, 3000)), etag, table.Replace); err != nil || !res.Verified {
		t.Fatalf("Update into another layout = %+v, %v", res, err)
	}
	etag = expect("Update into another layout", 2, map[string]any{"P0049": int64(3049), "P0050": nil})

	lose()
	err = s2.Delete(ctx, "p", "r", etag)
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete = %v", err)
	}
	if rks, _ := f.rows(t, "p"); len(rks) != 0 {
		t.Fatalf("rows after Delete: %v", rks)
	}
}

// TestCrashPoints stops the process (cancels the context) at each point of
// the crash table: the entity is always one whole version.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	s2 := newStore[table.Dynamic](t, f, 2)
	ctx := context.Background()
	if _, err := s.Insert(ctx, at("p", "r", bag(300, 0))); err != nil {
		t.Fatal(err)
	}
	whole := func(what string, parts int, base int64) {
		t.Helper()
		e, err := s.Get(ctx, "p", "r")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for name, v := range e.Value.Properties {
			if v.(int64) != base+int64(atoi(name[1:])) {
				t.Fatalf("%s: %s = %v, not of the version based at %d", what, name, v, base)
			}
		}
		if rks, _ := f.rows(t, "p"); !slices.Equal(rks, wantRows("r", parts)) {
			t.Fatalf("%s: rows %v, want %v", what, rks, wantRows("r", parts))
		}
	}
	// Stopped between Modify's read and its transaction: never sent.
	cctx, cancel := context.WithCancel(ctx)
	f.ft.Inject(faults.Fault{Match: func(r *http.Request) bool {
		if isBatch(r) {
			cancel()
			return true
		}
		return false
	}, Err: context.Canceled})
	_, err := s.Modify(cctx, "p", "r", func(d *table.Dynamic) error { *d = at("p", "r", bag(300, 5000)); return nil })
	if err == nil {
		t.Fatal("Modify succeeded after its context ended")
	}
	whole("stopped between read and write", 4, 0)

	// Stopped after the transaction committed, before its answer: unknown,
	// and the new version is stored whole.
	e, _ := s.Get(ctx, "p", "r")
	cctx, cancel = context.WithCancel(ctx)
	f.ft.Inject(faults.Fault{Match: isBatch, LoseResponse: true, AfterServer: cancel})
	if _, err := s.Update(cctx, at("p", "r", bag(300, 7000)), e.ETag, table.Replace); !errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("Update stopped after commit = %v", err)
	}
	whole("stopped after commit", 4, 7000)

	// Stopped in a layout change, between the header read and the second
	// transaction: the old layout, whole.
	e, _ = s.Get(ctx, "p", "r")
	cctx, cancel = context.WithCancel(ctx)
	var batches atomic.Int32
	f.ft.Inject(faults.Fault{Match: func(r *http.Request) bool {
		if isBatch(r) && batches.Add(1) == 2 {
			cancel()
			return true
		}
		return false
	}, Err: context.Canceled})
	if _, err := s2.Update(cctx, at("p", "r", bag(300, 9000)), e.ETag, table.Replace); err == nil {
		t.Fatal("Update succeeded after its context ended")
	}
	whole("stopped in a layout change", 4, 7000)
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestVerifiedWritesReturnETag: a write whose transaction's response was
// lost, settled by reading (Verified), returns the header's ETag when
// nothing wrote since (table.Result's contract), so the next conditional
// write with it succeeds: Insert, Update and Modify, also when they move
// the entity to another layout.
func TestVerifiedWritesReturnETag(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	s2 := newStore[table.Dynamic](t, f, 2)
	ctx := context.Background()
	check := func(what string, res table.Result, err error) azcore.ETag {
		t.Helper()
		if err != nil || !res.Verified {
			t.Fatalf("%s = %+v, %v; want a verified success", what, res, err)
		}
		e, err := s.Get(ctx, "p", "r")
		if err != nil {
			t.Fatal(err)
		}
		if res.ETag == "" || res.ETag != e.ETag {
			t.Fatalf("%s returned ETag %q, the header's is %q", what, res.ETag, e.ETag)
		}
		return res.ETag
	}
	lose := func() { f.ft.Inject(faults.Fault{Match: isBatch, LoseResponse: true}) }

	lose()
	res, err := s.Insert(ctx, at("p", "r", bag(300, 0)))
	etag := check("Insert", res, err)

	res, err = s.Update(ctx, at("p", "r", bag(300, 100)), etag, table.Replace)
	if err != nil {
		t.Fatalf("Update with the ETag of a verified Insert: %v", err)
	}
	etag = res.ETag

	// Into Parts 2: a transaction answering 404, a header read, and the
	// transaction for the stored layout, whose response is lost.
	var batches atomic.Int32
	f.ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return isBatch(r) && batches.Add(1) == 2 }, LoseResponse: true})
	res, err = s2.Update(ctx, at("p", "r", bag(300, 200)), etag, table.Replace)
	etag = check("Update into another layout", res, err)

	lose()
	res, err = s2.Update(ctx, at("p", "r", bag(1, -1)), etag, table.Fields("P0000"))
	check("Fields update", res, err) // Modify reads the ETag itself

	lose()
	e, err := s.Modify(ctx, "p", "r", func(d *table.Dynamic) error { d.Properties["P0001"] = int64(-1); return nil })
	etag = check("Modify into another layout", table.Result{ETag: e.ETag, Verified: true}, err)

	if err := s.Delete(ctx, "p", "r", etag); err != nil {
		t.Fatalf("Delete with the ETag of a verified Modify: %v", err)
	}
}
