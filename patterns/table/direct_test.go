package table_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestDirectPathMatchesSDK checks the direct path (requests built from the
// codec's bytes) against the SDK's methods on the same data: every EDM type
// written by one and read by the other, keys that need quoting and
// escaping, continuation tokens, ETags, and batch failures.
func TestDirectPathMatchesSDK(t *testing.T) {
	t.Parallel()
	direct, ft := newTable[allTypes](t)
	if !table.Direct(direct) {
		t.Fatal("a client from tablekit's constructors should use the direct path")
	}
	sdk := table.SDKPath(direct)
	ctx := context.Background()
	s, i64 := "pointed", int64(math.MinInt64)
	values := []allTypes{
		{S: "héllo 'q' \"dq\" <&> \u2028 😀 \x01", B: true, I8: -128, I16: -32768, I32: math.MaxInt32, U8: 255, U16: 65535,
			U32: math.MaxUint32, I: math.MaxInt64, I64: math.MaxInt64, F32: 1.5, F64: 2,
			T: time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC), Bin: []byte{0, 1, 255}, G: uuidLike{1, 2, 3},
			GS: "4185404a-5818-48c3-b9be-f217df0dba6f", PS: &s, PI64: &i64, J: map[string][]int{"a": {1}}, Renamed: "r"},
		{I64: math.MinInt64, F64: math.Inf(-1), Bin: []byte{}},
		{F64: math.NaN(), F32: 1e-7},
		{F64: 1e21, T: time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	// Keys with quotes, spaces, percent signs and non-ASCII text.
	rowKeys := []string{"O'Brien", "a b%20c", "ü€😀", "''"}
	paths := map[string][2]*table.Table[allTypes]{"direct->sdk": {direct, sdk}, "sdk->direct": {sdk, direct}}
	for name, p := range paths {
		w, r := p[0], p[1]
		for i, v := range values {
			v.PartitionKey, v.RowKey = "p "+name+"'", rowKeys[i]
			res, err := w.Insert(ctx, v)
			if err != nil {
				t.Fatalf("%s %d: Insert: %v", name, i, err)
			}
			got, err := value(r.Get(ctx, v.PartitionKey, v.RowKey, nil))
			if err != nil {
				t.Fatalf("%s %d: Get: %v", name, i, err)
			}
			want := v
			want.Meta = got.Meta
			if got.ETag != res.ETag || !equalAll(got, want) {
				t.Fatalf("%s %d:\n got %+v\nwant %+v (ETag %s)", name, i, got, want, res.ETag)
			}
			got.S = "changed"
			up, err := w.Update(ctx, got, got.ETag, table.Merge)
			if err != nil {
				t.Fatalf("%s %d: Update: %v", name, i, err)
			}
			if again, _ := value(r.Get(ctx, v.PartitionKey, v.RowKey, nil)); again.S != "changed" || again.ETag != up.ETag {
				t.Fatalf("%s %d: after Update %+v", name, i, again)
			}
			if err := w.Delete(ctx, v.PartitionKey, v.RowKey, up.ETag); err != nil {
				t.Fatalf("%s %d: Delete: %v", name, i, err)
			}
			if _, err := r.Get(ctx, v.PartitionKey, v.RowKey, nil); !errors.Is(err, table.ErrNotFound) {
				t.Fatalf("%s %d: Get after Delete: %v", name, i, err)
			}
		}
	}

	// Queries and cursors: the same pages, and a cursor from one path
	// resumes on the other.
	var ops []table.Op
	for i := range 250 {
		ops = append(ops, direct.InsertOp(allTypes{PartitionKey: "q", RowKey: fmt.Sprintf("%03d", i), I32: int32(i), F64: float64(i) / 3}))
	}
	res, err := direct.Submit(ctx, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := &table.Query{Filter: table.And(table.PartitionKey("q"), table.Ge("I32", 10)), PageSize: 100, Limit: 200}
	a, err := table.Collect(direct.Query(ctx, q))
	if err != nil {
		t.Fatal(err)
	}
	b, err := table.Collect(sdk.Query(ctx, q))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 200 || !slices.EqualFunc(a, b, equalAll) || a[0].ETag != res.Ops[10].ETag {
		t.Fatalf("queries differ: %d and %d entities", len(a), len(b))
	}
	p1, err := direct.QueryPage(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := table.Collect(sdk.Query(ctx, &table.Query{Filter: q.Filter, PageSize: 100, Limit: 200, Cursor: p1.Next}))
	if err != nil || len(rest) != 100 || rest[0].RowKey != "110" {
		t.Fatalf("resumed on the other path: %d entities (%v)", len(rest), err)
	}

	// A batch update of a key with a quote: the direct path doubles the
	// quote in the operation's URL (aztables' batch does not).
	quoted := allTypes{PartitionKey: "q", RowKey: "O'Neil", S: "v1"}
	if _, err := direct.Submit(ctx, []table.Op{direct.InsertOp(quoted)}, nil); err != nil {
		t.Fatal(err)
	}
	quoted.S = "v2"
	if _, err := direct.Submit(ctx, []table.Op{direct.UpsertOp(quoted, table.Merge)}, nil); err != nil {
		t.Fatalf("batch merge of a quoted key: %v", err)
	}
	if got, _ := value(sdk.Get(ctx, "q", "O'Neil", nil)); got.S != "v2" {
		t.Fatalf("quoted key: %+v", got)
	}

	// The same batch failure, reported the same way, in as many round trips.
	var counts []int
	for _, tb := range []*table.Table[allTypes]{direct, sdk} {
		ft.Reset()
		_, err := tb.Submit(ctx, []table.Op{
			tb.UpsertOp(allTypes{PartitionKey: "q", RowKey: "new"}, table.Replace),
			tb.InsertOp(allTypes{PartitionKey: "q", RowKey: "005"}), // exists
			tb.DeleteOp("q", "006", azcore.ETagAny),
		}, nil)
		var oe *table.OpError
		if !errors.As(err, &oe) || oe.Index != 1 || oe.Err.StatusCode != 409 || oe.Err.Code != "EntityAlreadyExists" {
			t.Fatalf("direct %v: Submit = %v", table.Direct(tb), err)
		}
		counts = append(counts, ft.Count())
	}
	if counts[0] != 1 || counts[1] != 1 {
		t.Fatalf("round trips %v, want 1 each", counts)
	}
}
