package encryption_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// member has two encrypted strings (Email indexed) and an encrypted count.
type member struct {
	table.Meta
	PartitionKey, RowKey string
	Name                 string
	Email, SSN           string
	Visits               int32
}

// TestModelEncryptedWrites runs random writes of every kind (Insert,
// Upserts whole and of Email alone, conditional Update, Modify, Delete),
// key rotations followed by Reencrypt, and blind-index lookups, while
// write responses are lost at random. After every step each entity reads
// back as the model says, a lookup by email finds exactly the entities
// with that email, and no stored byte holds a plaintext email or SSN. 40
// steps in make test, 2,000 in make soak.
func TestModelEncryptedWrites(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	gen := 1
	keyring := map[string][]byte{"k1": key("k1")}
	newTable := func() *encryption.Table[member] {
		keys, err := encryption.NewStaticKeys(fmt.Sprintf("k%d", gen), keyring)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := encryption.New[member](r.tbl, keys, []string{"Email", "SSN", "Visits"}, &encryption.Options{
			Indexes: []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}}, IndexKey: key("index")})
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	enc := newTable()
	model := map[string]member{} // RowKey -> the entity's logical content
	writes := func(req *http.Request) bool { return req.Method != http.MethodGet }
	var counts [8]int
	unknown := 0
	modelcheck.Run(t, 40, 2000, func(t *testing.T, rnd *rand.Rand, step int) {
		rk := fmt.Sprintf("m%d", rnd.IntN(5))
		email := fmt.Sprintf("User%d@Example.com", rnd.IntN(4)) // shared by several entities
		ssn := fmt.Sprintf("ssn-%06d-%d", step, rnd.IntN(1000))
		if rnd.IntN(3) == 0 {
			r.Faults.Inject(faults.Fault{Match: writes, LoseResponse: true})
		}
		cur, exists := model[rk]
		next := member{PartitionKey: "p", RowKey: rk, Name: fmt.Sprintf("n%d", step), Email: email, SSN: ssn, Visits: int32(step)}
		op := rnd.IntN(8)
		var err error
		before := model[rk]
		switch op {
		case 0:
			_, err = enc.Insert(ctx, next)
			if exists && (errors.Is(err, table.ErrAlreadyExists) || errors.Is(err, table.ErrOutcomeUnknown)) {
				err = nil // it existed: the insert certainly did not apply
				break
			}
			model[rk] = next
		case 1:
			_, err = enc.Upsert(ctx, next, table.Replace)
			model[rk] = next
		case 2: // change the email alone: its index goes with it
			if !exists {
				return
			}
			_, err = enc.Upsert(ctx, member{PartitionKey: "p", RowKey: rk, Email: email}, table.Fields("Email"))
			cur.Email = email
			model[rk] = cur
		case 3: // read, change, write back conditioned on the ETag
			if !exists {
				return
			}
			var got table.Entity[member]
			if got, err = enc.Get(ctx, "p", rk, nil); err != nil {
				break
			}
			got.Value.SSN, got.Value.Name = ssn, next.Name
			_, err = enc.Update(ctx, got.Value, got.ETag, table.Merge)
			cur.SSN, cur.Name = ssn, next.Name
			model[rk] = cur
		case 4:
			if !exists {
				return
			}
			_, err = enc.Modify(ctx, "p", rk, func(m *member) error { m.Visits++; return nil }, nil)
			cur.Visits++
			model[rk] = cur
		case 5:
			err = enc.Delete(ctx, "p", rk, "*")
			if errors.Is(err, table.ErrNotFound) { // gone, by this delete or before
				err = nil
			}
			delete(model, rk)
		case 6: // rotate to a new key, then re-encrypt everything
			gen++
			keyring[fmt.Sprintf("k%d", gen)] = key(fmt.Sprintf("k%d", gen))
			enc = newTable()
			var p encryption.Progress
			p, err = enc.Reencrypt(ctx, nil)
			if err == nil && (!p.Done || p.Skipped != 0 || p.Scanned != len(model)) {
				t.Fatalf("step %d: Reencrypt %+v with %d entities", step, p, len(model))
			}
		case 7: // a lookup by email finds exactly the entities with it
			want := 0
			for _, m := range model {
				if strings.EqualFold(m.Email, email) {
					want++
				}
			}
			n := 0
			for m, lerr := range enc.Find(ctx, "p", "Email", strings.ToUpper(email)) {
				if lerr != nil {
					t.Fatalf("step %d: lookup: %v", step, lerr)
				}
				if !strings.EqualFold(m.Value.Email, email) {
					t.Fatalf("step %d: lookup of %s found %s", step, email, m.Value.Email)
				}
				n++
			}
			if n != want {
				t.Fatalf("step %d: lookup of %s found %d, model %d", step, email, n, want)
			}
		}
		if errors.Is(err, table.ErrOutcomeUnknown) {
			// Allowed by the contract: the write applied or not, and the
			// entity must be one or the other.
			got, gerr := enc.Get(ctx, "p", rk, nil)
			after, present := model[rk]
			switch {
			case errors.Is(gerr, table.ErrNotFound) && (!exists || !present):
				delete(model, rk)
			case gerr == nil && present && sameMember(got.Value, after):
			case gerr == nil && exists && sameMember(got.Value, before):
				model[rk] = before
			default:
				t.Fatalf("step %d, op %d on %s: unknown outcome, and the entity (%+v, %v) is neither before %+v nor after %+v", step, op, rk, got, gerr, before, after)
			}
			err = nil
			unknown++
		}
		if err != nil {
			t.Fatalf("step %d, op %d on %s: %v", step, op, rk, err)
		}
		counts[op]++
		r.Faults.Reset()

		// Every entity reads as the model says; nothing else is there.
		got, err := table.Collect(enc.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}))
		if err != nil {
			t.Fatalf("step %d: query: %v", step, err)
		}
		if len(got) != len(model) {
			t.Fatalf("step %d: %d entities, model %d", step, len(got), len(model))
		}
		for _, g := range got {
			if m := model[g.RowKey]; !sameMember(g, m) {
				t.Fatalf("step %d: %s reads %+v, model %+v", step, g.RowKey, g, model[g.RowKey])
			}
		}
		// The service holds no plaintext email or SSN.
		for _, row := range r.rawRows(t) {
			for _, m := range model {
				if strings.Contains(row, m.SSN) || strings.Contains(strings.ToLower(row), strings.ToLower(m.Email)) {
					t.Fatalf("step %d: a stored row holds a plaintext value", step)
				}
			}
		}
	})
	t.Logf("outcomes: ops by kind %v, %d unknown (settled by a read), %d keys", counts, unknown, gen)
}

// same compares what the model tracks of a member.
func sameMember(a, b member) bool {
	return a.Name == b.Name && a.Email == b.Email && a.SSN == b.SSN && a.Visits == b.Visits
}
