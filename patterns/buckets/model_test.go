package buckets_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestModelBuckets inserts random RowKeys (ASCII, accented letters, and
// characters whose UTF-16 order differs from their UTF-8 order) into two
// logical partitions, changes the bucket count now and then (listing the
// earlier ones), loses a third of the insert responses, and checks after
// every step that Range over a random key range equals the model's keys
// sorted as the service sorts them, and that Get finds a random stored key.
// 40 steps in make test, 2,000 in make soak.
func TestModelBuckets(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	counts := []int{3}
	s := newSpread(t, tb, &buckets.Options{Buckets: 3})
	model := map[string][]string{}
	alphabet := []string{"a", "b", "m", "z", "0", "9", "~", "é", "中", "\uff01", "😀"}
	randKey := func(r *rand.Rand) string {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	sorted := func(ks []string) []string {
		out := slices.Clone(ks)
		slices.SortFunc(out, keys.Compare)
		return out
	}
	modelcheck.Run(t, 40, 2000, func(t *testing.T, r *rand.Rand, step int) {
		if r.IntN(10) == 0 {
			n := []int{1, 2, 4, 5, 8, 16}[r.IntN(6)]
			var earlier []int
			for _, c := range slices.Backward(counts) {
				earlier = append(earlier, c)
			}
			counts = append(counts, n)
			s = newSpread(t, tb, &buckets.Options{Buckets: n, Earlier: earlier})
		}
		pk := []string{"hot", "cold"}[r.IntN(2)]
		k := randKey(r)
		if slices.Contains(model[pk], k) {
			return // keys are unique per logical partition in this model
		}
		if r.IntN(3) == 0 {
			ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodPost }, LoseResponse: true})
		}
		if _, err := s.Insert(ctx, access{Hour: pk, Key: k, Employee: k}); err != nil {
			t.Fatalf("step %d: Insert(%q, %q) under %d buckets: %v", step, pk, k, counts[len(counts)-1], err)
		}
		model[pk] = append(model[pk], k)
		want := sorted(model[pk])
		from, to := "", ""
		if r.IntN(2) == 0 {
			from, to = randKey(r), randKey(r)
			if keys.Compare(from, to) > 0 {
				from, to = to, from
			}
			if from == to {
				to = ""
			}
		}
		var inRange []string
		for _, k := range want {
			if keys.Compare(k, from) >= 0 && (to == "" || keys.Compare(k, to) < 0) {
				inRange = append(inRange, k)
			}
		}
		var got []string
		for e, err := range s.Range(ctx, pk, from, to, nil) {
			if err != nil {
				t.Fatalf("step %d: Range: %v", step, err)
			}
			if e.Value.Employee != e.RowKey {
				t.Fatalf("step %d: entity %+v under RowKey %q", step, e.Value, e.RowKey)
			}
			got = append(got, e.RowKey)
		}
		if !slices.Equal(got, inRange) {
			t.Fatalf("step %d: Range(%q, %q, %q) under counts %v = %q, want %q", step, pk, from, to, counts, got, inRange)
		}
		probe := want[r.IntN(len(want))]
		if e, err := s.Get(ctx, pk, probe); err != nil || e.Value.Employee != probe {
			t.Fatalf("step %d: Get(%q, %q) = %+v, %v", step, pk, probe, e, err)
		}
		if _, err := s.Get(ctx, pk, probe+"-absent"); !errors.Is(err, table.ErrNotFound) {
			t.Fatalf("step %d: Get of an absent key = %v", step, err)
		}
	})
}
