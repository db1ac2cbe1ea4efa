package logtail_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestModelLogTail appends at random times (often the same tick) to a plain
// and a bucketed log while responses are lost at random, and checks after
// every step that Latest and Range return exactly the model's entries,
// newest first. 40 steps in make test, 3,000 in make soak.
func TestModelLogTail(t *testing.T) {
	t.Parallel()
	plain, ft, tb := newLog(t, nil)
	bucketed, err := logtail.New(tb, &logtail.Options{Buckets: 3})
	if err != nil {
		t.Fatal(err)
	}
	logs := []*logtail.Log[login]{plain, bucketed}
	ctx := context.Background()
	base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	type entry struct {
		at  time.Time
		seq int // append order, for entries of one tick
		ip  string
	}
	model := [2][]entry{}
	newestFirst := func(es []entry) []entry {
		out := slices.Clone(es)
		slices.SortFunc(out, func(a, b entry) int {
			if c := b.at.Compare(a.at); c != 0 {
				return c
			}
			return b.seq - a.seq
		})
		return out
	}
	modelcheck.Run(t, 40, 3000, func(t *testing.T, r *rand.Rand, step int) {
		which := r.IntN(2)
		name := fmt.Sprint("log", which)
		at := base.Add(time.Duration(r.IntN(6)) * time.Second) // many ticks repeat
		if r.IntN(3) == 0 {
			ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodPost }, LoseResponse: true})
		}
		ip := fmt.Sprint(step)
		if _, err := logs[which].AppendAt(ctx, name, at, login{IP: ip}); err != nil {
			t.Fatalf("step %d: AppendAt: %v", step, err)
		}
		model[which] = append(model[which], entry{at, step, ip})
		want := newestFirst(model[which])
		n := 1 + r.IntN(min(len(want), table.MaxPageSize))
		got, err := logs[which].Latest(ctx, name, n)
		if err != nil || len(got) != n {
			t.Fatalf("step %d: Latest(%d) = %d entries, %v", step, n, len(got), err)
		}
		for i := range got {
			if got[i].Value.IP != want[i].ip || !got[i].Time.Equal(want[i].at) {
				t.Fatalf("step %d: Latest(%d)[%d] = %s at %v, want %s at %v", step, n, i, got[i].Value.IP, got[i].Time, want[i].ip, want[i].at)
			}
		}
		from := base.Add(time.Duration(r.IntN(6)) * time.Second)
		to := from.Add(time.Duration(1+r.IntN(3)) * time.Second)
		var inRange []string
		for _, e := range want {
			if !e.at.Before(from) && e.at.Before(to) {
				inRange = append(inRange, e.ip)
			}
		}
		var ranged []string
		for e, err := range logs[which].Range(ctx, name, from, to, nil) {
			if err != nil {
				t.Fatalf("step %d: Range: %v", step, err)
			}
			ranged = append(ranged, e.Value.IP)
		}
		if !slices.Equal(ranged, inRange) {
			t.Fatalf("step %d: Range(%v, %v) = %v, want %v", step, from, to, ranged, inRange)
		}
	})
}
