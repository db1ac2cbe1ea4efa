package hostile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/hostile"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// order is the eventual test's primary row, committed with its intent.
type order struct {
	Customer string `table:",pk"`
	ID       string `table:",rk"`
	Note     string
}

// job is the eventual test's payload; Pad makes it a claim check.
type job struct {
	Order, Secret, Pad string
}

// TestHostileModelEventual: tenant A commits orders in partition HR with
// intents (some with claim checks) and enqueues intents, run by a worker.
// The attacker, a writer of the queue holding partition Sales, forges
// messages: garbage, claim checks naming a payroll file, decoy claim
// checks of other intents (never enqueued) or A's claim checks under its
// own ids, commit references to HR, to other tables, to bad partitions,
// forged committed intents in Sales with their records, and messages
// under A's intent ids with commit references and payloads of its own.
// After every step: no delivery of an attacker's intent carries A's data,
// every delivery of A's intent ids carries exactly A's payload, nothing
// panics; no request names the payroll file or a decoy, which are
// unchanged, and A's claim checks hold their payload or are emptied;
// HR's rows are exactly A's orders, with only A's commit records and
// aborted ones beside them. After a drain, every intent of A has run, none
// is poisoned or pending. 40 steps in make test, 800 in make soak.
func TestHostileModelEventual(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := testrig.New(t)
	tc := r.Table()
	orders := testrig.NewTable[order](t, tc)
	qc := queue(t, r, true, tc)
	q := qc.q
	tr := newTrace(t)
	kind := eventual.NewKind[job]("hr-job")

	type intent struct {
		payload job
		blob    string // its claim check, if any
	}
	honest := map[string]intent{} // A's intents by id
	var mu sync.Mutex
	ran := map[string]int{} // deliveries of A's intents
	var violations []string
	handler := kind.Handle(func(_ context.Context, in eventual.Intent[job]) error {
		mu.Lock()
		defer mu.Unlock()
		want, ok := honest[in.ID]
		switch {
		case ok && in.Payload != want.payload:
			violations = append(violations, fmt.Sprintf("intent %s of A ran with payload %.80q", in.ID, in.Payload))
		case ok:
			ran[in.ID]++
		case leaks(in.Payload):
			violations = append(violations, fmt.Sprintf("the attacker's intent %s ran with A's data %.80q", in.ID, in.Payload))
		}
		return nil
	})
	w := worker(t, tr, q, nil, handler)

	// What the attacker must never reach: a payroll file and decoy claim
	// checks of intents never enqueued, written by an operator.
	payroll := "secret/payroll.csv"
	decoys := []string{hostile.ClaimCheck(hostile.ID(), false), hostile.ClaimCheck(hostile.ID(), true)}
	protected := map[string][]byte{payroll: []byte(secret + " salaries")}
	for _, d := range decoys {
		p, _ := json.Marshal(job{Order: "decoy", Secret: secret + "-decoy"})
		protected[d] = p
	}
	for name, content := range protected {
		if err := hostile.Blob(ctx, qc.rawBlobs, name, content); err != nil {
			t.Fatal(err)
		}
	}
	qc.foreignBlobs = append([]string{payroll}, decoys...)
	model := map[string]order{} // HR's orders
	n := 0
	newJob := func(rnd *rand.Rand, id string) job {
		n++
		j := job{Order: id, Secret: fmt.Sprintf("%s-%d", secret, n)}
		if rnd.IntN(2) == 0 {
			j.Pad = strings.Repeat("p", 70<<10) // more than a message holds: a claim check
		}
		return j
	}
	honestIDs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := make([]string, 0, len(honest))
		for id := range honest {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}

	check := func(step int, drained bool) {
		mu.Lock()
		if len(violations) > 0 {
			mu.Unlock()
			tr.fatalf("step %d: %s", step, strings.Join(violations, "; "))
		}
		mu.Unlock()
		for _, rq := range r.Faults.Requests() {
			u, err := url.Parse(rq.URL)
			if err != nil {
				tr.fatalf("step %d: request %s", step, rq.URL)
			}
			for name := range protected {
				if strings.HasSuffix(u.Path, "/"+name) {
					tr.fatalf("step %d: the worker sent %s %s, a blob no message of its may name", step, rq.Method, rq.URL)
				}
			}
		}
		r.Faults.Reset()
		for name, content := range protected {
			if got, err := hostile.ReadBlob(ctx, qc.rawBlobs, name); err != nil || string(got) != string(content) {
				tr.fatalf("step %d: blob %s holds %.60q, %v", step, name, got, err)
			}
		}
		for _, id := range honestIDs() {
			mu.Lock()
			in, done := honest[id], ran[id] > 0
			mu.Unlock()
			if drained && !done {
				tr.fatalf("step %d: A's intent %s has not run after a drain", step, id)
			}
			if in.blob == "" {
				continue
			}
			got, err := hostile.ReadBlob(ctx, qc.rawBlobs, in.blob)
			var p job
			if err != nil || len(got) > 0 && (json.Unmarshal(got, &p) != nil || p != in.payload) {
				tr.fatalf("step %d: A's claim check %s holds %.60q, %v", step, in.blob, got, err)
			}
		}
		var want []string
		for id := range model {
			want = append(want, id)
		}
		slices.Sort(want)
		own, kept := split(rows(t, r, tc, "HR"))
		if !slices.Equal(own, want) {
			tr.fatalf("step %d: partition HR holds %q, want %q", step, own, want)
		}
		if len(kept) > 0 {
			recs := testrig.NewTable[table.Dynamic](t, r.Clean(tc))
			for _, rk := range kept {
				id, ok := strings.CutPrefix(rk, reserved.Prefix+"intent~")
				d, err := recs.Get(ctx, "HR", rk, nil)
				_, mine := honest[id]
				state, _ := d.Value.Properties["State"].(string)
				if err == nil && (!ok || state != "aborted" && (drained || !mine)) {
					tr.fatalf("step %d: partition HR holds reserved row %q: %v", step, rk, d.Value.Properties)
				}
			}
		}
		if drained {
			for p, err := range q.Pending(ctx, &eventual.PendingOptions{PartitionKey: "HR"}) {
				tr.fatalf("step %d: after a drain HR has a pending intent %+v, %v", step, p, err)
			}
			ps, err := q.Poisoned(ctx, 32)
			tr.outcome("Poisoned", err, nil)
			for _, p := range ps {
				if _, mine := honest[p.ID]; mine {
					tr.fatalf("step %d: A's intent %s was poisoned: %s", step, p.ID, p.Error)
				}
			}
		}
	}

	modelcheck.Run(t, 40, 800, func(t *testing.T, rnd *rand.Rand, step int) {
		tr.t = t
		drained := false
		switch k := rnd.IntN(20); {
		case k < 4: // A commits an order with its intent
			id := fmt.Sprint("o", step)
			j := newJob(rnd, id)
			d := kind.New(j)
			mu.Lock()
			honest[d.ID()] = intent{payload: j}
			mu.Unlock()
			tr.do(step, "Commit HR/"+id, func() {
				res, err := q.Commit(ctx, tc, []table.Op{orders.InsertOp(order{Customer: "HR", ID: id, Note: j.Secret})}, d)
				if errors.Is(err, eventual.ErrCommitWindow) { // not applied: the machine was too slow
					mu.Lock()
					delete(honest, d.ID())
					mu.Unlock()
					return
				}
				if err != nil {
					tr.fatalf("step %d: Commit: %v", step, err)
				}
				model[id] = order{Customer: "HR", ID: id}
				mu.Lock()
				honest[d.ID()] = intent{payload: j, blob: res.Intents[0].Blob}
				mu.Unlock()
				if rnd.IntN(2) == 0 { // a copy of the message, forged at once: its record names another message
					qc.forge(t, hostile.Envelope{V: 1, ID: d.ID(), Kind: kind.Name(), Created: time.Now(), Payload: json.RawMessage(`{"Order":"evil","Secret":"forged"}`),
						Commit: &hostile.CommitRef{Table: qc.tables[0], PartitionKey: "HR"}, Released: rnd.IntN(2) == 0})
				}
			})
		case k < 6: // A enqueues an intent
			j := newJob(rnd, "")
			d := kind.New(j)
			mu.Lock()
			honest[d.ID()] = intent{payload: j}
			mu.Unlock()
			tr.do(step, "Enqueue", func() {
				res, err := q.Enqueue(ctx, d)
				if err != nil {
					tr.fatalf("step %d: Enqueue: %v", step, err)
				}
				mu.Lock()
				honest[d.ID()] = intent{payload: j, blob: res.Blob}
				mu.Unlock()
			})
		case k < 8:
			tr.do(step, "Drain", func() { testrig.Drain(t, w.Drain) })
			drained = true
		case k < 14:
			tr.do(step, "garbage message", func() { qc.garbage(t, rnd, kind.Name(), r.Clean(tc)) })
		case k < 16: // the attacker's own intents, some naming claim checks
			id := hostile.ID()
			e := hostile.Envelope{V: 1, ID: id, Kind: kind.Name(), Created: time.Now(), Payload: json.RawMessage(`{"Order":"evil"}`)}
			ids := honestIDs()
			if len(ids) > 0 && rnd.IntN(2) == 0 {
				mu.Lock()
				in := honest[ids[rnd.IntN(len(ids))]]
				mu.Unlock()
				if in.blob != "" {
					e.Payload, e.Blob = nil, in.blob // A's claim check, under another id
				}
			}
			tr.do(step, "forge "+e.Blob, func() { qc.forge(t, e) })
		case k < 18: // messages under A's ids, with commit references
			ids := honestIDs()
			if len(ids) == 0 {
				break
			}
			id := ids[rnd.IntN(len(ids))]
			mu.Lock()
			in := honest[id]
			mu.Unlock()
			e := hostile.Envelope{V: 1, ID: id, Kind: kind.Name(), Created: time.Now(), Commit: &hostile.CommitRef{Table: qc.tables[0], PartitionKey: "HR"}, Released: rnd.IntN(2) == 0}
			switch {
			case strings.Contains(in.blob, "/commit-") && rnd.IntN(2) == 0:
				e.Blob = in.blob // its own Commit's claim check: only the message its record names may read it
			default:
				e.Payload = json.RawMessage(`{"Order":"evil","Secret":"forged"}`)
			}
			tr.do(step, "forge under A's id "+id, func() { qc.forge(t, e) })
		default: // operators' reads of what the attacker planted
			tr.do(step, "Pending, Poisoned", func() {
				for _, err := range q.Pending(ctx, nil) {
					tr.outcome("Pending", err, nil)
				}
				_, err := q.Poisoned(ctx, 32)
				tr.outcome("Poisoned", err, nil)
			})
		}
		tr.do(step, "check", func() { check(step, drained) })
	})
	tr.do(-1, "final drain", func() {
		testrig.Drain(t, w.Drain)
		check(-1, true)
	})
}
