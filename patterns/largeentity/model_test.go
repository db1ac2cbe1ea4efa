package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestModelLargeEntity runs random Inserts, Updates (current, stale and
// unconditional), Modifies, Deletes and Sweeps on three entities with
// values inline and offloaded, while responses are lost at random and
// writes crash between their steps. After every step each entity reads
// back as the model says, no stored pointer names a missing or different
// blob, and after a Sweep past Grace no orphan is left. 30 steps in make
// test, 1,500 in make soak.
func TestModelLargeEntity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	type state struct {
		v    Employee
		etag azcore.ETag
	}
	model := map[string]*state{}
	rks := []string{"a", "b", "c"}
	var crash string
	largeentity.SetHook(s, func(step string) error {
		if step == crash {
			return errCrash
		}
		return nil
	})
	value := func(r *rand.Rand, step int) Employee {
		sizes := []int{0, 5 << 10, 40 << 10, 120 << 10}
		e := Employee{Name: fmt.Sprint("v", step), Photo: photo(sizes[r.IntN(len(sizes))], uint64(step))}
		if r.IntN(2) == 0 {
			e.CV = strings.Repeat(string(rune('a'+step%26)), sizes[r.IntN(len(sizes))]/2)
		}
		if r.IntN(3) == 0 {
			e.Skills = []string{fmt.Sprint("s", step)}
		}
		return e
	}
	same := func(a, b Employee) bool {
		return a.Name == b.Name && bytes.Equal(a.Photo, b.Photo) && a.CV == b.CV && fmt.Sprint(a.Skills) == fmt.Sprint(b.Skills)
	}
	modelcheck.Run(t, 30, 1500, func(t *testing.T, r *rand.Rand, step int) {
		rk := rks[r.IntN(len(rks))]
		cur := model[rk]
		crash = ""
		if r.IntN(6) == 0 {
			crash = []string{"upload", "entity", "delete blobs"}[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			f.r.Faults.Inject(faults.Fault{Match: f.table(isWrite), LoseResponse: true})
		}
		if r.IntN(3) == 0 {
			f.r.Faults.Inject(faults.Fault{Match: f.blob(isWrite), LoseResponse: true})
		}
		crashed := func(err error) bool { return errors.Is(err, errCrash) }
		// unknown settles an outcome the package reported unknown (a lost
		// response it could not verify) by reading: the entity must be
		// the old or the new value, and the model follows.
		unknown := func(err error, v *Employee) bool {
			if !errors.Is(err, table.ErrOutcomeUnknown) {
				return false
			}
			got, gerr := s.Get(ctx, "P", rk, nil)
			switch {
			case errors.Is(gerr, table.ErrNotFound) && (cur == nil || v == nil):
				delete(model, rk)
			case gerr == nil && v != nil && same(got.Value, *v):
				model[rk] = &state{*v, got.ETag}
			case gerr == nil && cur != nil && same(got.Value, cur.v):
			default:
				t.Fatalf("step %d: after an unknown outcome (%v) the entity is neither the old nor the new value: %v", step, err, gerr)
			}
			return true
		}
		var op string
		switch k := r.IntN(10); {
		case k < 3:
			op = "insert"
			v := value(r, step)
			res, err := s.Insert(ctx, at("P", rk, v))
			switch {
			case unknown(err, &v):
			case cur != nil && errors.Is(err, table.ErrAlreadyExists):
			case cur == nil && err == nil:
				model[rk] = &state{v, res.ETag}
			case crashed(err): // before the entity write: not applied
			default:
				t.Fatalf("step %d: Insert %s (exists %v): %v", step, rk, cur != nil, err)
			}
		case k < 6:
			v := value(r, step)
			etag := azcore.ETagAny
			stale := false
			switch {
			case cur != nil && r.IntN(3) == 0:
				etag, stale = "W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\"", true
			case cur != nil && r.IntN(2) == 0:
				etag = cur.etag
			}
			op = fmt.Sprintf("update (%s)", etag)
			res, err := s.Update(ctx, at("P", rk, v), etag)
			switch {
			case unknown(err, &v):
			case cur == nil && errors.Is(err, table.ErrNotFound):
			case stale && errors.Is(err, table.ErrPreconditionFailed):
			case cur != nil && !stale && err == nil:
				model[rk] = &state{v, res.ETag}
			case crashed(err):
			default:
				t.Fatalf("step %d: %s of %s (exists %v): %v", step, op, rk, cur != nil, err)
			}
		case k < 8:
			op = "modify"
			name := fmt.Sprint("m", step)
			newPhoto := r.IntN(2) == 0
			e, err := s.Modify(ctx, "P", rk, func(e *Employee) error {
				e.Name = name
				if newPhoto {
					e.Photo = photo(60<<10, uint64(step))
				}
				return nil
			})
			switch {
			case cur == nil && errors.Is(err, table.ErrNotFound) && !errors.Is(err, table.ErrOutcomeUnknown):
			case cur != nil && err == nil:
				v := cur.v
				v.Name = name
				if newPhoto {
					v.Photo = photo(60<<10, uint64(step))
				}
				model[rk] = &state{v, e.ETag}
			case crashed(err):
			default:
				t.Fatalf("step %d: Modify %s (exists %v): %v", step, rk, cur != nil, err)
			}
		case k < 9:
			op = "delete"
			etag := azcore.ETagAny
			if cur != nil && r.IntN(2) == 0 {
				etag = cur.etag
			}
			err := s.Delete(ctx, "P", rk, etag)
			switch {
			case cur == nil && errors.Is(err, table.ErrNotFound):
			case cur != nil && err == nil:
				delete(model, rk)
			case unknown(err, nil): // a lost delete response: the core's unknown, gone
			case cur != nil && crashed(err) && crash == "delete blobs":
				delete(model, rk)
			case cur != nil && crashed(err):
			default:
				t.Fatalf("step %d: Delete %s (exists %v): %v", step, rk, cur != nil, err)
			}
		default:
			op = "sweep"
			f.clock.Advance(2 * largeentity.DefaultGraceForTest)
			if _, err := s.Sweep(ctx); err != nil {
				t.Fatalf("step %d: Sweep: %v", step, err)
			}
			if o := f.orphans(t); len(o) != 0 {
				t.Fatalf("step %d: orphans after Sweep: %v", step, o)
			}
		}
		f.reset()
		f.referenced(t) // no dangling or torn pointer
		for _, k := range rks {
			got, err := s.Get(ctx, "P", k, nil)
			want := model[k]
			switch {
			case want == nil && errors.Is(err, table.ErrNotFound):
			case want != nil && err == nil && same(got.Value, want.v):
				want.etag = got.ETag
			default:
				t.Fatalf("step %d (%s of %s): Get %s = %q, %v; model %v", step, op, rk, k, got.Value.Name, err, want != nil)
			}
		}
	})
}
