package secondaryindex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// Find, Lookup and Range take the value as T holds it (Index.On): a
// string for a string property, an int for an integer one (in numeric
// order: 9 before 10), a time, a []any for a compound index (a prefix for
// Find and Range, whole for Lookup). A value of another type, or a
// compound value of the wrong length, is ErrInvalid naming the index and
// the type wanted, with nothing sent; so is a PageSize the service cannot
// give.
func TestLookupValues(t *testing.T) {
	t.Parallel()
	type hire struct {
		Department  string `table:",pk"`
		ID          string `table:",rk"`
		Last, First string
		Grade       int
		Start       time.Time
	}
	r := newRig(t, nil, false)
	s, err := secondaryindex.New(r.tbl, &secondaryindex.Options[hire]{Primary: "h", Indexes: []secondaryindex.Index[hire]{
		{Name: "name", Holds: secondaryindex.KeysOnly, On: []string{"Last", "First"}},
		{Name: "grade", Holds: secondaryindex.Listed, Fields: []string{"Last"}, On: []string{"Grade"}},
		{Name: "start", Unique: true, On: []string{"Start"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	day := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for i, h := range []hire{{Last: "Jones", First: "Ann", Grade: 9}, {Last: "Jones", First: "Bob", Grade: 10}, {Last: "King", First: "Cy", Grade: -3}} {
		h.Department, h.ID, h.Start = "Sales", string(rune('1'+i)), day.AddDate(0, 0, i)
		if _, err := s.Insert(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(seq func(func(secondaryindex.Entity[hire], error) bool)) string {
		t.Helper()
		var out []string
		for e, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e.RowKey)
		}
		return strings.Join(out, ",")
	}
	for what, c := range map[string]struct{ got, want string }{
		"Find name Jones":          {ids(s.Find(ctx, "Sales", "name", []any{"Jones"}, nil)), "1,2"},
		"Find name Jones, Bob":     {ids(s.Find(ctx, "Sales", "name", []any{"Jones", "Bob"}, nil)), "2"},
		"Find grade 10 (an int)":   {ids(s.Find(ctx, "Sales", "grade", 10, nil)), "2"},
		"Find grade int64(-3)":     {ids(s.Find(ctx, "Sales", "grade", int64(-3), nil)), "3"},
		"Range grade -5 to 9":      {ids(s.Range(ctx, "Sales", "grade", -5, 9, nil)), "3,1"},
		"Range grade in order":     {ids(s.Range(ctx, "Sales", "grade", -100, 100, nil)), "3,1,2"},
		"Range name Jones to King": {ids(s.Range(ctx, "Sales", "name", []any{"Jones", "B"}, []any{"King"}, nil)), "2,3"},
		"Find start":               {ids(s.Find(ctx, "Sales", "start", day.AddDate(0, 0, 1), nil)), "2"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", what, c.got, c.want)
		}
	}
	if e, err := s.Lookup(ctx, "Sales", "start", day.AddDate(0, 0, 2), nil); err != nil || e.RowKey != "3" {
		t.Errorf("Lookup start = %+v, %v", e, err)
	}
	r.Faults.Reset()
	second := func(_ any, err error) error { return err }
	seqErr := func(seq func(func(secondaryindex.Entity[hire], error) bool)) (err error) {
		for _, err = range seq {
		}
		return err
	}
	pageErr := func(_ table.Page[secondaryindex.Entity[hire]], err error) error { return err }
	for what, c := range map[string]struct {
		err  error
		want string
	}{
		"Find grade \"10\"":          {seqErr(s.Find(ctx, "Sales", "grade", "10", nil)), `index "grade": Grade takes int, not string`},
		"Find grade 1.5":             {seqErr(s.Find(ctx, "Sales", "grade", 1.5, nil)), "takes int, not float64"},
		"Find name \"Jones\" (bare)": {seqErr(s.Find(ctx, "Sales", "name", "Jones", nil)), `index "name" takes a []any of 1 to 2 values (string, string), not string`},
		"Find name, three values":    {seqErr(s.Find(ctx, "Sales", "name", []any{"a", "b", "c"}, nil)), "of 1 to 2 values"},
		"Find name, a []string":      {seqErr(s.Find(ctx, "Sales", "name", []string{"Jones"}, nil)), "not []string"},
		"Find name Jones, 7":         {seqErr(s.Find(ctx, "Sales", "name", []any{"Jones", 7}, nil)), "First takes string, not int"},
		"Lookup start, a string":     {second(s.Lookup(ctx, "Sales", "start", "2024-06-01", nil)), "Start takes time.Time, not string"},
		"Range grade 1 to \"9\"":     {seqErr(s.Range(ctx, "Sales", "grade", 1, "9", nil)), "takes int, not string"},
		"RangePage grade, nil":       {pageErr(s.RangePage(ctx, "Sales", "grade", nil, 9, "", nil)), "takes int, not nil"},
		"RangePage PageSize 1001":    {pageErr(s.RangePage(ctx, "Sales", "grade", 1, 9, "", &secondaryindex.LookupOptions{PageSize: 1001})), "PageSize 1001"},
		"Find PageSize -1":           {seqErr(s.Find(ctx, "Sales", "grade", 1, &secondaryindex.LookupOptions{PageSize: -1})), "PageSize -1"},
		"ListPage PageSize 5000":     {pageErr(s.ListPage(ctx, "Sales", "", &secondaryindex.ListOptions{PageSize: 5000})), "PageSize 5000"},
	} {
		if !errors.Is(c.err, secondaryindex.ErrInvalid) || !errors.Is(c.err, table.ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrInvalid with %q", what, c.err, c.want)
		}
	}
	if n := r.Faults.Count(); n != 0 {
		t.Errorf("%d requests sent for refused lookups", n)
	}
	// An index over a type that has no RowKey form needs a Key.
	type tagged struct {
		Department string `table:",pk"`
		ID         string `table:",rk"`
		Score      float64
	}
	for what, ix := range map[string]secondaryindex.Index[tagged]{
		"no On":           {Name: "x"},
		"an unknown On":   {Name: "x", On: []string{"Nope"}},
		"a float, no Key": {Name: "x", On: []string{"Score"}},
	} {
		if _, err := secondaryindex.New(r.tbl, &secondaryindex.Options[tagged]{Primary: "t", Indexes: []secondaryindex.Index[tagged]{ix}}); !errors.Is(err, secondaryindex.ErrInvalid) {
			t.Errorf("New with %s: %v", what, err)
		}
	}
}
