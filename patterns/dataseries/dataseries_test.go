package dataseries_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// newSeries returns an hourly series over a fresh table of the rig, its
// Adds retried as under contention.
func newSeries[V dataseries.Value](t *testing.T) (*dataseries.Series[V], *testrig.Rig) {
	t.Helper()
	r := testrig.New(t)
	s, err := dataseries.New[V](testrig.NewTable[table.Dynamic](t, r.Table()), dataseries.Hours(), &dataseries.Options{Retry: &testrig.Contention})
	if err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return s, r
}

func TestSetGetAdd(t *testing.T) {
	t.Parallel()
	s, r := newSeries[int64](t)
	ft := r.Faults
	ctx := context.Background()
	v, err := s.Get(ctx, "msgs", "2024-07-31")
	if err != nil || v.ETag != "" || len(v.Value) != 24 || v.Value["H05"] != 0 || v.PartitionKey != "msgs" || v.RowKey != "2024-07-31" {
		t.Fatalf("Get of a new series = %+v, %v", v, err)
	}
	ft.Reset()
	if _, err := s.Set(ctx, "msgs", "2024-07-31", "H18", 40); err != nil || ft.Count() != 1 {
		t.Fatalf("Set = %v in %d round trips", err, ft.Count())
	}
	if _, err := s.Set(ctx, "msgs", "2024-07-31", "H19", 7); err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	res, err := s.Add(ctx, "msgs", "2024-07-31", "H18", 2)
	n := res.Value
	if err != nil || n != 42 || ft.Count() != 2 {
		t.Fatalf("Add = %d, %v in %d round trips", n, err, ft.Count())
	}
	ft.Reset()
	v, err = s.Get(ctx, "msgs", "2024-07-31")
	if err != nil || v.Value["H18"] != 42 || v.Value["H19"] != 7 || v.Value["H00"] != 0 || v.ETag == "" || ft.Count() != 1 {
		t.Fatalf("Get = %+v, %v in %d round trips", v, err, ft.Count())
	}
	if res.ETag != v.ETag || v.PartitionKey != "msgs" || v.RowKey != "2024-07-31" {
		t.Fatalf("Add's ETag %s, Get's %+v: want the same version and the series' keys", res.ETag, v)
	}
	// SetAll with a stale ETag fails; with the current one it replaces.
	if _, err := s.Set(ctx, "msgs", "2024-07-31", "H00", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetAll(ctx, "msgs", "2024-07-31", map[string]int64{"H01": 5}, v.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("SetAll with a stale ETag = %v", err)
	}
	cur, _ := s.Get(ctx, "msgs", "2024-07-31")
	if _, err := s.SetAll(ctx, "msgs", "2024-07-31", map[string]int64{"H01": 5}, cur.ETag); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get(ctx, "msgs", "2024-07-31"); v.Value["H01"] != 5 || v.Value["H18"] != 0 {
		t.Fatalf("after SetAll: %v", v.Value)
	}
	// Add creates the series.
	if e, err := s.Add(ctx, "msgs", "2024-08-01", "H03", 3); err != nil || e.Value != 3 {
		t.Fatalf("Add to a new series = %d, %v", e.Value, err)
	}
}

func TestFloatSlots(t *testing.T) {
	t.Parallel()
	s, _ := newSeries[float64](t)
	ctx := context.Background()
	if _, err := s.Set(ctx, "temp", "d", "H01", 2); err != nil { // a whole-number double
		t.Fatal(err)
	}
	if e, err := s.Add(ctx, "temp", "d", "H01", 0.5); err != nil || e.Value != 2.5 {
		t.Fatalf("Add = %v, %v", e.Value, err)
	}
	if v, err := s.Get(ctx, "temp", "d"); err != nil || v.Value["H01"] != 2.5 {
		t.Fatalf("Get = %v, %v", v.Value, err)
	}
}

// TestConcurrentAdds: 8 adders increment two slots of one series: the
// totals are exact. 8 x 50 in make test, 8 x 200 in make soak.
func TestConcurrentAdds(t *testing.T) {
	t.Parallel()
	s, _ := newSeries[int64](t)
	ctx := context.Background()
	each := modelcheck.Steps(50, 200)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slot := []string{"H10", "H11"}[w%2]
			for range each {
				if _, err := s.Add(ctx, "hot", "series", slot, 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v, err := s.Get(ctx, "hot", "series")
	if err != nil || v.Value["H10"] != int64(4*each) || v.Value["H11"] != int64(4*each) {
		t.Fatalf("totals %d and %d, want %d each (%v)", v.Value["H10"], v.Value["H11"], 4*each, err)
	}
}

// TestAddsWithLostResponses: adds whose responses are lost (every other
// write) are settled by the write history: each reported add is stored
// exactly once, first write of the series included.
func TestAddsWithLostResponses(t *testing.T) {
	t.Parallel()
	s, r := newSeries[int64](t)
	ft := r.Faults
	ctx := context.Background()
	writes := func(r *http.Request) bool { return r.Method != http.MethodGet }
	total := int64(0)
	for i := range 30 {
		if i%2 == 0 {
			ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
		}
		e, err := s.Add(ctx, "lossy", "series", "H01", int64(i))
		n := e.Value
		if err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
		total += int64(i)
		if n != total {
			t.Fatalf("Add %d returned %d, want %d", i, n, total)
		}
	}
	if v, err := s.Get(ctx, "lossy", "series"); err != nil || v.Value["H01"] != total {
		t.Fatalf("stored %d, want %d (%v)", v.Value["H01"], total, err)
	}
}

// TestInvalidSendsNothing: every error found before the network matches
// ErrInvalid and table.ErrInvalid, is one line of this package, and
// nothing is sent.
func TestInvalidSendsNothing(t *testing.T) {
	t.Parallel()
	s, r := newSeries[int64](t)
	ctx := context.Background()
	tb := testrig.NewTable[table.Dynamic](t, r.Table())
	long := make([]string, table.Storage.MaxProperties) // 252: one more than a series holds
	for i := range long {
		long[i] = "S" + string(rune('A'+i%26)) + string(rune('A'+i/26))
	}
	second := func(_ any, err error) error { return err }
	newErr := func(tb *table.Table[table.Dynamic], slots []string) error {
		_, err := dataseries.New[int64](tb, slots, nil)
		return err
	}
	_, addErr := s.Add(ctx, "p", "r", "nope", 1)
	r.Faults.Reset()
	for what, err := range map[string]error{
		"Set of a missing slot":        second(s.Set(ctx, "p", "r", "H24", 1)),
		"Add to a missing slot":        addErr,
		"SetAll with a missing slot":   second(s.SetAll(ctx, "p", "r", map[string]int64{"X": 1}, azcore.ETagAny)),
		"SetAll without an ETag":       second(s.SetAll(ctx, "p", "r", map[string]int64{"H01": 1}, "")),
		"Set with an invalid key":      second(s.Set(ctx, "bad/key", "r", "H01", 1)),
		"New without a table":          newErr(nil, dataseries.Hours()),
		"New without slots":            newErr(tb, nil),
		"New with too many slots":      newErr(tb, long),
		"New with a slot twice":        newErr(tb, []string{"A", "A"}),
		"New with a keyword":           newErr(tb, []string{"and"}),
		"New with a key's name":        newErr(tb, []string{"RowKey"}),
		"New with a reserved name":     newErr(tb, []string{reserved.WriteProperty}),
		"New with a Tk-prefixed name":  newErr(tb, []string{reserved.PropertyPrefix + "Mine"}),
		"New with an invalid property": newErr(tb, []string{"a b"}),
	} {
		if !errors.Is(err, dataseries.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid and table.ErrInvalid", what, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "dataseries: ") || strings.Contains(msg, "\n") {
			t.Errorf("%s: the error is not one line of this package: %q", what, msg)
		}
	}
	if _, err := s.SetAll(ctx, "p", "r", nil, ""); !errors.Is(err, table.ErrNoETag) {
		t.Errorf("SetAll without an ETag: %v, want table.ErrNoETag", err)
	}
	if _, err := s.Set(ctx, "bad/key", "r", "H01", 1); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Set with an invalid key = %v", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestNewWithNilOptions: New(tbl, slots, nil) is a Series with the
// default retry policy.
func TestNewWithNilOptions(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	s, err := dataseries.New[float64](testrig.NewTable[table.Dynamic](t, r.Table()), []string{"Mon", "Tue"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if e, err := s.Add(ctx, "p", "w1", "Tue", 1.5); err != nil || e.Value != 1.5 {
		t.Fatalf("Add = %v, %v", e.Value, err)
	}
	if v, err := s.Get(ctx, "p", "w1"); err != nil || len(v.Value) != 2 || v.Value["Tue"] != 1.5 || v.Value["Mon"] != 0 {
		t.Fatalf("Get = %+v, %v", v, err)
	}
}

// TestSetAllUnconditional: SetAll with azcore.ETagAny creates a series
// never written and replaces one that was; a real ETag of a series since
// deleted is ErrNotFound, nothing created.
func TestSetAllUnconditional(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	tb := testrig.NewTable[table.Dynamic](t, r.Table())
	s, err := dataseries.New[int64](tb, dataseries.Hours(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.Faults.Reset()
	if _, err := s.SetAll(ctx, "p", "new", map[string]int64{"H02": 2}, azcore.ETagAny); err != nil || r.Faults.Count() != 1 {
		t.Fatalf("SetAll(ETagAny) of a new series: %v in %d round trips", err, r.Faults.Count())
	}
	v, err := s.Get(ctx, "p", "new")
	if err != nil || v.Value["H02"] != 2 || v.ETag == "" {
		t.Fatalf("after SetAll(ETagAny) of a new series: %+v, %v", v, err)
	}
	if _, err := s.Set(ctx, "p", "new", "H03", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetAll(ctx, "p", "new", map[string]int64{"H04": 4}, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	cur, err := s.Get(ctx, "p", "new")
	if err != nil || cur.Value["H02"] != 0 || cur.Value["H03"] != 0 || cur.Value["H04"] != 4 {
		t.Fatalf("after SetAll(ETagAny) over writes: %v, %v", cur.Value, err)
	}
	if err := tb.Delete(ctx, "p", "new", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetAll(ctx, "p", "new", map[string]int64{"H05": 5}, cur.ETag); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("SetAll with the ETag of a deleted series: %v, want ErrNotFound", err)
	}
	if v, err := s.Get(ctx, "p", "new"); err != nil || v.ETag != "" || v.Value["H05"] != 0 {
		t.Fatalf("after a refused SetAll: %+v, %v; want the series never written", v, err)
	}
}

// TestWholeNumberSeriesRefusesInexactValues: an int64 series does not
// truncate a stored fraction or wrap on overflow.
func TestWholeNumberSeriesRefusesInexactValues(t *testing.T) {
	t.Parallel()
	s, _ := newSeries[int64](t)
	ctx := context.Background()
	if _, err := s.Set(ctx, "p", "max", "H01", math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, "p", "max", "H01", 1); !errors.Is(err, dataseries.ErrInvalid) {
		t.Fatalf("Add past MaxInt64 = %v", err)
	}
	if v, _ := s.Get(ctx, "p", "max"); v.Value["H01"] != math.MaxInt64 {
		t.Fatalf("stored %d after a refused Add", v.Value["H01"])
	}
}

// TestKeyErrors: an invalid key, in every operation, matches both
// ErrInvalid and table.ErrInvalidKey, and nothing is sent.
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	s, r := newSeries[int64](t)
	ft := r.Faults
	ctx := context.Background()
	second := func(_ any, err error) error { return err }
	_, addErr := s.Add(ctx, "p", "a#b", "H01", 1)
	for what, err := range map[string]error{
		"Get, '/' in the PartitionKey": second(s.Get(ctx, "bad/key", "r")),
		"Get, an empty PartitionKey":   second(s.Get(ctx, "", "r")),
		"Set, '?' in the RowKey":       second(s.Set(ctx, "p", "a?", "H01", 1)),
		"SetAll, a control character":  second(s.SetAll(ctx, "p\x01", "r", nil, azcore.ETagAny)),
		"SetAll with an ETag, '\\'":    second(s.SetAll(ctx, "p", `a\b`, nil, "W/\"x\"")),
		"Add, '#' in the RowKey":       addErr,
	} {
		if !errors.Is(err, dataseries.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: %v, want ErrInvalid and table.ErrInvalidKey", what, err)
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
