package table_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestQueryPageLimitAcrossPages pages with QueryPage and Limit 4 in pages
// of 3: the cursor carries the count, so the loop gets 4 entities, and the
// second page asks only for the missing one.
func TestQueryPageLimitAcrossPages(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	load(t, tb, "Sales", 10)
	ctx := context.Background()
	ft.Reset()
	q := &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 3, Limit: 4}
	var got []employee
	for {
		p, err := tb.QueryPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Items...)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	if len(got) != 4 || ft.Count() != 2 || !strings.Contains(ft.Requests()[1].URL, "%24top=1") {
		t.Fatalf("%d entities in %d round trips", len(got), ft.Count())
	}
	// Pages hands out the cursor after each page; resuming from it in a
	// "new process" (a fresh Query value) continues the same count.
	var saved table.Cursor
	for p, err := range tb.Pages(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 3, Limit: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		saved = p.Next
		break
	}
	rest, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 3, Limit: 7, Cursor: saved}))
	if err != nil || len(rest) != 4 || rest[0].ID != "000003" {
		t.Fatalf("resumed: %d entities from %v (%v)", len(rest), rest, err)
	}
}

// TestCursorBoundToItsQuery resumes a Marketing cursor on a Sales query,
// and with another projection: both are rejected before the network.
func TestCursorBoundToItsQuery(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	load(t, tb, "Marketing", 5)
	ctx := context.Background()
	p, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Marketing"), PageSize: 2})
	if err != nil || p.Next == "" {
		t.Fatal(p, err)
	}
	ft.Reset()
	for _, q := range []*table.Query{
		{Filter: table.PartitionKey("Sales"), Cursor: p.Next},
		{Filter: table.PartitionKey("Marketing"), Select: []string{"Age"}, Cursor: p.Next},
		{Filter: table.PartitionKey("Marketing"), Cursor: "c2.not.a.cursor"},
	} {
		if _, err := tb.QueryPage(ctx, q); !errors.Is(err, table.ErrInvalidFilter) {
			t.Fatalf("QueryPage(%+v) = %v; want ErrInvalidFilter", q, err)
		}
	}
	if ft.Count() != 0 {
		t.Fatalf("%d requests sent", ft.Count())
	}
	// The same query resumes.
	rest, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Marketing"), PageSize: 2, Cursor: p.Next}))
	if err != nil || len(rest) != 3 {
		t.Fatalf("resumed: %d, %v", len(rest), err)
	}
}

// TestQueryLimitsCheckedBeforeTheNetwork: an empty Or, more than 15
// comparisons, an OData keyword as a property name, and a query string
// over maxQueryLength fail with nothing sent.
func TestQueryLimitsCheckedBeforeTheNetwork(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	var allow []table.Filter // an allow-list that turned out empty
	many := make([]table.Filter, table.MaxFilterComparisons+1)
	for i := range many {
		many[i] = table.Eq("Age", int32(i))
	}
	cases := []struct {
		name string
		q    *table.Query
		want error
	}{
		{"empty Or", &table.Query{Filter: table.And(table.PartitionKey("tenant1"), table.Or(allow...))}, table.ErrInvalidFilter},
		{"16 comparisons", &table.Query{Filter: table.Or(many...)}, table.ErrInvalidFilter},
		{"keyword property", &table.Query{Filter: table.Eq("null", "x")}, table.ErrInvalidFilter},
		{"keyword in Select", &table.Query{Select: []string{"and"}}, table.ErrInvalidEntity},
		{"long query", &table.Query{Filter: table.Eq("FirstName", strings.Repeat("x", table.MaxQueryLength))}, table.ErrTooLarge},
	}
	for _, c := range cases {
		if _, err := tb.QueryPage(ctx, c.q); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	if ft.Count() != 0 {
		t.Fatalf("%d requests sent", ft.Count())
	}
	// Exactly the limit of comparisons is accepted.
	if _, err := tb.QueryPage(ctx, &table.Query{Filter: table.Or(many[1:]...)}); err != nil {
		t.Fatal(err)
	}
	// A struct with a keyword property name is rejected by New.
	type bad struct {
		PartitionKey, RowKey string
		Eq                   int32 `table:"eq"`
	}
	if err := newErr[bad](tb.Client()); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("New with a property named eq = %v", err)
	}
}

// TestCursorErrorsBounded: a cursor of a MiB, plain-looking or not, is
// refused with ErrInvalidFilter in an error of at most 200 bytes (which
// spans and logs carry too), nothing sent; so is a cursor of another
// query.
func TestCursorErrorsBounded(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	tb := testrig.NewTable[employee](t, r.Table())
	ctx := context.Background()
	if _, err := tb.Submit(ctx, []table.Op{tb.InsertOp(employee{Department: "Sales", ID: "1"}), tb.InsertOp(employee{Department: "Sales", ID: "2"})}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 1})
	if err != nil || p.Next == "" {
		t.Fatal(p, err)
	}
	resume := func(c table.Cursor) error {
		_, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Sales"), Cursor: c})
		return err
	}
	r.CheckCursorsRefused(t, table.ErrInvalidFilter, resume, testrig.HugeCursors()...)
	r.CheckCursorsRefused(t, table.ErrInvalidFilter, func(c table.Cursor) error {
		_, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Marketing"), Cursor: c})
		return err
	}, p.Next)
}
