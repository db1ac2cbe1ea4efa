package dataseries_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

var fast = retry.Policy{Default: time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 200, FullJitter: true}

func newSeries[V dataseries.Value](t *testing.T) (*dataseries.Series[V], *faults.Transport) {
	t.Helper()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	o := &aztables.ClientOptions{}
	o.Transport = ft
	retry.Policy{Default: time.Millisecond, Max: 2 * time.Millisecond, MaxRetries: 5}.ApplyTo(&o.ClientOptions)
	tb, err := table.New[table.Dynamic](env.Table(o))
	if err != nil {
		t.Fatal(err)
	}
	s, err := dataseries.New[V](tb, &dataseries.Options{Slots: dataseries.Hours(), Retry: &fast})
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	return s, ft
}

func TestSetGetAdd(t *testing.T) {
	t.Parallel()
	s, ft := newSeries[int64](t)
	ctx := context.Background()
	v, err := s.Get(ctx, "msgs", "2024-07-31")
	if err != nil || v.ETag != "" || len(v.Slots) != 24 || v.Slots["H05"] != 0 {
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
	n, _, err := s.Add(ctx, "msgs", "2024-07-31", "H18", 2)
	if err != nil || n != 42 || ft.Count() != 2 {
		t.Fatalf("Add = %d, %v in %d round trips", n, err, ft.Count())
	}
	ft.Reset()
	v, err = s.Get(ctx, "msgs", "2024-07-31")
	if err != nil || v.Slots["H18"] != 42 || v.Slots["H19"] != 7 || v.Slots["H00"] != 0 || v.ETag == "" || ft.Count() != 1 {
		t.Fatalf("Get = %+v, %v in %d round trips", v, err, ft.Count())
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
	if v, _ := s.Get(ctx, "msgs", "2024-07-31"); v.Slots["H01"] != 5 || v.Slots["H18"] != 0 {
		t.Fatalf("after SetAll: %v", v.Slots)
	}
	// Add creates the series.
	if n, _, err := s.Add(ctx, "msgs", "2024-08-01", "H03", 3); err != nil || n != 3 {
		t.Fatalf("Add to a new series = %d, %v", n, err)
	}
}

func TestFloatSlots(t *testing.T) {
	t.Parallel()
	s, _ := newSeries[float64](t)
	ctx := context.Background()
	if _, err := s.Set(ctx, "temp", "d", "H01", 2); err != nil { // a whole-number double
		t.Fatal(err)
	}
	if n, _, err := s.Add(ctx, "temp", "d", "H01", 0.5); err != nil || n != 2.5 {
		t.Fatalf("Add = %v, %v", n, err)
	}
	if v, err := s.Get(ctx, "temp", "d"); err != nil || v.Slots["H01"] != 2.5 {
		t.Fatalf("Get = %v, %v", v.Slots, err)
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
				if _, _, err := s.Add(ctx, "hot", "series", slot, 1); err != nil {
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
	if err != nil || v.Slots["H10"] != int64(4*each) || v.Slots["H11"] != int64(4*each) {
		t.Fatalf("totals %d and %d, want %d each (%v)", v.Slots["H10"], v.Slots["H11"], 4*each, err)
	}
}

// TestAddsWithLostResponses: adds whose responses are lost (every other
// write) are settled by the write history: each reported add is stored
// exactly once, first write of the series included.
func TestAddsWithLostResponses(t *testing.T) {
	t.Parallel()
	s, ft := newSeries[int64](t)
	ctx := context.Background()
	writes := func(r *http.Request) bool { return r.Method != http.MethodGet }
	total := int64(0)
	for i := range 30 {
		if i%2 == 0 {
			ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
		}
		n, _, err := s.Add(ctx, "lossy", "series", "H01", int64(i))
		if err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
		total += int64(i)
		if n != total {
			t.Fatalf("Add %d returned %d, want %d", i, n, total)
		}
	}
	if v, err := s.Get(ctx, "lossy", "series"); err != nil || v.Slots["H01"] != total {
		t.Fatalf("stored %d, want %d (%v)", v.Slots["H01"], total, err)
	}
}

func TestInvalidSendsNothing(t *testing.T) {
	t.Parallel()
	s, ft := newSeries[int64](t)
	ctx := context.Background()
	if _, err := s.Set(ctx, "p", "r", "H24", 1); !errors.Is(err, dataseries.ErrInvalid) {
		t.Errorf("Set of a missing slot = %v", err)
	}
	if _, _, err := s.Add(ctx, "p", "r", "nope", 1); !errors.Is(err, dataseries.ErrInvalid) {
		t.Errorf("Add to a missing slot = %v", err)
	}
	if _, err := s.SetAll(ctx, "p", "r", map[string]int64{"X": 1}, ""); !errors.Is(err, dataseries.ErrInvalid) {
		t.Errorf("SetAll with a missing slot = %v", err)
	}
	if _, err := s.Set(ctx, "bad/key", "r", "H01", 1); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Set with an invalid key = %v", err)
	}
	if ft.Count() != 0 {
		t.Fatalf("%d requests sent", ft.Count())
	}
	tb, _ := table.New[table.Dynamic](tabletest.New(t).Table(nil))
	long := make([]string, dataseries.MaxSlots+1)
	for i := range long {
		long[i] = "S" + string(rune('A'+i%26)) + string(rune('A'+i/26))
	}
	for _, o := range []*dataseries.Options{nil, {}, {Slots: long}, {Slots: []string{"A", "A"}}, {Slots: []string{"and"}}, {Slots: []string{"RowKey"}}} {
		if _, err := dataseries.New[int64](tb, o); !errors.Is(err, dataseries.ErrInvalid) {
			t.Errorf("New(%v) = %v", o, err)
		}
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
	if _, _, err := s.Add(ctx, "p", "max", "H01", 1); !errors.Is(err, dataseries.ErrInvalid) {
		t.Fatalf("Add past MaxInt64 = %v", err)
	}
	if v, _ := s.Get(ctx, "p", "max"); v.Slots["H01"] != math.MaxInt64 {
		t.Fatalf("stored %d after a refused Add", v.Slots["H01"])
	}
}

// TestKeyErrors: an invalid key, in every operation, matches both
// ErrInvalid and table.ErrInvalidKey, and nothing is sent.
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	s, ft := newSeries[int64](t)
	ctx := context.Background()
	second := func(_ any, err error) error { return err }
	_, _, addErr := s.Add(ctx, "p", "a#b", "H01", 1)
	for what, err := range map[string]error{
		"Get, '/' in the PartitionKey": second(s.Get(ctx, "bad/key", "r")),
		"Get, an empty PartitionKey":   second(s.Get(ctx, "", "r")),
		"Set, '?' in the RowKey":       second(s.Set(ctx, "p", "a?", "H01", 1)),
		"SetAll, a control character":  second(s.SetAll(ctx, "p\x01", "r", nil, "")),
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
