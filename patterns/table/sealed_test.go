package table_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestSealedCursors: with a CursorKey a query's cursors show no key,
// every altered, cut or extended cursor is ErrInvalidFilter with nothing
// sent, a cursor resumes only its own query on its own table, in another
// handle made from the same secret (another process), and across a
// rotation of the secret; paging with them returns every entity once and
// keeps Limit's count. On each service (Cosmos DB's continuation tokens
// are the service's own).
func TestSealedCursors(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
		ctx := context.Background()
		c := r.Table()
		plain := testrig.NewTable[employee](t, c)
		tb := keycursor.Sealed(plain, testrig.CursorKey(t))
		if keycursor.KeyOf(tb) == nil || keycursor.KeyOf(plain) != nil {
			t.Fatal("CursorKey does not report the view's key")
		}
		var ops []table.Op
		var want []string
		for i := range 12 {
			e := employee{Department: "SalesDept", ID: fmt.Sprintf("person%02d@contoso.com", i)}
			ops = append(ops, tb.InsertOp(e))
			want = append(want, e.ID)
		}
		if _, err := tb.Submit(ctx, ops, nil); err != nil {
			t.Fatal(err)
		}
		query := func(c table.Cursor) *table.Query {
			return &table.Query{Filter: table.PartitionKey("SalesDept"), PageSize: 5, Cursor: c}
		}
		got, first := testrig.WalkPages(t, func(c table.Cursor) (table.Page[employee], error) {
			return tb.QueryPage(ctx, query(c))
		}, func(e employee) string { return e.ID }, "contoso", "SalesDept")
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want each of %v once", got, want)
		}
		resume := func(tb *table.Table[employee], q *table.Query) func(table.Cursor) error {
			return func(c table.Cursor) error {
				q := *q
				q.Cursor = c
				_, err := tb.QueryPage(ctx, &q)
				return err
			}
		}
		r.CheckSealed(t, first, table.ErrInvalidFilter, resume(tb, query("")), "contoso", "person", "SalesDept")

		// Another query, another table, a plain table, another secret:
		// refused; a plain cursor on the sealed table too.
		other := keycursor.Sealed(testrig.NewTable[employee](t, r.Table()), testrig.CursorKey(t))
		otherSecret, _ := table.NewCursorKey([]byte("another secret of at least 32 bytes"))
		for _, refuse := range []func(table.Cursor) error{
			resume(tb, &table.Query{Filter: table.PartitionKey("Other"), PageSize: 5}),
			resume(tb, &table.Query{Filter: table.PartitionKey("SalesDept"), Select: []string{"Age"}, PageSize: 5}),
			resume(other, query("")),
			resume(plain, query("")),
			resume(keycursor.Sealed(plain, otherSecret), query("")),
		} {
			r.CheckCursorsRefused(t, table.ErrInvalidFilter, refuse, first)
		}
		p, err := plain.QueryPage(ctx, query(""))
		if err != nil || p.Next == "" {
			t.Fatal(p, err)
		}
		if r.Profile().Sorted && !testrig.CursorShows(p.Next, "contoso") {
			t.Fatalf("plain cursor %q: CursorShows misses the next RowKey", p.Next)
		}
		r.CheckCursorsRefused(t, table.ErrInvalidFilter, resume(tb, query("")), p.Next)

		// Another process: a table handle and a key of its own, from the
		// same secret; and after a rotation (a new secret first, the old
		// one kept).
		again := keycursor.Sealed(testrig.NewTable[employee](t, r.TableClient(tb.Name(), r.TableOptions())), testrig.CursorKey(t))
		rotatedKey, err := table.NewCursorKey([]byte("the new secret, of at least 32 bytes"), testrig.CursorSecret)
		if err != nil {
			t.Fatal(err)
		}
		rotated := keycursor.Sealed(again, rotatedKey)
		for _, h := range []*table.Table[employee]{again, rotated} {
			rest, err := table.Collect(h.Query(ctx, query(first)))
			if err != nil || len(rest) != 7 {
				t.Fatalf("resumed in another handle: %d entities, %v", len(rest), err)
			}
		}
		p, err = rotated.QueryPage(ctx, query(""))
		if err != nil || p.Next == "" {
			t.Fatal(p, err)
		}
		if rest, err := table.Collect(rotated.Query(ctx, query(p.Next))); err != nil || len(rest) != 7 {
			t.Fatalf("a cursor of the new secret: %d entities, %v", len(rest), err)
		}
		r.CheckCursorsRefused(t, table.ErrInvalidFilter, resume(again, query("")), p.Next)

		// Limit's count travels sealed.
		q := &table.Query{Filter: table.PartitionKey("SalesDept"), PageSize: 5, Limit: 7}
		p, err = tb.QueryPage(ctx, q)
		if err != nil || len(p.Items) != 5 || p.Next == "" {
			t.Fatal(p, err)
		}
		q.Cursor = p.Next
		if p, err = again.QueryPage(ctx, q); err != nil || len(p.Items) != 2 || p.Next != "" {
			t.Fatalf("second page of Limit 7: %d entities, next %q, %v", len(p.Items), p.Next, err)
		}
	})
}

// TestNewCursorKey refuses a secret shorter than 32 bytes, old or new,
// without showing it.
func TestNewCursorKey(t *testing.T) {
	long := []byte("a secret of exactly thirty-two b")
	for _, c := range []struct {
		secret []byte
		older  [][]byte
	}{{nil, nil}, {[]byte("hunter2"), nil}, {long, [][]byte{[]byte("hunter2")}}} {
		k, err := table.NewCursorKey(c.secret, c.older...)
		if k != nil || !errors.Is(err, table.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("NewCursorKey(%q, %q) = %v, %v", c.secret, c.older, k, err)
		}
	}
	if _, err := table.NewCursorKey(long); err != nil {
		t.Fatal(err)
	}
}
