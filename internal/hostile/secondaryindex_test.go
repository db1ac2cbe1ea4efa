package hostile_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/hostile"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// emp is the secondaryindex test's entity: SSN is sealed (encrypted), the
// other fields are indexed or copied.
type emp struct {
	Dept  string `table:",pk"`
	ID    string `table:",rk"`
	Name  string
	Email string
	Last  string
	SSN   string
}

// siIntent is the payload of a secondaryindex intent as a queue writer
// forges it.
type siIntent struct {
	PK, ID string
	Old    []siCopy
}

type siCopy struct{ Index, PK, RK string }

// TestHostileModelSecondaryIndex: tenant A keeps employees in partition
// HR of a Store with a sealed SSN, two SamePartition indexes (email:
// unique, Listed Name; last: KeysOnly) and two OtherPartition ones
// (email2: unique, in email2!<pk>; org: Listed Name, organisation-wide
// in another table), kept by a running worker. Between A's random
// inserts, updates, modifies and deletes, the attacker, holding partition
// Sales and the intents queue, uses the Store in Sales and plants copies
// naming HR's entities, copies with a plaintext SSN, garbage references,
// unsealed primaries, reserved rows, forged intents naming HR's copies
// and garbage messages; an operator rebuilds Sales or everything. After
// every step: no read of Sales returns HR's data or a sealed field from a
// copy, and none panics; HR reads exactly as the model says; HR's
// partition holds exactly the rows A's entities call for. After a drain,
// HR's OtherPartition copies are exactly those too and Check(HR) is clean.
// 40 steps in make test, 1,000 in make soak.
func TestHostileModelSecondaryIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := testrig.New(t)
	tc, oc := r.Table(), r.Table()
	tbl := testrig.NewTable[table.Dynamic](t, tc)
	qc := queue(t, r, false, tc)
	q := qc.q
	sum := sha256.Sum256([]byte("hostile"))
	ks, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": sum[:]})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.New[emp](tbl, ks, []string{"SSN"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := secondaryindex.New(tbl, &secondaryindex.Options[emp]{Primary: "emp", Queue: q, Sealer: enc, Retry: &testrig.Fast,
		Indexes: []secondaryindex.Index[emp]{
			{Name: "email", Unique: true, Holds: secondaryindex.Listed, Fields: []string{"Name"}, On: []string{"Email"}},
			{Name: "last", Holds: secondaryindex.KeysOnly, On: []string{"Last"}},
			{Name: "email2", Unique: true, Holds: secondaryindex.KeysOnly, Where: secondaryindex.OtherPartition, On: []string{"Email"}},
			{Name: "org", Holds: secondaryindex.Listed, Fields: []string{"Name"}, Where: secondaryindex.OtherPartition, Table: testrig.NewTable[table.Dynamic](t, oc),
				Partition: func(string) string { return "everyone" }, On: []string{"Last"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrace(t)
	w := worker(t, tr, q, nil, s.Handler())
	raw := r.Clean(tc) // the attacker's client (see package hostile)
	kind := "tk-secondaryindex/" + tbl.Name() + "/emp"

	model := map[string]emp{} // HR's entities by id
	version := 0
	hrEmp := func(rnd *rand.Rand, id string) emp {
		version++
		return emp{Dept: "HR", ID: id, Name: fmt.Sprintf("%s-name-%s-%d", secret, id, version), Email: fmt.Sprintf("%s.%s.%d@hr", secret, id, version),
			Last: fmt.Sprintf("L%d", rnd.IntN(3)), SSN: fmt.Sprintf("%s-ssn-%d", secret, version)} // Last is shared with Sales
	}
	evil := func(rnd *rand.Rand) string { return fmt.Sprintf("evil%d", rnd.IntN(4)) }
	ids := []string{"000001", "000002", "000003", "000004", "000005"}
	full := [2]string{"A", "z"} // every value of both tenants

	// checkSales reads Sales every way there is: errors are allowed (the
	// attacker may spoil its own partition), HR's data and sealed fields
	// read from a copy are not.
	checkSales := func(step int) {
		sentinels := map[string]error{"ErrCorrupt": secondaryindex.ErrCorrupt, "ErrNotFound": table.ErrNotFound}
		check := func(what string, e secondaryindex.Entity[emp], err error) {
			tr.outcome(what[:strings.IndexByte(what, '(')]+"(Sales)", err, sentinels)
			if e.PartitionKey == "HR" || e.Value.Dept == "HR" || leaks(e) {
				tr.fatalf("step %d: %s returned HR's data: %+v (err %v)", step, what, e, err)
			}
			if e.FromCopy && (e.Value.SSN != "" || e.Value.Email != "" || e.Value.Last != "") {
				tr.fatalf("step %d: %s returned a field its index does not copy (SSN is sealed) read from a copy: %+v", step, what, e)
			}
		}
		values := []string{"evil0", "evil1", "evil2", "evil3"}
		for _, e := range model {
			values = append(values, e.Email)
		}
		for _, v := range values {
			for _, ix := range []string{"email", "email2"} {
				for _, fetch := range []bool{false, true} {
					e, err := s.Lookup(ctx, "Sales", ix, v, &secondaryindex.LookupOptions{Fetch: fetch})
					check(fmt.Sprintf("Lookup(Sales, %s, %s, Fetch %v)", ix, v, fetch), e, err)
				}
			}
		}
		for _, ix := range []string{"email", "last", "email2", "org"} {
			for _, fetch := range []bool{false, true} {
				for e, err := range s.Range(ctx, "Sales", ix, full[0], full[1], &secondaryindex.LookupOptions{Fetch: fetch}) {
					check(fmt.Sprintf("Range(Sales, %s, Fetch %v)", ix, fetch), e, err)
				}
			}
		}
		for _, id := range ids {
			e, err := s.Get(ctx, "Sales", id)
			check("Get(Sales, "+id+")", e, err)
		}
	}
	// sorted returns HR's entities ordered by less.
	sorted := func(less func(a, b emp) int) []emp {
		out := make([]emp, 0, len(model))
		for _, e := range model {
			out = append(out, e)
		}
		slices.SortFunc(out, less)
		return out
	}
	byEmail := func(a, b emp) int { return strings.Compare(a.Email, b.Email) }
	byLast := func(a, b emp) int { return strings.Compare(keys.Join(a.Last, a.ID), keys.Join(b.Last, b.ID)) }
	// hrRange checks that a range of HR's index ix yields exactly want, in
	// order: whole entities when fetched, else the keys and Name.
	hrRange := func(step int, ix string, fetch bool, want []emp) {
		var got []emp
		for e, err := range s.Range(ctx, "HR", ix, full[0], full[1], &secondaryindex.LookupOptions{Fetch: fetch}) {
			if err != nil {
				tr.fatalf("step %d: Range(HR, %s): %v", step, ix, err)
			}
			if e.PartitionKey != "HR" || e.Value.Dept != "HR" || e.RowKey != e.Value.ID {
				tr.fatalf("step %d: Range(HR, %s) returned an entity under other keys: %+v", step, ix, e)
			}
			if e.FromCopy {
				if e.Value.SSN != "" || e.Value.Email != "" || e.Value.Last != "" {
					tr.fatalf("step %d: Range(HR, %s) read from a copy more than its Name: %+v", step, ix, e)
				}
				full := model[e.RowKey]
				e.Value.Email, e.Value.Last, e.Value.SSN = full.Email, full.Last, full.SSN
			}
			got = append(got, e.Value)
		}
		if !slices.Equal(got, want) {
			tr.fatalf("step %d: Range(HR, %s, Fetch %v):\n got %+v\nwant %+v", step, ix, fetch, got, want)
		}
	}
	// checkHR reads HR as A does and compares with the model, and the
	// partition's rows with those A's entities call for.
	checkHR := func(step int) {
		for _, id := range ids {
			e, err := s.Get(ctx, "HR", id)
			want, ok := model[id]
			switch {
			case !ok && !errors.Is(err, table.ErrNotFound):
				tr.fatalf("step %d: Get(HR, %s) = %+v, %v; want ErrNotFound", step, id, e, err)
			case ok && (err != nil || e.Value != want):
				tr.fatalf("step %d: Get(HR, %s) = %+v, %v; want %+v", step, id, e.Value, err, want)
			}
		}
		for _, e := range model {
			got, err := s.Lookup(ctx, "HR", "email", e.Email, &secondaryindex.LookupOptions{Fetch: true})
			if err != nil || got.Value != e {
				tr.fatalf("step %d: Lookup(HR, email, %s) = %+v, %v; want %+v", step, e.Email, got.Value, err, e)
			}
		}
		hrRange(step, "email", false, sorted(byEmail))
		hrRange(step, "email", true, sorted(byEmail))
		hrRange(step, "last", false, sorted(byLast))
		var want []string
		for _, e := range model {
			want = append(want, keys.Join("emp", e.ID), keys.Join("email", e.Email), keys.Join("last", e.Last, e.ID))
		}
		slices.Sort(want)
		own, kept := split(rows(t, r, tc, "HR"))
		if !slices.Equal(own, want) {
			tr.fatalf("step %d: partition HR holds\n %q\nwant\n %q", step, own, want)
		}
		for _, rk := range kept {
			if !strings.HasPrefix(rk, reserved.Prefix+"intent~") {
				tr.fatalf("step %d: partition HR holds reserved row %q", step, rk)
			}
		}
	}
	// checkDrained checks HR's OtherPartition copies once the worker has
	// drained the queue.
	checkDrained := func(step int) {
		hrRange(step, "email2", false, sorted(byEmail))
		hrRange(step, "org", false, sorted(byLast))
		var want2, wantOrg []string
		for _, e := range model {
			want2 = append(want2, keys.Join("email2", e.Email))
			wantOrg = append(wantOrg, keys.Join("org", e.Last, "HR", e.ID))
		}
		slices.Sort(want2)
		slices.Sort(wantOrg)
		if got, _ := split(rows(t, r, tc, keys.Join("email2", "HR"))); !slices.Equal(got, want2) {
			tr.fatalf("step %d: partition email2!HR holds\n %q\nwant\n %q", step, got, want2)
		}
		var gotOrg []string
		for _, rk := range rows(t, r, oc, "everyone") {
			if p, err := keys.Split(rk); err == nil && len(p) == 4 && p[2] == "HR" {
				gotOrg = append(gotOrg, rk)
			}
		}
		slices.Sort(gotOrg)
		if !slices.Equal(gotOrg, wantOrg) {
			tr.fatalf("step %d: HR's org copies\n %q\nwant\n %q", step, gotOrg, wantOrg)
		}
		if d, err := s.Check(ctx, "HR"); err != nil || !d.Clean() {
			tr.fatalf("step %d: Check(HR) = %+v, %v", step, d, err)
		}
	}

	modelcheck.Run(t, 40, 1000, func(t *testing.T, rnd *rand.Rand, step int) {
		tr.t = t
		id := ids[rnd.IntN(len(ids))]
		cur, exists := model[id]
		drained := false
		switch k := rnd.IntN(20); {
		case k < 3: // A inserts
			v := hrEmp(rnd, id)
			tr.do(step, "Insert HR/"+id, func() {
				_, err := s.Insert(ctx, v)
				switch {
				case exists && errors.Is(err, table.ErrAlreadyExists):
				case errors.Is(err, eventual.ErrCommitWindow): // not applied: the machine was too slow
				case !exists && err == nil:
					model[id] = v
				default:
					tr.fatalf("step %d: Insert(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 5: // A modifies
			v := hrEmp(rnd, id)
			tr.do(step, "Modify HR/"+id, func() {
				_, err := s.Modify(ctx, "HR", id, func(e *emp) error { *e = v; return nil })
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case errors.Is(err, eventual.ErrCommitWindow):
				case exists && err == nil:
					model[id] = v
				default:
					tr.fatalf("step %d: Modify(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 6: // A updates what it read
			v := hrEmp(rnd, id)
			v.Last = cur.Last // only the unique values and fields move
			tr.do(step, "Update HR/"+id, func() {
				prev, err := s.Get(ctx, "HR", id)
				if !exists {
					if !errors.Is(err, table.ErrNotFound) {
						tr.fatalf("step %d: Get(HR/%s): %v; want ErrNotFound", step, id, err)
					}
					return
				}
				if err != nil || prev.ETag == "" {
					tr.fatalf("step %d: Get(HR/%s) = %+v, %v; want the entity with its ETag", step, id, prev, err)
				}
				if _, err := s.Update(ctx, v, prev.ETag); errors.Is(err, eventual.ErrCommitWindow) {
					return
				} else if err != nil {
					tr.fatalf("step %d: Update(HR/%s): %v", step, id, err)
				}
				model[id] = v
			})
		case k < 7: // A deletes
			tr.do(step, "Delete HR/"+id, func() {
				err := s.Delete(ctx, "HR", id, azcore.ETagAny)
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case errors.Is(err, eventual.ErrCommitWindow):
				case exists && err == nil:
					delete(model, id)
				default:
					tr.fatalf("step %d: Delete(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 9: // the worker drains the queue
			tr.do(step, "Drain", func() { testrig.Drain(t, w.Drain) })
			drained = true
		case k < 10: // the attacker uses the Store in its partition
			v := emp{Dept: "Sales", ID: id, Name: evil(rnd), Email: evil(rnd), Last: []string{evil(rnd), fmt.Sprintf("L%d", rnd.IntN(3))}[rnd.IntN(2)], SSN: evil(rnd)}
			tr.do(step, "Insert or Delete Sales/"+id, func() {
				if _, err := s.Insert(ctx, v); err != nil {
					_ = s.Delete(ctx, "Sales", id, azcore.ETagAny) // anything but a panic is fine in Sales
				}
			})
		case k < 13: // the attacker plants copies in Sales
			for range 3 {
				ref := [2]string{"HR", ids[rnd.IntN(len(ids))]} // HR's entity
				switch rnd.IntN(5) {
				case 0, 1:
					ref[0] = "Sales"
				case 2:
					ref = [2]string{[]string{"HR", keys.Join("HR", "x", "y"), "", "~tk~intent~x"}[rnd.IntN(4)], ""} // garbage
				}
				rk := keys.Join("email", evil(rnd))
				if rnd.IntN(2) == 0 {
					rk = keys.Join("last", evil(rnd), []string{ref[1], "000009"}[rnd.IntN(2)])
				}
				extra := map[string]any{"Name": evil(rnd)}
				if rnd.IntN(2) == 0 {
					extra["SSN"] = "plaintext-" + evil(rnd) // a sealed field, in clear
					extra["Email"] = evil(rnd)
				}
				tr.do(step, fmt.Sprintf("plant copy Sales/%s -> %q", rk, ref), func() {
					if err := hostile.Copy(ctx, raw, "Sales", rk, ref[0], ref[1], extra); err != nil {
						t.Fatal(err)
					}
				})
			}
		case k < 14: // the attacker plants an unsealed primary, or a reserved row
			rk, props := keys.Join("emp", id), map[string]any{"Name": evil(rnd), "SSN": "plaintext", secondaryindex.RefProperty: keys.Join("HR", id)}
			if rnd.IntN(2) == 0 {
				rk = reserved.Prefix + []string{"intent~" + hostile.ID(), "ix!emp", "x"}[rnd.IntN(3)]
			}
			tr.do(step, "plant row Sales/"+rk, func() {
				if err := hostile.Row(ctx, raw, "Sales", rk, props); err != nil {
					t.Fatal(err)
				}
			})
		case k < 17: // the attacker forges intents naming HR's copies
			var old []siCopy
			for _, e := range model {
				old = append(old, siCopy{"email2", keys.Join("email2", "HR"), keys.Join("email2", e.Email)}, siCopy{"org", "everyone", keys.Join("org", e.Last, "HR", e.ID)},
					siCopy{"email", "HR", keys.Join("email", e.Email)}, siCopy{"last", "HR", keys.Join("last", e.Last, e.ID)})
			}
			pk := []string{"HR", "Sales"}[rnd.IntN(2)]
			in := siIntent{PK: pk, ID: id, Old: old}
			p, _ := json.Marshal(in)
			if rnd.IntN(4) == 0 {
				p = []byte(`{"PK":7}`)
			}
			tr.do(step, fmt.Sprintf("forge intent %s/%s naming %d copies", pk, id, len(old)), func() {
				qc.forge(t, hostile.Envelope{V: 1, ID: hostile.ID(), Kind: kind, Created: time.Now(), Payload: p})
			})
		case k < 18: // garbage on the queue
			tr.do(step, "garbage message", func() { qc.garbage(t, rnd, kind, raw) })
		case k < 19:
			tr.do(step, "Rebuild(Sales)", func() {
				_, err := s.Rebuild(ctx, "Sales") // the attacker's partition may fail
				tr.outcome("Rebuild(Sales)", err, map[string]error{"ErrDuplicate": secondaryindex.ErrDuplicate, "ErrCorrupt": secondaryindex.ErrCorrupt})
			})
		default:
			tr.do(step, "Rebuild()", func() {
				testrig.Drain(t, w.Drain)
				_, err := s.Rebuild(ctx, "") // fails on what the attacker planted in Sales
				tr.outcome("Rebuild()", err, map[string]error{"ErrDuplicate": secondaryindex.ErrDuplicate, "ErrCorrupt": secondaryindex.ErrCorrupt})
			})
		}
		tr.do(step, "check Sales", func() { checkSales(step) })
		tr.do(step, "check HR", func() { checkHR(step) })
		if drained {
			tr.do(step, "check HR's OtherPartition copies", func() { checkDrained(step) })
		}
	})
	tr.do(-1, "final drain", func() {
		testrig.Drain(t, w.Drain)
		checkDrained(-1)
	})
}
