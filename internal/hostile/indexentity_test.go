package hostile_test

import (
	"context"
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
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// person is the indexentity test's entity, indexed by Last.
type person struct {
	Dept string `table:",pk"`
	ID   string `table:",rk"`
	Last string
	Note string
}

// TestHostileModelIndexEntity: tenant A keeps people in partition HR,
// indexed by last name in the same-partition store (strong) and in the
// blob store (eventual, one organisation-wide list blob per value, kept
// by a running worker), with random inserts, updates and deletes. The
// attacker, holding partition Sales and the intents queue, uses the Index
// in Sales (also with RowKeys of index entities, which must be refused
// with nothing sent, in Sales and in HR), plants index entities in Sales
// whose lists name HR's ids, reserved rows, malformed ids or non-string
// lists, list blobs of its own values naming HR's entities, forged
// intents naming HR's entities and garbage messages. After every step: no
// lookup of Sales returns an id or entity of HR, no organisation-wide
// lookup of an attacker's value returns HR's entities, nothing panics;
// HR's lookups are exact (the blob store's after a drain; before, every
// entity returned has the value); HR's partition holds exactly A's
// entities and, in the same-partition store, their index entities. 40
// steps per store in make test, 800 in make soak.
func TestHostileModelIndexEntity(t *testing.T) {
	t.Parallel()
	for _, blobStore := range []bool{false, true} {
		name := "same partition"
		if blobStore {
			name = "blob store"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testHostileIndexEntity(t, blobStore)
		})
	}
}

func testHostileIndexEntity(t *testing.T, blobStore bool) {
	ctx := context.Background()
	r := testrig.New(t)
	tc := r.Table()
	tb := testrig.NewTable[person](t, tc)
	tr := newTrace(t)
	opts := &indexentity.Options{Retry: &testrig.Fast}
	var qc *queueRig
	if blobStore {
		qc = queue(t, r, true, tc)
		opts.Blobs, opts.Queue = qc.blobs, qc.q
	}
	x, err := indexentity.New(tb, "Last", func(p *person) string { return p.Last }, opts)
	if err != nil {
		t.Fatal(err)
	}
	drain := func() {}
	if blobStore {
		w := worker(t, tr, qc.q, nil, x.Handler())
		drain = func() { testrig.Drain(t, w.Drain) }
	}
	raw := r.Clean(tc) // the attacker's client
	kind := "indexentity:" + tb.Name() + ":Last"
	model := map[string]person{}
	ids := []string{"1", "2", "3", "4", "5"}
	hrValues := []string{"Jones", "Smith", "Lee"} // the attacker's entities may have them too
	evilValues := []string{"evil0", "evil1", "evil2"}
	version := 0
	sentinels := map[string]error{"ErrCorrupt": indexentity.ErrCorrupt, "ErrInvalid": indexentity.ErrInvalid, "ErrNotFound": table.ErrNotFound}
	// find collects Find's entities up to its first error, checking that
	// each envelope's keys are its value's.
	find := func(step int, pk, v string) ([]person, error) {
		var out []person
		for e, err := range x.Find(ctx, pk, v) {
			if err != nil {
				return out, err
			}
			if e.PartitionKey != e.Value.Dept || e.RowKey != e.Value.ID {
				tr.fatalf("step %d: Find(%q, %s) returned %+v under other keys", step, pk, v, e)
			}
			out = append(out, e.Value)
		}
		return out, nil
	}
	withValue := func(v string) []person {
		var out []person
		for _, id := range ids {
			if p, ok := model[id]; ok && p.Last == v {
				out = append(out, p)
			}
		}
		return out
	}
	checkSales := func(step int) {
		for _, v := range append(slices.Clone(hrValues), evilValues...) {
			got, err := x.FindIDs(ctx, "Sales", v)
			tr.outcome("FindIDs(Sales)", err, sentinels)
			for _, id := range got {
				if id.PartitionKey != "Sales" {
					tr.fatalf("step %d: FindIDs(Sales, %s) returned %+v (err %v)", step, v, got, err)
				}
			}
			es, err := find(step, "Sales", v)
			tr.outcome("Find(Sales)", err, sentinels)
			for _, e := range es {
				if e.Dept != "Sales" || leaks(e) {
					tr.fatalf("step %d: Find(Sales, %s) returned %+v (err %v)", step, v, es, err)
				}
			}
		}
		if blobStore { // the lists are organisation-wide: an attacker's value finds no HR entity
			for _, v := range evilValues {
				es, err := find(step, "", v)
				tr.outcome("Find(all)", err, sentinels)
				for _, e := range es {
					if e.Dept != "Sales" || leaks(e) || e.Last != v {
						tr.fatalf("step %d: Find(\"\", %s) returned %+v (err %v)", step, v, es, err)
					}
				}
			}
		}
	}
	// checkAll checks organisation-wide lookups of HR's values, which the
	// attacker's entities share: an error is allowed (a row of Sales may
	// spoil them), HR's entities among the results are exactly the model's.
	checkAll := func(step int) {
		for _, v := range hrValues {
			es, err := find(step, "", v)
			tr.outcome("Find(all, HR's value)", err, sentinels)
			var hr []person
			for _, e := range es {
				switch {
				case e.Last != v:
					tr.fatalf("step %d: Find(\"\", %s) returned %+v", step, v, e)
				case e.Dept == "HR":
					hr = append(hr, e)
				}
			}
			if err == nil && !slices.Equal(hr, withValue(v)) {
				tr.fatalf("step %d: Find(\"\", %s) returned HR's %+v, want %+v", step, v, hr, withValue(v))
			}
		}
	}
	checkHR := func(step int, exact bool) {
		if blobStore {
			// The attacker's values: lists any writer of the container
			// may spoil (ErrCorrupt), never with an HR entity.
			for _, v := range evilValues {
				es, err := find(step, "HR", v)
				tr.outcome("Find(HR, attacker's value)", err, sentinels)
				if len(es) != 0 {
					tr.fatalf("step %d: Find(HR, %s) = %+v, %v", step, v, es, err)
				}
			}
		}
		for _, v := range hrValues {
			want := withValue(v)
			es, err := find(step, "HR", v)
			if err != nil {
				tr.fatalf("step %d: Find(HR, %s): %v", step, v, err)
			}
			for _, e := range es {
				if !slices.Contains(want, e) {
					tr.fatalf("step %d: Find(HR, %s) returned %+v; the model has %+v", step, v, e, want)
				}
			}
			if !exact {
				continue
			}
			if len(es) != len(want) {
				tr.fatalf("step %d: Find(HR, %s) = %+v, want %+v", step, v, es, want)
			}
			got, err := x.FindIDs(ctx, "HR", v)
			var wantIDs []indexentity.ID
			for _, p := range want {
				wantIDs = append(wantIDs, indexentity.ID{PartitionKey: "HR", RowKey: p.ID})
			}
			if err != nil || !slices.Equal(got, wantIDs) {
				tr.fatalf("step %d: FindIDs(HR, %s) = %+v, %v; want %+v", step, v, got, err, wantIDs)
			}
		}
		var want []string
		values := map[string]bool{}
		for id, p := range model {
			want = append(want, id)
			values[p.Last] = true
		}
		slices.Sort(want)
		own, kept := split(rows(t, r, tc, "HR"))
		if !slices.Equal(own, want) {
			tr.fatalf("step %d: partition HR holds %q, want %q", step, own, want)
		}
		var wantReserved []string
		if !blobStore {
			for v := range values {
				wantReserved = append(wantReserved, keys.Join(indexentity.KeyPrefix, "Last", v))
			}
		}
		slices.Sort(wantReserved)
		for _, rk := range kept {
			if blobStore && strings.HasPrefix(rk, reserved.Prefix+"intent~") {
				continue // commit records, pending or ruled out by a forged message
			}
			if !slices.Contains(wantReserved, rk) {
				tr.fatalf("step %d: partition HR holds reserved row %q; want only %q", step, rk, wantReserved)
			}
		}
		if !blobStore && len(kept) != len(wantReserved) {
			tr.fatalf("step %d: partition HR's index entities %q, want %q", step, kept, wantReserved)
		}
	}
	// list returns ids the attacker lists.
	list := func(rnd *rand.Rand) []string {
		var out []string
		for range 1 + rnd.IntN(4) {
			id := ids[rnd.IntN(len(ids))]
			switch rnd.IntN(6) {
			case 0:
				out = append(out, keys.Join("HR", id)) // HR's entity
			case 1:
				out = append(out, keys.Join("Sales", id))
			case 2:
				out = append(out, id)
			case 3:
				out = append(out, keys.Join(indexentity.KeyPrefix, "Last", hrValues[rnd.IntN(len(hrValues))]), keys.Join("HR", reserved.Prefix+"intent~x")) // reserved rows
			case 4:
				out = append(out, "a#b", "\x01", keys.Join("HR", id, "x"), "") // no ids
			default:
				for i := range 50 {
					out = append(out, fmt.Sprint("many", i))
				}
			}
		}
		return out
	}

	modelcheck.Run(t, 40, 800, func(t *testing.T, rnd *rand.Rand, step int) {
		tr.t = t
		id := ids[rnd.IntN(len(ids))]
		_, exists := model[id]
		drained := !blobStore
		switch k := rnd.IntN(20); {
		case k < 3:
			version++
			v := person{Dept: "HR", ID: id, Last: hrValues[rnd.IntN(len(hrValues))], Note: fmt.Sprint(secret, version)}
			tr.do(step, "Insert HR/"+id, func() {
				_, err := x.Insert(ctx, v)
				switch {
				case exists && errors.Is(err, table.ErrAlreadyExists):
				case errors.Is(err, eventual.ErrCommitWindow): // not applied: the machine was too slow
				case !exists && err == nil:
					model[id] = v
				default:
					tr.fatalf("step %d: Insert(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 6:
			version++
			v := person{Dept: "HR", ID: id, Last: hrValues[rnd.IntN(len(hrValues))], Note: fmt.Sprint(secret, version)}
			tr.do(step, "Update HR/"+id, func() {
				_, err := x.Update(ctx, v, azcore.ETagAny)
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case errors.Is(err, eventual.ErrCommitWindow):
				case exists && err == nil:
					model[id] = v
				default:
					tr.fatalf("step %d: Update(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 7:
			tr.do(step, "Delete HR/"+id, func() {
				err := x.Delete(ctx, "HR", id, azcore.ETagAny)
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case errors.Is(err, eventual.ErrCommitWindow):
				case exists && err == nil:
					delete(model, id)
				default:
					tr.fatalf("step %d: Delete(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 9:
			tr.do(step, "Drain", drain)
			drained = true
		case k < 11: // the attacker uses the Index in Sales
			v := person{Dept: "Sales", ID: id, Last: append(slices.Clone(hrValues), evilValues...)[rnd.IntN(len(hrValues)+len(evilValues))], Note: "evil"}
			op := []string{"Insert", "Update", "Delete"}[rnd.IntN(3)]
			tr.do(step, op+" Sales/"+id, func() {
				var err error
				switch op {
				case "Insert":
					_, err = x.Insert(ctx, v)
				case "Update":
					_, err = x.Update(ctx, v, azcore.ETagAny)
				default:
					err = x.Delete(ctx, "Sales", id, azcore.ETagAny)
				}
				tr.outcome(op+"(Sales)", err, sentinels)
			})
		case k < 12: // an entity under an index entity's RowKey: refused, nothing sent
			pk := []string{"Sales", "HR"}[rnd.IntN(2)]
			v := person{Dept: pk, ID: keys.Join(indexentity.KeyPrefix, "Last", hrValues[rnd.IntN(len(hrValues))]), Last: "evil0"}
			op := []string{"Insert", "Update", "Delete"}[rnd.IntN(3)]
			tr.do(step, op+" "+pk+"/"+v.ID, func() {
				r.Faults.Reset()
				var err error
				switch op {
				case "Insert":
					_, err = x.Insert(ctx, v)
				case "Update":
					_, err = x.Update(ctx, v, azcore.ETagAny)
				default:
					err = x.Delete(ctx, pk, v.ID, azcore.ETagAny)
				}
				if !errors.Is(err, table.ErrInvalidKey) || !errors.Is(err, indexentity.ErrInvalid) || r.Faults.Count() != 0 {
					tr.fatalf("step %d: %s of %s/%s: %v after %d requests; want ErrInvalidKey and nothing sent", step, op, pk, v.ID, err, r.Faults.Count())
				}
			})
		case k < 15: // the attacker plants an index entity or a row in Sales
			value := append(slices.Clone(hrValues), evilValues...)[rnd.IntN(len(hrValues)+len(evilValues))]
			rk := keys.Join(indexentity.KeyPrefix, "Last", value)
			tr.do(step, "plant index entity Sales/"+rk, func() {
				var err error
				switch rnd.IntN(4) {
				case 0:
					err = hostile.Row(ctx, raw, "Sales", rk, map[string]any{indexentity.ListProperty + "00": 7.0, indexentity.ListProperty + "01": true})
				case 1: // as an eventual store's index entity: its own partition
					err = hostile.IndexList(ctx, raw, "Sales", indexentity.KeyPrefix, list(rnd))
				default:
					err = hostile.IndexList(ctx, raw, "Sales", rk, list(rnd))
				}
				if err != nil {
					t.Fatal(err)
				}
			})
		case k < 17: // list blobs of its own values, forged intents, garbage messages
			if !blobStore {
				tr.do(step, "plant entity Sales/"+id, func() {
					if err := hostile.Row(ctx, raw, "Sales", id, map[string]any{"Last": 7.0, "Note": "evil"}); err != nil {
						t.Fatal(err)
					}
				})
				break
			}
			switch rnd.IntN(3) {
			case 0:
				v := evilValues[rnd.IntN(len(evilValues))]
				tr.do(step, "plant list blob "+v, func() {
					ids := list(rnd)
					var err error
					if rnd.IntN(4) == 0 {
						err = hostile.Blob(ctx, qc.rawBlobs, keys.Join("Last", v), []byte{0xff, 0xfe, '\n', 'H', 'R', '!', '1', '\n'})
					} else {
						err = hostile.ListBlob(ctx, qc.rawBlobs, keys.Join("Last", v), ids)
					}
					if err != nil {
						t.Fatal(err)
					}
				})
			case 1:
				pk := []string{"HR", "Sales", reserved.Prefix + "x"}[rnd.IntN(3)]
				values := []string{hrValues[rnd.IntN(len(hrValues))], evilValues[rnd.IntN(len(evilValues))]}
				p := fmt.Sprintf(`{"pk":%q,"rk":%q,"values":[%q,%q]}`, pk, id, values[0], values[1])
				tr.do(step, "forge intent "+p, func() {
					qc.forge(t, hostile.Envelope{V: 1, ID: hostile.ID(), Kind: kind, Created: time.Now(), Payload: []byte(p)})
				})
			default:
				tr.do(step, "garbage message", func() { qc.garbage(t, rnd, kind, raw) })
			}
		default:
			tr.do(step, "plant reserved rows in Sales", func() {
				for _, rk := range []string{reserved.Prefix + "intent~" + hostile.ID(), keys.Join(indexentity.KeyPrefix, "Last", "evil0")} {
					if err := hostile.Row(ctx, raw, "Sales", rk, map[string]any{"Last": "evil0", "State": "committed"}); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		tr.do(step, "check Sales", func() { checkSales(step) })
		tr.do(step, "check HR", func() { checkHR(step, drained) })
		if blobStore && drained {
			tr.do(step, "check organisation-wide lookups", func() { checkAll(step) })
		}
	})
	tr.do(-1, "final drain", func() {
		drain()
		checkHR(-1, true)
	})
}
