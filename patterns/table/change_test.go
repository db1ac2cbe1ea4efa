package table_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/patterns/table"
)

// auditRow is another pattern's row in the employees' partition.
type auditRow struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	What       string
}

// Two patterns' changes in one partition are one transaction: 1 round
// trip, all applied, results in the order of the changes; a failing op is
// the failing change's own explanation, and nothing of either applies.
func TestApplyJoinsChangesInOneTransaction(t *testing.T) {
	t.Parallel()
	emps, ft := newTable[employee](t)
	audit, err := table.New[auditRow](emps.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hire := table.Change{By: "employees", Ops: []table.Op{emps.InsertOp(employee{Department: "Sales", ID: "1", FirstName: "Jo"})}}
	logged := table.Change{By: "audit", Ops: []table.Op{audit.InsertOp(auditRow{Department: "Sales", Key: "log-1", What: "hired 1"})}}
	res, err := emps.Apply(ctx, hire, logged)
	if err != nil {
		t.Fatal(err)
	}
	if ft.Count() != 1 || res.Transactions != 1 || len(res.Ops) != 2 || !res.Ops[0].Applied || res.Ops[0].ETag == "" || !res.Ops[1].Applied {
		t.Fatalf("Apply: %d round trips, %+v; want 1 transaction of 2 applied ops", ft.Count(), res)
	}
	// The same id again: the employees change explains its failure; the
	// audit row of the same transaction is not written.
	errTaken := errors.New("employee id taken")
	again := table.Change{By: "employees", Ops: []table.Op{emps.InsertOp(employee{Department: "Sales", ID: "1"})},
		Explain: func(i int, err error) error {
			if i == 0 && errors.Is(err, table.ErrAlreadyExists) {
				return fmt.Errorf("%w: %w", errTaken, err)
			}
			return nil
		}}
	logged2 := table.Change{By: "audit", Ops: []table.Op{audit.InsertOp(auditRow{Department: "Sales", Key: "log-2"})}}
	_, err = emps.Apply(ctx, logged2, again)
	if !errors.Is(err, errTaken) || !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Apply of a taken id: %v, want the change's explanation", err)
	}
	if _, err := audit.Get(ctx, "Sales", "log-2", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the audit row of a failed transaction: %v", err)
	}
}

type intent struct{ id string }

func (i intent) ID() string { return i.id }
func (i intent) Err() error { return nil }

// Join and Apply refuse before the network, naming the change and what
// does not fit: another partition, an entity twice, an op's own error,
// too many ops or bytes for the profile (with each change's share),
// intents (Apply), a NotAfter that has passed.
func TestJoinRefusesBeforeTheNetwork(t *testing.T) {
	t.Parallel()
	emps, ft := newTable[employee](t)
	ctx := context.Background()
	op := func(pk, id string) table.Op { return emps.InsertOp(employee{Department: pk, ID: id}) }
	many := func(n int, size int) []table.Op {
		var ops []table.Op
		for i := range n {
			ops = append(ops, emps.InsertOp(employee{Department: "Sales", ID: fmt.Sprint("m", i), FirstName: strings.Repeat("x", size)}))
		}
		return ops
	}
	cases := []struct {
		name    string
		p       *table.Profile
		changes []table.Change
		is      error
		says    []string
	}{
		{"another partition", nil, []table.Change{{By: "index", Ops: []table.Op{op("Sales", "1")}}, {By: "log", Ops: []table.Op{op("HR", "2")}}},
			table.ErrInvalidBatch, []string{"op 0 of log", `"HR"`, "of index", "intent"}},
		{"an entity twice", nil, []table.Change{{By: "index", Ops: []table.Op{op("Sales", "1")}}, {By: "log", Ops: []table.Op{op("Sales", "1")}}},
			table.ErrInvalidBatch, []string{"op 0 of log", "index touches too"}},
		{"an op's error", nil, []table.Change{{Ops: []table.Op{op("Sales", "1")}}, {Ops: []table.Op{op("Sales", "a/b")}}},
			table.ErrInvalidKey, []string{"op 0 of change 1"}},
		{"a zero op", nil, []table.Change{{By: "mine", Ops: []table.Op{{}}}}, table.ErrInvalidBatch, []string{"op 0 of mine"}},
		{"nothing", nil, []table.Change{{By: "intents only", Intents: []table.Intent{intent{"a"}}}}, table.ErrInvalidBatch, []string{"no operation"}},
		{"an intent twice", nil, []table.Change{{Ops: []table.Op{op("Sales", "1")}, Intents: []table.Intent{intent{"a"}, intent{"a"}}}},
			table.ErrInvalidBatch, []string{"intent 1 of change 0"}},
		{"101 ops", nil, []table.Change{{By: "index", Ops: many(99, 1)}, {By: "log", Ops: []table.Op{op("Sales", "a"), op("Sales", "b")}}},
			table.ErrTooLarge, []string{"101 operations", "index 99, log 2", "Azure Table Storage", "(100)"}},
		{"over 2 MB on Cosmos DB", table.Cosmos, []table.Change{{By: "index", Ops: many(80, 30000)}, {By: "log", Ops: []table.Op{op("Sales", "a")}}},
			table.ErrTooLarge, []string{"bytes", "index 2", "log 1", "Cosmos DB Table API", "(2097152)"}},
	}
	for _, c := range cases {
		_, err := batchplan.Join(c.p, c.changes...)
		if !errors.Is(err, c.is) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want %v (and ErrInvalid)", c.name, err, c.is)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", c.name, err, s)
			}
		}
	}
	// The same 80 ops fit Table Storage's 4 MiB.
	if j, err := batchplan.Join[table.Change, table.Profile](nil, table.Change{By: "index", Ops: many(80, 30000)}); err != nil || len(j.Ops) != 80 || j.By != "index" {
		t.Errorf("80 ops of 30 KB on Table Storage: %v", err)
	}
	_, err := emps.Apply(ctx, table.Change{By: "index", Ops: []table.Op{op("Sales", "1")}, Intents: []table.Intent{intent{"a"}}})
	if !errors.Is(err, table.ErrInvalidBatch) || !strings.Contains(err.Error(), "Queue.Apply") {
		t.Errorf("Apply with intents: %v", err)
	}
	_, err = emps.Apply(ctx, table.Change{By: "blobs", Ops: []table.Op{op("Sales", "1")}, NotAfter: time.Now().Add(-time.Millisecond)})
	if !errors.Is(err, table.ErrNotApplied) || !strings.Contains(err.Error(), "blobs") {
		t.Errorf("Apply past NotAfter: %v", err)
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
