package wideentity_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// TestModelWideEntity applies random writes (Insert, Update with Replace,
// Fields and Merge, Delete, Modify) through two Stores (Parts 2
// and 5, so entities change layout) to four logical RowKeys that share
// prefixes, with conditions current, stale or ETagAny, losing a third of
// the responses, and checks after every step that each entity reads as
// the model says and that the partition holds exactly the rows of the
// entities that exist. An outcome reported unknown must have left the old
// or the new entity, whole. 40 steps in make test, 2,000 in make soak.
func TestModelWideEntity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	stores := []*wideentity.Store[table.Dynamic]{newStore[table.Dynamic](t, f, 2), newStore[table.Dynamic](t, f, 5)}
	parts := []int{2, 5}
	rks := []string{"a", keys.Join("a", "b"), "a.", "ab"}
	type entity struct {
		props map[string]int64
		parts int
	}
	model := map[string]entity{}
	etags := map[string]azcore.ETag{} // as read after the last step
	stale := map[string]azcore.ETag{} // an ETag of an earlier version
	ctx := context.Background()

	// read returns the entity as stored, or ok false.
	read := func(rk string) (entity, azcore.ETag, bool) {
		e, err := stores[0].Get(ctx, "m", rk)
		if errors.Is(err, table.ErrNotFound) {
			return entity{}, "", false
		}
		if err != nil {
			t.Fatalf("Get %q: %v", rk, err)
		}
		got := entity{props: map[string]int64{}, parts: e.Parts}
		for name, v := range e.Value.Properties {
			got.props[name] = v.(int64)
		}
		return got, e.ETag, true
	}
	same := func(a entity, aok bool, b entity, bok bool) bool {
		return aok == bok && (!aok || a.parts == b.parts && maps.Equal(a.props, b.props))
	}

	modelcheck.Run(t, 40, 2000, func(t *testing.T, r *rand.Rand, step int) {
		rk := rks[r.IntN(len(rks))]
		which := r.IntN(2)
		s := stores[which]
		old, exists := model[rk]
		next, nextExists := old, exists // the model if the write applies
		props := func() map[string]int64 {
			start, n := r.IntN(600), r.IntN(300)
			m := map[string]int64{}
			for i := range n {
				m[fmt.Sprintf("P%04d", start+i)] = int64(step)*10000 + int64(i)
			}
			return m
		}
		bagOf := func(m map[string]int64) table.Dynamic {
			d := table.Dynamic{Properties: map[string]any{}}
			for k, v := range m {
				d.Properties[k] = v
			}
			return d
		}
		etag, condition := azcore.ETagAny, "any"
		switch c := r.IntN(3); {
		case c == 0 && etags[rk] != "":
			etag, condition = etags[rk], "current"
		case c == 1 && stale[rk] != "":
			etag, condition = stale[rk], "stale"
		}
		var want error // the model's answer: nil, or the sentinel
		conditional := func() {
			switch {
			case !exists:
				want = table.ErrNotFound
			case condition == "stale":
				want = table.ErrPreconditionFailed
			}
		}
		lost := r.IntN(3) == 0
		if lost {
			f.ft.Inject(faults.Fault{Match: isBatch, LoseResponse: true})
		}
		var err error
		var what string
		var res table.Result // of a write that returns one
		op := r.IntN(6)
		switch op {
		case 0:
			p := props()
			what = fmt.Sprintf("Insert(%q, %d properties, Parts %d)", rk, len(p), parts[which])
			res, err = s.Insert(ctx, at("m", rk, bagOf(p)))
			next, nextExists = entity{props: p, parts: parts[which]}, true
			if exists {
				want = table.ErrAlreadyExists
			}
		case 1:
			p := props()
			what = fmt.Sprintf("Update(%q, %d properties, Parts %d, %s ETag)", rk, len(p), parts[which], condition)
			res, err = s.Update(ctx, at("m", rk, bagOf(p)), etag, table.Replace)
			next = entity{props: p, parts: parts[which]}
			conditional()
		case 2:
			p := map[string]int64{}
			for range 1 + r.IntN(3) {
				p[fmt.Sprintf("P%04d", r.IntN(900))] = -int64(step)
			}
			names := slices.Sorted(maps.Keys(p))
			mode := table.Fields(names...)
			if r.IntN(2) == 0 {
				mode = table.Merge // the same here: every property of the value
			}
			what = fmt.Sprintf("Update(%q, %v, Parts %d, %s ETag, %v)", rk, names, parts[which], condition, mode)
			res, err = s.Update(ctx, at("m", rk, bagOf(p)), etag, mode)
			if exists {
				next = entity{props: maps.Clone(old.props), parts: old.parts}
				maps.Copy(next.props, p)
			}
			conditional()
		case 3:
			what = fmt.Sprintf("Delete(%q, Parts %d, %s ETag)", rk, parts[which], condition)
			err = s.Delete(ctx, "m", rk, etag)
			next, nextExists = entity{}, false
			conditional()
		case 4:
			what = fmt.Sprintf("Modify(%q, Parts %d)", rk, parts[which])
			var e wideentity.Entity[table.Dynamic]
			e, err = s.Modify(ctx, "m", rk, func(d *table.Dynamic) error {
				n, _ := d.Properties["P0000"].(int64)
				d.Properties["P0000"] = n + 1
				return nil
			})
			res.ETag = e.ETag
			if exists {
				next = entity{props: maps.Clone(old.props), parts: parts[which]}
				next.props["P0000"]++
			}
			if !exists {
				want = table.ErrNotFound
			}
		case 5:
			what = fmt.Sprintf("Get(%q)", rk)
			nextExists, next = exists, old
		}
		f.ft.Reset()
		got, gotETag, gotExists := read(rk)
		switch {
		case err == nil && want == nil:
		case err == nil:
			t.Fatalf("step %d: %s succeeded; the model says %v", step, what, want)
		case errors.Is(err, table.ErrOutcomeUnknown) && lost:
			// The old or the new entity, whole: the model follows the truth.
			if same(got, gotExists, old, exists) {
				next, nextExists = old, exists
			} else if !same(got, gotExists, next, nextExists) {
				t.Fatalf("step %d: %s: unknown outcome, and the entity is neither the old nor the new one", step, what)
			}
		case want != nil && errors.Is(err, want):
			next, nextExists = old, exists
		case lost && errors.Is(err, table.ErrPreconditionFailed) && old.parts != parts[which] && condition == "current":
			// A lost 404 of the first transaction (another layout) is
			// settled by a fence that makes the ETag stale: not applied.
			next, nextExists = old, exists
		default:
			t.Fatalf("step %d: %s = %v; the model says %v", step, what, err, want)
		}
		if !same(got, gotExists, next, nextExists) {
			t.Fatalf("step %d: after %s (err %v): stored %d properties in %d parts (exists %v), model %d in %d (exists %v)",
				step, what, err, len(got.props), got.parts, gotExists, len(next.props), next.parts, nextExists)
		}
		// A write that succeeded returns the ETag stored: nothing else
		// writes here, so table.Result's ETag is never empty.
		if err == nil && nextExists && op != 5 && res.ETag != gotETag {
			t.Fatalf("step %d: %s returned ETag %q (Verified %v), the header's is %q", step, what, res.ETag, res.Verified, gotETag)
		}
		if nextExists {
			model[rk] = next
		} else {
			delete(model, rk)
		}
		if gotETag != etags[rk] {
			stale[rk], etags[rk] = etags[rk], gotETag
		}
		// Exactly the rows of the entities that exist, nothing else.
		var wantKeys []string
		for _, k := range rks {
			if e, ok := model[k]; ok {
				wantKeys = append(wantKeys, wantRows(k, e.parts)...)
			}
		}
		slices.SortFunc(wantKeys, keys.Compare)
		if stored, _ := f.rows(t, "m"); !slices.Equal(stored, wantKeys) {
			t.Fatalf("step %d: after %s: rows %v, want %v", step, what, stored, wantKeys)
		}
		f.ft.Reset()
	})
}
