package secondaryindex_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestModelLargeComposed runs random writes of people with photos of
// random sizes (none, inline, in a blob), plain (Insert, Update, Modify,
// Delete) and composed with a note row in one transaction (InsertOps,
// UpdateOps, ModifyOps, DeleteOps and table.Apply), with a quarter of the
// transactions' and of the blob uploads' responses lost, against a model:
// after every step the people (names and photos) and their notes equal
// the model and the indexes match exactly; every 10 steps, Sweep past
// Grace deletes every blob no person points at, and every photo still
// reads back. 40 steps in make test, 3,000 in make soak.
func TestModelLargeComposed(t *testing.T) {
	t.Parallel()
	r := newLargeRig(t)
	notes := testrig.NewTable[note](t, r.c)
	ctx := context.Background()
	model := map[string]Person{} // id -> person
	noted := map[string]int{}    // id -> notes written with its changes
	sizes := []int{0, 10 << 10, 80 << 10}
	steps, every := modelcheck.Steps(40, 3000), 10
	modelcheck.Run(t, 40, 3000, func(t *testing.T, rnd *rand.Rand, i int) {
		if rnd.IntN(4) == 0 {
			r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "$batch") }, LoseResponse: true})
		}
		if rnd.IntN(4) == 0 {
			r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return q.Method == http.MethodPut }, LoseResponse: true})
		}
		id := fmt.Sprintf("%06d", rnd.IntN(5))
		p := Person{Department: "Sales", ID: id, FirstName: fmt.Sprint("F", rnd.IntN(3)), LastName: fmt.Sprint("L", rnd.IntN(3)),
			Email: fmt.Sprintf("e%d@contoso.com", rnd.IntN(6))}
		if n := sizes[rnd.IntN(3)]; n > 0 {
			p.Photo = picture(n, rnd.Uint64())
		}
		composed := rnd.IntN(2) == 0
		note := table.Change{By: "notes", Ops: []table.Op{notes.InsertOp(note{Dept: "Sales", Key: fmt.Sprintf("note!%s!%d", id, i), Text: fmt.Sprint(i)})}}
		apply := func(ch table.Change, err error) error {
			if err != nil {
				return err
			}
			_, err = notes.Apply(ctx, ch, note)
			return err
		}
		cur, exists := model[id]
		var err error
		want := p // what the person is after the write, if it applies
		what := ""
		switch op := rnd.IntN(4); {
		case op == 0 && !exists || !exists && op != 3:
			what = "insert"
			if composed {
				err = apply(r.store.InsertOps(ctx, p))
			} else {
				_, err = r.store.Insert(ctx, p)
			}
		case op <= 1:
			what = "update"
			got, gerr := r.store.Get(ctx, "Sales", id)
			if gerr != nil {
				t.Fatalf("step %d: Get %s: %v", i, id, gerr)
			}
			if composed {
				err = apply(r.store.UpdateOps(ctx, p, got.ETag))
			} else {
				_, err = r.store.Update(ctx, p, got.ETag)
			}
		case op == 2:
			// A rename, and sometimes a new photo: a photo left empty keeps
			// its blob.
			what = "modify"
			want = cur
			want.FirstName, want.LastName = p.FirstName, p.LastName
			newPhoto := rnd.IntN(2) == 0 && p.Photo != nil
			if newPhoto {
				want.Photo = p.Photo
			}
			fn := func(v *Person) error {
				v.FirstName, v.LastName = p.FirstName, p.LastName
				if newPhoto {
					v.Photo = p.Photo
				}
				return nil
			}
			if composed {
				err = apply(r.store.ModifyOps(ctx, "Sales", id, fn))
			} else {
				_, err = r.store.Modify(ctx, "Sales", id, fn)
			}
		default:
			what = "delete"
			if composed {
				err = apply(r.store.DeleteOps(ctx, "Sales", id, azcore.ETagAny))
			} else {
				err = r.store.Delete(ctx, "Sales", id, azcore.ETagAny)
			}
		}
		if what == "delete" && !exists {
			if !errors.Is(err, table.ErrNotFound) {
				t.Fatalf("step %d: delete of a missing %s: %v", i, id, err)
			}
			return
		}
		dup := false
		for oid, o := range model {
			dup = dup || what != "delete" && oid != id && o.Email == want.Email
		}
		// Settle the model from the truth when the outcome is unknown or a
		// duplicate; check it otherwise.
		got, gerr := r.store.Get(ctx, "Sales", id)
		switch {
		case errors.Is(err, table.ErrOutcomeUnknown):
			if gerr == nil {
				model[id] = got.Value
			} else {
				delete(model, id)
			}
		case errors.Is(err, secondaryindex.ErrDuplicate):
			if !dup {
				t.Fatalf("step %d: ErrDuplicate for %s, which no other person has", i, want.Email)
			}
		case err != nil:
			t.Fatalf("step %d: %s %s (composed %v, exists %v): %v", i, what, id, composed, exists, err)
		case dup:
			t.Fatalf("step %d: %s %s took email %s, which another person has", i, what, id, want.Email)
		case what == "delete":
			delete(model, id)
		default:
			model[id] = want
		}
		if err == nil && composed {
			noted[id]++
		}
		if m, ok := model[id]; ok != (gerr == nil) || ok && (m.FirstName != got.Value.FirstName || m.LastName != got.Value.LastName || m.Email != got.Value.Email || !bytes.Equal(m.Photo, got.Value.Photo)) {
			t.Fatalf("step %d: after %s of %s (composed %v): stored %v (%v), model %v", i, what, id, composed, got.Value.LastName, gerr, m.LastName)
		}
		if !errors.Is(err, table.ErrOutcomeUnknown) {
			all, err := table.Collect(notes.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.RowKeyPrefix("note", id))}))
			if err != nil || len(all) != noted[id] {
				t.Fatalf("step %d: %d notes of %s, want %d (one per composed write applied): %v", i, len(all), id, noted[id], err)
			}
		} else if n, err := table.Collect(notes.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.RowKeyPrefix("note", id))})); err == nil {
			noted[id] = len(n)
		}
		d, err := r.store.Check(ctx, "Sales")
		if err != nil || !d.Clean() || d.Entities != len(model) {
			t.Fatalf("step %d: Check = %+v, %v; model has %d", i, d, err, len(model))
		}
		if (i+1)%every == 0 || i == steps-1 {
			r.clock.Advance(2 * time.Hour)
			sw, err := r.photos.Sweep(ctx)
			if err != nil {
				t.Fatalf("step %d: Sweep: %v", i, err)
			}
			again, err := r.photos.Sweep(ctx)
			if err != nil || again.Deleted != 0 || again.Listed != sw.Listed-sw.Deleted {
				t.Fatalf("step %d: a second Sweep = %+v, %v", i, again, err)
			}
			held := 0
			for id, m := range model {
				got, err := r.store.Get(ctx, "Sales", id)
				if err != nil || !bytes.Equal(got.Value.Photo, m.Photo) {
					t.Fatalf("step %d: after Sweep, %s: %v", i, id, err)
				}
				if len(m.Photo) > 32<<10 {
					held++
				}
			}
			if again.Listed != held {
				t.Fatalf("step %d: %d blobs after Sweep, %d photos in blobs", i, again.Listed, held)
			}
		}
	})
}
