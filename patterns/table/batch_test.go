package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

func emp(dept string, id int) employee {
	return employee{Department: dept, ID: keys.Pad(uint64(id), 6), FirstName: "F", LastName: "L", Age: int32(20 + id%40)}
}

func count[T any](t *testing.T, tb *table.Table[T], f table.Filter) int {
	t.Helper()
	all, err := table.Collect(tb.Query(context.Background(), &table.Query{Filter: f, Select: []string{"RowKey"}}))
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

func TestSubmitChunksAt100AndReportsETags(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	var ops []table.Op
	for i := 0; i < 250; i++ {
		ops = append(ops, tb.InsertOp(emp("Sales", i)))
	}
	for i := 0; i < 30; i++ {
		ops = append(ops, tb.InsertOp(emp("Marketing", i)))
	}
	res, err := tb.Submit(ctx, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions != 4 || ft.Count() != 4 {
		t.Fatalf("%d transactions, %d requests; want 4 (100+100+50 Sales, 30 Marketing)", res.Transactions, ft.Count())
	}
	for _, r := range ft.Requests() {
		if n := bytes.Count(r.Body, []byte("\r\nContent-Type: application/http")); n > table.Storage.MaxBatchOps {
			t.Fatalf("a transaction holds %d operations", n)
		}
	}
	if n := count(t, tb, table.PartitionKey("Sales")); n != 250 {
		t.Fatalf("%d Sales entities stored, want 250", n)
	}
	for _, i := range []int{0, 99, 100, 249, 279} {
		r := res.Ops[i]
		got, err := tb.Get(ctx, batchplan.PartitionKey(ops[i]), batchplan.RowKey(ops[i]), nil)
		if err != nil || !r.Applied || r.ETag == "" || r.ETag != got.ETag {
			t.Fatalf("op %d: result %+v, stored ETag %q (%v)", i, r, got.ETag, err)
		}
	}
}

func TestSubmitReportsTheFailingOp(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[employee](t)
	ctx := context.Background()
	for _, failAt := range []int{0, 5, 137, 149} {
		dept := fmt.Sprintf("D%d", failAt)
		if _, err := tb.Insert(ctx, emp(dept, failAt)); err != nil {
			t.Fatal(err)
		}
		var ops []table.Op
		for i := 0; i < 150; i++ {
			ops = append(ops, tb.InsertOp(emp(dept, i)))
		}
		res, err := tb.Submit(ctx, ops, nil)
		var be *table.BatchError
		if !errors.As(err, &be) || !errors.Is(err, table.ErrAlreadyExists) {
			t.Fatalf("failAt %d: Submit = %v, want a BatchError with ErrAlreadyExists", failAt, err)
		}
		var oe *table.OpError
		if !errors.As(res.Ops[failAt].Err, &oe) || oe.Index != failAt || oe.Err.RowKey != batchplan.RowKey(ops[failAt]) ||
			oe.Err.StatusCode != 409 || oe.Err.Code != "EntityAlreadyExists" {
			t.Fatalf("failAt %d: op result %v, want an OpError naming op %d, its keys, 409 EntityAlreadyExists", failAt, res.Ops[failAt].Err, failAt)
		}
		var re *azcore.ResponseError
		if !errors.As(res.Ops[failAt].Err, &re) {
			t.Fatalf("failAt %d: the op error does not unwrap to a ResponseError", failAt)
		}
		// Its transaction (ops 0-99 or 100-149) was rolled back; by default the
		// partition's later transaction is not sent.
		lo, hi := 0, 100
		if failAt >= 100 {
			lo, hi = 100, 150
		}
		for i := range ops {
			r := res.Ops[i]
			switch {
			case i == failAt:
			case i >= lo && i < hi || i >= hi:
				if r.Applied || !errors.Is(r.Err, table.ErrNotApplied) {
					t.Fatalf("failAt %d: op %d = %+v, want not applied", failAt, i, r)
				}
			default:
				if !r.Applied {
					t.Fatalf("failAt %d: op %d of an earlier transaction = %+v, want applied", failAt, i, r)
				}
			}
		}
		if n := count(t, tb, table.PartitionKey(dept)); n != 1+lo {
			t.Fatalf("failAt %d: %d entities stored, want %d", failAt, n, 1+lo)
		}
		if be.Failed != 150-lo {
			t.Fatalf("failAt %d: BatchError.Failed = %d, want %d", failAt, be.Failed, 150-lo)
		}
	}
}

func TestSubmitStaleETagAndContinueOnError(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[employee](t)
	ctx := context.Background()
	r1, _ := tb.Insert(ctx, emp("S", 1))
	e := emp("S", 1)
	e.Age = 99
	if _, err := tb.Update(ctx, e, r1.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	var ops []table.Op
	ops = append(ops, tb.UpdateOp(e, r1.ETag, table.Replace)) // stale
	for i := 2; i < 102; i++ {
		ops = append(ops, tb.InsertOp(emp("S", i)))
	}
	res, err := tb.Submit(ctx, ops, &table.BatchOptions{ContinueOnError: true})
	if !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Submit = %v, want ErrPreconditionFailed", err)
	}
	// Ops 0-99 failed together; op 100 (RowKey 000101) went in the next transaction.
	if res.Ops[1].Applied || !res.Ops[100].Applied || res.Transactions != 2 {
		t.Fatalf("results %+v %+v, %d transactions", res.Ops[1], res.Ops[100], res.Transactions)
	}
}

func TestSubmitAtomicGroupsAndDuplicates(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	// Duplicated keys outside a group: split into separate transactions in order.
	a := emp("P", 1)
	b := a
	b.Age = 77
	res, err := tb.Submit(ctx, []table.Op{tb.InsertOp(a), tb.UpsertOp(b, table.Merge)}, nil)
	if err != nil || res.Transactions != 2 {
		t.Fatalf("Submit = %v with %d transactions, want 2 in order", err, res.Transactions)
	}
	if got, _ := value(tb.Get(ctx, "P", a.ID, nil)); got.Age != 77 {
		t.Fatalf("Age = %d, want the later op's 77", got.Age)
	}
	// Invalid groups fail before any request.
	ft.Reset()
	big := make([]table.Op, 101)
	for i := range big {
		big[i] = tb.InsertOp(emp("P", 100+i))
	}
	cases := map[string]struct {
		ops  []table.Op
		want error
	}{
		"two partitions": {table.Atomic(tb.InsertOp(emp("P", 2)), tb.InsertOp(emp("Q", 2))), table.ErrInvalidBatch},
		"duplicate":      {table.Atomic(tb.InsertOp(emp("P", 3)), tb.DeleteOp("P", keys.Pad(3, 6), azcore.ETagAny)), table.ErrInvalidBatch},
		"over 100":       {table.Atomic(big...), table.ErrTooLarge},
		"bad key":        {[]table.Op{tb.InsertOp(emp("P", 4)), tb.InsertOp(employee{Department: "P", ID: "a/b"})}, table.ErrInvalidKey},
		"no etag":        {[]table.Op{tb.UpdateOp(emp("P", 4), "", table.Merge)}, table.ErrNoETag},
		// The group is sent at its first op, which would move its delete of
		// 000006 ahead of the insert of 000006 that the caller put first.
		"reorder": {func() []table.Op {
			g := table.Atomic(tb.InsertOp(emp("P", 5)), tb.DeleteOp("P", keys.Pad(6, 6), azcore.ETagAny))
			return []table.Op{g[0], tb.InsertOp(emp("P", 6)), g[1]}
		}(), table.ErrInvalidBatch},
	}
	for name, c := range cases {
		res, err := tb.Submit(ctx, c.ops, nil)
		if !errors.Is(err, c.want) || res.Transactions != 0 {
			t.Errorf("%s: Submit = %v (%d transactions), want %v before the network", name, err, res.Transactions, c.want)
		}
		for i, r := range res.Ops {
			if r.Applied || r.Err == nil {
				t.Errorf("%s: op %d = %+v, want not applied", name, i, r)
			}
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests were sent for invalid batches", n)
	}
	// Several atomic groups share transactions but are never split.
	ft.Reset()
	var ops []table.Op
	for g := 0; g < 30; g++ {
		var grp []table.Op
		for j := 0; j < 7; j++ {
			grp = append(grp, tb.InsertOp(emp("G", g*10+j)))
		}
		ops = append(ops, table.Atomic(grp...)...)
	}
	res, err = tb.Submit(ctx, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 14 groups of 7 fit in 100 ops: 98 + 98 + 14 = 3 transactions.
	if res.Transactions != 3 {
		t.Fatalf("%d transactions for 30 groups of 7, want 3", res.Transactions)
	}
	for _, r := range ft.Requests() {
		n := bytes.Count(r.Body, []byte("\r\nContent-Type: application/http"))
		if n%7 != 0 {
			t.Fatalf("a transaction holds %d ops: a group was split", n)
		}
	}
}

type blobby struct {
	PartitionKey, RowKey string
	B0, B1, B2, B3, B4   []byte
	B5, B6, B7, B8, B9   []byte
	B10, B11, B12, B13   []byte
	B14                  []byte
}

// Entities of ~1.3 MB of JSON each (15 x 64 KiB binary, under the 1 MiB
// service size): 3 fit under 4 MiB, 4 do not. The planner's estimate must
// bound the real request body, and Azurite (which enforces 4 MiB) must
// accept every transaction.
func TestSubmitChunksNear4MiB(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[blobby](t)
	v := bytes.Repeat([]byte{7}, 64<<10)
	var ops []table.Op
	for i := 0; i < 7; i++ {
		e := blobby{PartitionKey: "p", RowKey: fmt.Sprint(i), B0: v, B1: v, B2: v, B3: v, B4: v, B5: v, B6: v, B7: v, B8: v, B9: v, B10: v, B11: v, B12: v, B13: v, B14: v}
		ops = append(ops, tb.InsertOp(e))
	}
	res, err := tb.Submit(context.Background(), ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions != 3 {
		t.Fatalf("%d transactions for 7 entities of ~1.3 MB, want 3 (3+3+1)", res.Transactions)
	}
	for _, r := range ft.Requests() {
		if len(r.Body) >= table.Storage.MaxBatchSize {
			t.Fatalf("a %d-byte transaction was sent", len(r.Body))
		}
		if len(r.Body) < 3*1_300_000 && strings.Count(string(r.Body), "\r\nContent-Type: application/http") == 3 {
			t.Fatalf("3 ops in only %d bytes: the test entities are smaller than planned", len(r.Body))
		}
	}
}

// The planner's size estimate is an upper bound of the body the SDK sends,
// and not a loose one.
func TestBatchSizeEstimateBoundsTheRealBody(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[allTypes](t)
	var ops []table.Op
	for i := 0; i < 60; i++ {
		e := allTypes{PartitionKey: "p'q é", RowKey: fmt.Sprintf("r%d ''%%", i), S: strings.Repeat("<&>\u2028\x01é", i*10), F64: 1e21, F32: 1e-7, Bin: []byte{1, 2}}
		ops = append(ops, tb.InsertOp(e))
	}
	ops = append(ops, tb.DeleteOp("p'q é", "x", azcore.ETag(`W/"datetime'2026-11-21T01%3A18%3A59.4714753Z'"`)))
	if _, err := tb.Submit(context.Background(), ops, nil); err == nil {
		t.Fatal("want the delete of a missing entity to fail the transaction")
	}
	body := ft.Requests()[0].Body
	est := batchplan.Size(ops)
	if est < len(body) || est > len(body)+len(ops)*1024+1024 {
		t.Fatalf("estimate %d for a %d-byte body: not a tight upper bound", est, len(body))
	}
}

// Every failed transaction's cause is reported, also when another
// transaction failed for a different reason.
func TestSubmitReportsEveryCause(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	if _, err := tb.Insert(ctx, emp("A", 1)); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("injected: connection to B broke")
	ft.Reset()
	ft.Inject(faults.Fault{Match: faults.BodyContains(`"PartitionKey":"B"`), Err: broken})
	ops := []table.Op{tb.InsertOp(emp("A", 1)), tb.InsertOp(emp("B", 1))}
	res, err := tb.Submit(ctx, ops, nil)
	if !errors.Is(err, table.ErrAlreadyExists) || !errors.Is(err, broken) {
		t.Fatalf("Submit = %v; want both the 409 of A and B's transport error", err)
	}
	// A's 409 is a definite rejection. B's transport error may have come
	// after the request was sent, and B's entity is absent: its insert
	// either never arrived or arrived and was deleted since, so its outcome
	// is unknown, never "not applied".
	if res.Ops[0].Applied || errors.Is(res.Ops[0].Err, table.ErrOutcomeUnknown) ||
		res.Ops[1].Applied || !errors.Is(res.Ops[1].Err, table.ErrOutcomeUnknown) {
		t.Fatalf("results %+v", res.Ops)
	}
	var be *table.BatchError
	if !errors.As(err, &be) || be.Failed != 2 || be.Unknown != 1 {
		t.Fatalf("BatchError = %+v", be)
	}
	// A cancelled context is reported as such.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = tb.Submit(cctx, []table.Op{tb.InsertOp(emp("C", 1))}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit with a cancelled context = %v", err)
	}
}

// TestSubmitRejectsZeroOp: a zero Op is an error naming it, before anything
// is sent (it used to fail as "unexpected end of JSON input").
func TestSubmitRejectsZeroOp(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	_, err := tb.Submit(context.Background(), []table.Op{tb.InsertOp(emp("A", 1)), {}}, nil)
	var oe *table.OpError
	if !errors.Is(err, table.ErrInvalidBatch) || !errors.As(err, &oe) || oe.Index != 1 || ft.Count() != 0 {
		t.Fatalf("Submit with a zero Op = %v after %d requests", err, ft.Count())
	}
	// A property bag with a uint64 gets the same hint as a struct field.
	dyn, _ := table.New[table.Dynamic](tb.Client(), nil)
	op := dyn.InsertOp(table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"U": uint64(1)}})
	if !errors.Is(op.Err(), table.ErrInvalidEntity) || !strings.Contains(op.Err().Error(), "use int64, or tag") {
		t.Fatalf("uint64 in a Dynamic: %v", op.Err())
	}
}
