package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// staleETag is the ETag of no version.
const staleETag = azcore.ETag(`W/"datetime'2000-01-01T00%3A00%3A00Z'"`)

// TestModelIndexes runs random inserts, updates (Modify, and Update with
// azcore.ETagAny, the current ETag or a stale one) that change indexed
// values (often to a value another entity has), and deletes, with a
// quarter of the batch responses lost, against a model: after every
// operation the
// entities equal the model and the SamePartition indexes match them
// exactly; every 10 operations, after the worker drained the queue, the
// OtherPartition indexes do too. 60 operations in make test, 10,000 in
// make soak.
func TestModelIndexes(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), true)
	w := r.worker(t)
	ctx := context.Background()
	s := r.store
	model := map[string]Employee{} // id -> entity
	emailOwner := func(email, except string) bool {
		for id, e := range model {
			if id != except && e.Email == email {
				return true
			}
		}
		return false
	}
	steps, every := modelcheck.Steps(60, 10000), 10
	modelcheck.Run(t, 60, 10000, func(t *testing.T, rnd *rand.Rand, i int) {
		if rnd.IntN(4) == 0 {
			r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "$batch") }, LoseResponse: true})
		}
		id := fmt.Sprintf("%06d", rnd.IntN(6))
		e := Employee{Department: "Sales", ID: id, FirstName: fmt.Sprint("F", rnd.IntN(3)), LastName: fmt.Sprint("L", rnd.IntN(3)),
			Email: fmt.Sprintf("e%d@contoso.com", rnd.IntN(8)), Age: int64(20 + rnd.IntN(5))}
		_, exists := model[id]
		var err error
		write, what, stale := true, "Insert", false
		switch op := rnd.IntN(4); {
		case op == 0 && !exists:
			_, err = s.Insert(ctx, e)
		case op == 0 || op == 1 && exists:
			what = "Modify"
			_, err = s.Modify(ctx, "Sales", id, func(v *Employee) error { *v = e; return nil })
		case op == 3 && exists:
			// Update with azcore.ETagAny, the current ETag, or a stale one
			// (refused after the read, nothing written).
			what = "Update"
			cur, gerr := s.Get(ctx, "Sales", id)
			if gerr != nil {
				t.Fatalf("step %d: Get %s: %v", i, id, gerr)
			}
			etag := []azcore.ETag{azcore.ETagAny, cur.ETag, staleETag}[rnd.IntN(3)]
			stale = etag == staleETag
			write = !stale
			_, err = s.Update(ctx, e, etag)
		default:
			write, what = false, "Delete"
			err = s.Delete(ctx, "Sales", id, azcore.ETagAny)
		}
		dup := write && emailOwner(e.Email, id)
		switch {
		case stale:
			if !errors.Is(err, table.ErrPreconditionFailed) {
				t.Fatalf("step %d: Update of %s with a stale ETag: %v", i, id, err)
			}
			if got, gerr := s.Get(ctx, "Sales", id); gerr != nil || got.Value != model[id] {
				t.Fatalf("step %d: a refused Update changed %s: %+v, %v", i, id, got.Value, gerr)
			}
			err = nil
		case errors.Is(err, secondaryindex.ErrDuplicate):
			if !dup {
				t.Fatalf("step %d: ErrDuplicate for %s, which no other entity has", i, e.Email)
			}
		case errors.Is(err, eventual.ErrCommitWindow):
			// Not applied: the machine was too slow for the commit window.
		case errors.Is(err, table.ErrNotFound):
			if exists {
				t.Fatalf("step %d: %s not found, but it exists", i, id)
			}
		case errors.Is(err, table.ErrOutcomeUnknown):
			// Settle from the truth.
			if got, gerr := s.Get(ctx, "Sales", id); gerr == nil {
				model[id] = got.Value
			} else {
				delete(model, id)
			}
		case err != nil:
			t.Fatalf("step %d: %s %s (exists %v, model %+v) of %+v: %v", i, what, id, exists, model[id], e, err)
		default:
			if dup {
				t.Fatalf("step %d: %s took email %s, which another entity has", i, id, e.Email)
			}
		}
		// Apply a successful write to the model by reading the truth once:
		// the write's own result is what the assertions above checked.
		if err == nil && !stale {
			if got, gerr := s.Get(ctx, "Sales", id); gerr == nil {
				if !write || got.Value != e {
					t.Fatalf("step %d: after %s %s stored %+v, wrote %+v", i, what, id, got.Value, e)
				}
				model[id] = e
			} else if errors.Is(gerr, table.ErrNotFound) {
				delete(model, id)
			} else {
				t.Fatalf("step %d: Get %s after %s: %v", i, id, what, gerr)
			}
		}
		r.clean(t, "Sales", "email", "name")
		if (i+1)%every == 0 || i == steps-1 {
			drain(t, w)
			r.clean(t, "")
			d, err := s.Check(ctx, "")
			if err != nil || d.Entities != len(model) {
				t.Fatalf("step %d: %d entities stored, model has %d (%v)", i, d.Entities, len(model), err)
			}
		}
	})
}
