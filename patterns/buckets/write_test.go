package buckets_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestUpdateDelete: Update replaces the entity in its bucket if the ETag
// read still matches, Delete removes it likewise, one round trip each; a
// stale ETag is ErrPreconditionFailed and changes nothing; an empty one is
// ErrNoETag (and ErrInvalid) with nothing sent; a missing entity is
// ErrNotFound.
func TestUpdateDelete(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	ctx := context.Background()
	ins, err := s.Insert(ctx, access{Hour: "h", Key: "k", Employee: "1", Resource: "door"})
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	upd, err := s.Update(ctx, access{Hour: "h", Key: "k", Employee: "2"}, ins.ETag)
	if err != nil || upd.Partition != ins.Partition || upd.ETag == ins.ETag || upd.ETag == "" {
		t.Fatalf("Update = %+v, %v (inserted %+v)", upd, err, ins)
	}
	if n := ft.Count(); n != 1 {
		t.Fatalf("Update: %d round trips, want 1", n)
	}
	e, err := s.Get(ctx, "h", "k")
	if err != nil || e.Value != (access{Hour: "h", Key: "k", Employee: "2"}) || e.ETag != upd.ETag || e.Partition != ins.Partition {
		t.Fatalf("Get after Update = %+v, %v (a replace leaves no Resource)", e, err)
	}
	// The ETag of the insert is stale now: nothing changes.
	if _, err := s.Update(ctx, access{Hour: "h", Key: "k", Employee: "3"}, ins.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v", err)
	}
	if err := s.Delete(ctx, "h", "k", ins.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale ETag = %v", err)
	}
	if e, err := s.Get(ctx, "h", "k"); err != nil || e.ETag != upd.ETag || e.Value.Employee != "2" {
		t.Fatalf("after refused writes: %+v, %v", e, err)
	}
	ft.Reset()
	if _, err := s.Update(ctx, access{Hour: "h", Key: "k"}, ""); !errors.Is(err, table.ErrNoETag) || !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("Update without an ETag = %v", err)
	}
	if err := s.Delete(ctx, "h", "k", ""); !errors.Is(err, table.ErrNoETag) || !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("Delete without an ETag = %v", err)
	}
	if err := s.Delete(ctx, "", "k", azcore.ETagAny); !errors.Is(err, buckets.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
		t.Fatalf("Delete with an empty PartitionKey = %v", err)
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests for refused writes", n)
	}
	if err := s.Delete(ctx, "h", "k", upd.ETag); err != nil {
		t.Fatal(err)
	}
	if n := ft.Count(); n != 1 {
		t.Fatalf("Delete: %d round trips, want 1", n)
	}
	if _, err := s.Get(ctx, "h", "k"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if err := s.Delete(ctx, "h", "k", azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete of a missing entity = %v", err)
	}
	if _, err := s.Update(ctx, access{Hour: "h", Key: "k"}, azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Update of a missing entity = %v", err)
	}
}

// TestUpdateDeleteEarlier: an entity written under an earlier count is
// updated and deleted where it is stored (it does not move), after one
// round trip to its bucket under the current count; UpdateOp and DeleteOp,
// which address one bucket, are refused with earlier counts, nothing sent.
func TestUpdateDeleteEarlier(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	old, err := newSpread(t, tb, &buckets.Options{Buckets: 1}).Insert(ctx, access{Hour: "h", Key: "k", Employee: "1"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSpread(t, tb, &buckets.Options{Buckets: 4, Earlier: []int{1}})
	ft.Reset()
	upd, err := s.Update(ctx, access{Hour: "h", Key: "k", Employee: "2"}, old.ETag)
	if err != nil || upd.Partition != old.Partition || upd.Partition != "h" {
		t.Fatalf("Update of an entity of count 1 = %+v, %v", upd, err)
	}
	if n := ft.Count(); n != 2 {
		t.Fatalf("Update: %d round trips, want 2 (its bucket under 4, then under 1)", n)
	}
	if e, err := s.Get(ctx, "h", "k"); err != nil || e.Partition != "h" || e.Value.Employee != "2" || e.ETag != upd.ETag {
		t.Fatalf("Get after Update = %+v, %v", e, err)
	}
	if _, err := s.Update(ctx, access{Hour: "h", Key: "k"}, old.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v", err)
	}
	ft.Reset()
	for name, op := range map[string]table.Op{
		"UpdateOp": s.UpdateOp(access{Hour: "h", Key: "k"}, upd.ETag),
		"DeleteOp": s.DeleteOp("h", "k", upd.ETag),
	} {
		if !errors.Is(op.Err(), buckets.ErrInvalid) || !errors.Is(op.Err(), table.ErrInvalid) {
			t.Fatalf("%s with earlier counts: %v", name, op.Err())
		}
		if _, err := tb.Submit(ctx, []table.Op{op}, nil); !errors.Is(err, buckets.ErrInvalid) {
			t.Fatalf("Submit of %s = %v", name, err)
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests for refused ops", n)
	}
	if err := s.Delete(ctx, "h", "k", upd.ETag); err != nil {
		t.Fatal(err)
	}
	if n := ft.Count(); n != 2 {
		t.Fatalf("Delete: %d round trips, want 2", n)
	}
	if _, err := s.Get(ctx, "h", "k"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
}

// TestUpdateDeleteOps: UpdateOp and DeleteOp in Submit are conditional as
// Update and Delete are (a stale ETag fails the transaction, nothing
// applied); an empty ETag is the op's Err (ErrNoETag, ErrInvalid).
func TestUpdateDeleteOps(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	ctx := context.Background()
	a, err := s.Insert(ctx, access{Hour: "h", Key: "a", Employee: "1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Insert(ctx, access{Hour: "h", Key: "b", Employee: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]table.Op{
		"UpdateOp": s.UpdateOp(access{Hour: "h", Key: "a"}, ""),
		"DeleteOp": s.DeleteOp("h", "a", ""),
	} {
		if !errors.Is(op.Err(), table.ErrNoETag) || !errors.Is(op.Err(), buckets.ErrInvalid) {
			t.Fatalf("%s without an ETag: %v", name, op.Err())
		}
	}
	// Stale: b's ETag for a.
	if _, err := tb.Submit(ctx, []table.Op{s.UpdateOp(access{Hour: "h", Key: "a", Employee: "2"}, b.ETag)}, nil); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("UpdateOp with a stale ETag = %v", err)
	}
	if _, err := tb.Submit(ctx, []table.Op{s.DeleteOp("h", "b", a.ETag)}, nil); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("DeleteOp with a stale ETag = %v", err)
	}
	ft.Reset()
	res, err := tb.Submit(ctx, []table.Op{
		s.UpdateOp(access{Hour: "h", Key: "a", Employee: "2"}, a.ETag),
		s.DeleteOp("h", "b", b.ETag),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := ft.Count(); n != res.Transactions {
		t.Fatalf("%d round trips for %d transactions", n, res.Transactions)
	}
	if e, err := s.Get(ctx, "h", "a"); err != nil || e.Value.Employee != "2" || e.ETag != res.Ops[0].ETag {
		t.Fatalf("a after UpdateOp = %+v, %v (op ETag %q)", e, err, res.Ops[0].ETag)
	}
	if _, err := s.Get(ctx, "h", "b"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("b after DeleteOp = %v", err)
	}
}

// TestDeleteLostResponse: a delete whose response is lost, and whose
// resend finds the entity gone, is an unknown outcome (it may have been
// the one that deleted it), not a reason to look in an earlier count's
// bucket, where it would end as a plain ErrNotFound.
func TestDeleteLostResponse(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	s := newSpread(t, tb, &buckets.Options{Buckets: 4, Earlier: []int{1}})
	ins, err := s.Insert(ctx, access{Hour: "h", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodDelete }, LoseResponse: true})
	err = s.Delete(ctx, "h", "k", ins.ETag)
	deletes := 0
	for _, r := range ft.Requests() {
		if r.Method == http.MethodDelete {
			deletes++
		}
	}
	if deletes != 2 {
		t.Fatalf("%d DELETE requests, want 2 (the lost one and its resend)", deletes)
	}
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete with its response lost = %v", err)
	}
	for _, r := range ft.Requests() {
		if r.Method == http.MethodDelete && strings.Contains(r.URL, "PartitionKey='h'") {
			t.Fatalf("Delete looked in the bucket of count 1 after an unknown outcome")
		}
	}
	if _, err := s.Get(ctx, "h", "k"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after the lost Delete = %v", err)
	}
}
