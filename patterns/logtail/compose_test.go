package logtail_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
)

// person is another pattern's row in the log's partition.
type person struct {
	Dept string `table:",pk"`
	ID   string `table:",rk"`
	Name string
}

// A log with a Prefix shares the partition of the entities it records:
// AppendOp joins their write in one transaction (1 round trip for the
// entity and its entry), the log's reads never see the other rows, and
// the entries stay under the prefix.
func TestAppendOpJoinsTheEntitysTransaction(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	c := r.Table()
	entries := testrig.NewTable[login](t, c)
	people := testrig.NewTable[person](t, c)
	l, err := logtail.New(entries, &logtail.Options{Prefix: "log"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.Faults.Reset()
	for i := range 3 {
		hire := table.Change{By: "people", Ops: []table.Op{people.InsertOp(person{Dept: "Sales Team", ID: fmt.Sprint(i), Name: "P"})}}
		entry := table.Change{By: "log", Ops: []table.Op{l.AppendOp("Sales Team", login{IP: fmt.Sprint("hired ", i)})}}
		if _, err := people.Apply(ctx, hire, entry); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Faults.Count(); n != 3 {
		t.Fatalf("%d round trips for 3 entities with their entries, want 3", n)
	}
	got, err := l.Latest(ctx, "Sales Team", 10)
	if err != nil || len(got) != 3 || got[0].Value.IP != "hired 2" || got[0].PartitionKey != "Sales Team" || got[0].RowKey[:4] != "log!" {
		t.Fatalf("Latest = %+v, %v; want the 3 entries, newest first, in partition \"Sales Team\" under \"log!\"", got, err)
	}
	var rows []string
	for p, err := range people.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales Team"), table.Lt("RowKey", "log"))}) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, p.ID)
	}
	if slices.Sort(rows); !slices.Equal(rows, []string{"0", "1", "2"}) { // a query's rows come in no order on Cosmos DB
		t.Fatalf("people = %v", rows)
	}
	n, err := l.Trim(ctx, "Sales Team", time.Now().Add(time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("Trim = %d, %v; want the 3 entries", n, err)
	}
	if _, err := people.Get(ctx, "Sales Team", "2", nil); err != nil {
		t.Fatalf("Trim removed another row: %v", err)
	}
	// A row planted under the prefix that is no entry is an error, never
	// an entry with a made-up time.
	if _, err := testrig.NewTable[table.Dynamic](t, c).Insert(ctx, table.Dynamic{PartitionKey: "Sales Team", RowKey: "log!x", Properties: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Latest(ctx, "Sales Team", 1); err == nil {
		t.Fatal("Latest read a planted row as an entry")
	}
}

func TestPrefixOptionAndAppendOpErrors(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	tb := testrig.NewTable[login](t, r.Table())
	for _, o := range []logtail.Options{{Prefix: "a!b"}, {Prefix: "x", Buckets: 2}, {Prefix: string(make([]byte, 33))}} {
		if _, err := logtail.New(tb, &o); !errors.Is(err, logtail.ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", o, err)
		}
	}
	l, err := logtail.New(tb, &logtail.Options{Prefix: "log"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "a/b", reserved.Prefix + "x"} {
		if err := l.AppendOp(name, login{}).Err(); !errors.Is(err, logtail.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("AppendOp(%q): %v", name, err)
		}
	}
	if r.Faults.Count() != 0 {
		t.Fatal("requests sent")
	}
}

// RangePage pages through a range newest first, across buckets, and
// resumes from a cursor in a fresh Log (another process); a cursor of
// another range is refused.
func TestRangePage(t *testing.T) {
	t.Parallel()
	for _, b := range []int{1, 3} {
		l, ft, tb := newLog(t, &logtail.Options{Buckets: b})
		ctx := context.Background()
		base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
		for i := range 10 {
			if _, err := l.AppendAt(ctx, "u", base.Add(time.Duration(i)*time.Second), login{IP: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		from, to := base.Add(time.Second), base.Add(9*time.Second) // entries 1..8
		var got []string
		var cursor table.Cursor
		for pages := 0; ; pages++ {
			fresh, err := logtail.New(tb, &logtail.Options{Buckets: b})
			if err != nil {
				t.Fatal(err)
			}
			ft.Reset()
			p, err := fresh.RangePage(ctx, "u", from, to, cursor, &logtail.RangeOptions{PageSize: 3})
			if err != nil {
				t.Fatal(err)
			}
			if n := ft.Count(); n != b {
				t.Fatalf("buckets %d: a page took %d round trips, want %d", b, n, b)
			}
			for _, e := range p.Items {
				got = append(got, e.Value.IP)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
			if pages > 5 {
				t.Fatal("no end")
			}
		}
		if want := []string{"8", "7", "6", "5", "4", "3", "2", "1"}; !slices.Equal(got, want) {
			t.Fatalf("buckets %d: pages = %v, want %v", b, got, want)
		}
		p, err := l.RangePage(ctx, "u", from, to, "", &logtail.RangeOptions{PageSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.RangePage(ctx, "u", from, to.Add(time.Second), p.Next, &logtail.RangeOptions{PageSize: 3}); !errors.Is(err, logtail.ErrInvalid) {
			t.Fatalf("another range's cursor: %v", err)
		}
		// PageSize: 0 is the default (1,000: the whole range in one
		// page, no Next); negative or over table.MaxPageSize is refused,
		// nothing sent.
		if p, err := l.RangePage(ctx, "u", from, to, "", nil); err != nil || len(p.Items) != 8 || p.Next != "" {
			t.Fatalf("default page: %d items, Next %q, %v", len(p.Items), p.Next, err)
		}
		ft.Reset()
		for _, size := range []int{-1, table.MaxPageSize + 1} {
			if _, err := l.RangePage(ctx, "u", from, to, "", &logtail.RangeOptions{PageSize: size}); !errors.Is(err, logtail.ErrInvalid) {
				t.Fatalf("PageSize %d: %v", size, err)
			}
			for _, err := range l.Range(ctx, "u", from, to, &logtail.RangeOptions{PageSize: size}) {
				if !errors.Is(err, logtail.ErrInvalid) {
					t.Fatalf("Range with PageSize %d: %v", size, err)
				}
			}
		}
		if n := ft.Count(); n != 0 {
			t.Fatalf("%d requests for refused page sizes", n)
		}
	}
}
