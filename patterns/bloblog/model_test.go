package bloblog_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/bloblog"
)

// TestModelBlobLog: two writers append at random times (often the same
// instant, sometimes across hours), rolling blobs every few appends, while
// responses to creates, appends and metadata updates are lost at random
// and appends fail with 500s; after every step both flush, and a random
// time range returns exactly the model's entries of that range, in time
// order, each writer's in its order. 40 steps in make test, 2,000 in make
// soak.
func TestModelBlobLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	clk := &clock{t: base}
	ws := []*bloblog.Writer[Request]{
		newWriter(t, l, &bloblog.WriterOptions{ID: "a", MaxBlocks: 3, FlushInterval: -1, Now: clk.Now}),
		newWriter(t, l, &bloblog.WriterOptions{ID: "b", MaxBlocks: 2, FlushInterval: -1, Now: clk.Now}),
	}
	type entry struct {
		at          time.Time
		writer, seq int
	}
	var model []entry
	seqs := []int{0, 0}
	check := func(step int, from, to time.Time) {
		var want []entry
		for _, e := range model {
			if !e.at.Before(from) && e.at.Before(to) {
				want = append(want, e)
			}
		}
		var got []entry
		for e, err := range l.Range(ctx, from, to) {
			if err != nil {
				t.Fatalf("step %d: Range: %v", step, err)
			}
			got = append(got, entry{e.Time, e.Value.Writer, e.Value.Seq})
		}
		for i := 1; i < len(got); i++ {
			if got[i].at.Before(got[i-1].at) {
				t.Fatalf("step %d: Range(%v, %v) out of time order at %d: %v", step, from.Format(time.TimeOnly), to.Format(time.TimeOnly), i, got)
			}
		}
		byKey := func(a, b entry) int {
			if a.writer != b.writer {
				return a.writer - b.writer
			}
			return a.seq - b.seq
		}
		// Each writer's entries come in its order: sorting by (writer,
		// seq) must not change their relative order.
		sorted := slices.Clone(got)
		slices.SortStableFunc(sorted, func(a, b entry) int { return a.writer - b.writer })
		if !slices.IsSortedFunc(sorted, byKey) {
			t.Fatalf("step %d: Range(%v, %v): a writer's entries out of its order: %v", step, from.Format(time.TimeOnly), to.Format(time.TimeOnly), got)
		}
		slices.SortFunc(want, byKey)
		if !slices.EqualFunc(sorted, want, func(a, b entry) bool { return a.writer == b.writer && a.seq == b.seq && a.at.Equal(b.at) }) {
			t.Fatalf("step %d: Range(%v, %v) = %d entries %v, want %d %v", step, from.Format(time.TimeOnly), to.Format(time.TimeOnly), len(got), sorted, len(want), want)
		}
	}
	modelcheck.Run(t, 40, 2000, func(t *testing.T, r *rand.Rand, step int) {
		w := r.IntN(2)
		switch r.IntN(4) {
		case 0:
			clk.Set(clk.Now().Add(time.Duration(r.IntN(40)) * time.Minute))
		case 1:
			clk.Set(clk.Now().Add(time.Duration(r.IntN(1000)) * time.Millisecond))
		}
		for range 1 + r.IntN(5) {
			at := clk.Now()
			if err := ws[w].Append(ctx, Request{Writer: w, Seq: seqs[w]}); err != nil {
				t.Fatalf("step %d: Append: %v", step, err)
			}
			model = append(model, entry{at, w, seqs[w]})
			seqs[w]++
		}
		for _, m := range []func(*http.Request) bool{isCreate, isAppend, func(r *http.Request) bool { return r.URL.Query().Get("comp") == "metadata" }} {
			if r.IntN(4) == 0 {
				f.ft.Inject(faults.Fault{Match: m, LoseResponse: true})
			}
		}
		if r.IntN(5) == 0 {
			f.ft.Inject(faults.Fault{Match: isAppend, Status: http.StatusInternalServerError})
		}
		for i, wr := range ws {
			if err := wr.Flush(ctx); err != nil {
				t.Fatalf("step %d: Flush of writer %d: %v", step, i, err)
			}
		}
		f.ft.Reset()
		// A window of up to 3 hours, anywhere in the log so far (one
		// listing per hour: a wider one would make the soak quadratic).
		span := clk.Now().Sub(base) + time.Second
		from := base.Add(time.Duration(r.Int64N(int64(span))))
		to := from.Add(time.Duration(1 + r.Int64N(int64(3*time.Hour))))
		check(step, from, to)
	})
	for _, w := range ws {
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check(-1, base, clk.Now().Add(time.Second))
}
