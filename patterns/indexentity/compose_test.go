package indexentity_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// note is another pattern's row in the employees' partition.
type note struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Text       string
}

func noteChange(notes *table.Table[note], key string) table.Change {
	return table.Change{By: "notes", Ops: []table.Op{notes.InsertOp(note{Department: "Sales", Key: key, Text: "x"})}}
}

// The same-partition store's InsertOps, UpdateOps and DeleteOps read what
// the writes read and join a note's insert in one transaction (1 round
// trip); the lists stay exactly what the employees call for. A list
// changed between the ops and the Apply fails the transaction, explained,
// and nothing of it applies.
func TestOpsJoinATransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	notes := testrig.NewTable[note](t, f.employees.Client())
	ctx := context.Background()
	apply := func(what, key string, c table.Change) table.BatchResult {
		t.Helper()
		f.Faults.Reset()
		res, err := f.employees.Apply(ctx, c, noteChange(notes, key))
		if err != nil {
			t.Fatalf("Apply of %s: %v", what, err)
		}
		f.trips(t, "Apply of "+what, 1)
		if _, err := notes.Get(ctx, "Sales", key, nil); err != nil {
			t.Fatalf("the note of %s: %v", what, err)
		}
		f.check(t, "Sales")
		f.Faults.Reset()
		return res
	}
	ins, err := f.idx.InsertOps(ctx, emp("Sales", 1, "Jones"))
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "InsertOps", 1) // the list's read
	res := apply("InsertOps", "n1", ins)
	if got, err := find(ctx, f.idx, "Sales", "Jones"); err != nil || len(got) != 1 {
		t.Fatalf("Find after InsertOps = %v, %v", got, err)
	}
	f.Faults.Reset()

	upd, err := f.idx.UpdateOps(ctx, emp("Sales", 1, "Smith"), res.Ops[0].ETag)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "UpdateOps (renamed)", 3) // the entity, then both lists in parallel
	res = apply("UpdateOps", "n2", upd)

	same, err := f.idx.UpdateOps(ctx, Employee{Department: "Sales", ID: emp("Sales", 1, "").ID, LastName: "Smith", FirstName: "Jo"}, azcore.ETagAny)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "UpdateOps (value unchanged)", 1)
	if len(same.Ops) != 1 {
		t.Fatalf("UpdateOps of an unchanged value: %d ops, want the entity's alone", len(same.Ops))
	}
	apply("UpdateOps of an unchanged value", "n3", same)

	// Another writer takes the list between InsertOps and Apply.
	stale, err := f.idx.InsertOps(ctx, emp("Sales", 2, "Smith"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.idx.Insert(ctx, emp("Sales", 3, "Smith")); err != nil {
		t.Fatal(err)
	}
	_, err = f.employees.Apply(ctx, stale, noteChange(notes, "n4"))
	if !errors.Is(err, table.ErrPreconditionFailed) || !strings.Contains(err.Error(), "another writer changed a list") {
		t.Fatalf("Apply of a stale InsertOps: %v, want ErrPreconditionFailed, explained", err)
	}
	if _, err := notes.Get(ctx, "Sales", "n4", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the note of a failed transaction: %v", err)
	}
	if _, err := f.employees.Get(ctx, "Sales", emp("Sales", 2, "").ID, nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the employee of a failed transaction: %v", err)
	}
	f.check(t, "Sales")

	f.Faults.Reset()
	del, err := f.idx.DeleteOps(ctx, "Sales", emp("Sales", 1, "").ID, azcore.ETagAny)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "DeleteOps", 2) // the entity, then its list
	apply("DeleteOps", "n5", del)
	if got, err := find(ctx, f.idx, "Sales", "Smith"); err != nil || len(got) != 1 || got[0].ID != emp("Sales", 3, "").ID {
		t.Fatalf("Find after DeleteOps = %v, %v", got, err)
	}

	// Refused before the network.
	f.Faults.Reset()
	for what, mk := range map[string]func() (table.Change, error){
		"InsertOps of a reserved key":   func() (table.Change, error) { return f.idx.InsertOps(ctx, emp("Sales", 1, "J")) },
		"UpdateOps without an ETag":     func() (table.Change, error) { return f.idx.UpdateOps(ctx, emp("Sales", 1, "J"), "") },
		"DeleteOps without an ETag":     func() (table.Change, error) { return f.idx.DeleteOps(ctx, "Sales", "1", "") },
		"DeleteOps of an invalid key":   func() (table.Change, error) { return f.idx.DeleteOps(ctx, "Sa/les", "1", azcore.ETagAny) },
		"InsertOps of an invalid key":   func() (table.Change, error) { return f.idx.InsertOps(ctx, emp("Sa/les", 1, "J")) },
		"InsertOps of a too long value": func() (table.Change, error) { return f.idx.InsertOps(ctx, emp("Sales", 1, strings.Repeat("j", 1100))) },
	} {
		if what == "InsertOps of a reserved key" {
			mk = func() (table.Change, error) {
				e := emp("Sales", 1, "J")
				e.ID = indexentity.KeyPrefix + "x"
				return f.idx.InsertOps(ctx, e)
			}
		}
		if _, err := mk(); !errors.Is(err, indexentity.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	f.trips(t, "refused ops", 0)
}

// An eventual store's InsertOps, UpdateOps and DeleteOps carry the intent
// that keeps the lists: eventual's Queue.Apply commits it with the
// transaction (a Table's Apply refuses it), and the worker brings the
// lists in line.
func TestOpsOfAnEventualStore(t *testing.T) {
	t.Parallel()
	r := newRig(t, ownTable)
	w := r.start(t, nil)
	notes := testrig.NewTable[note](t, r.employees.Client())
	ctx := context.Background()
	ins, err := r.idx.InsertOps(ctx, emp("Sales", 1, "Jones"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ins.Intents) != 1 || len(ins.Ops) != 1 {
		t.Fatalf("InsertOps = %d ops, %d intents; want the entity's insert and one intent", len(ins.Ops), len(ins.Intents))
	}
	if _, err := r.employees.Apply(ctx, ins); !errors.Is(err, table.ErrInvalid) {
		t.Fatalf("a Table's Apply of a change with an intent: %v, want refused", err)
	}
	res, err := r.q.Apply(ctx, r.employees.Client(), ins, noteChange(notes, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	r.check(t)
	upd, err := r.idx.UpdateOps(ctx, emp("Sales", 1, "Smith"), res.Batch.Ops[0].ETag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.q.Apply(ctx, r.employees.Client(), upd, noteChange(notes, "n2")); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	r.check(t)
	if got, err := find(ctx, r.idx, "", "Smith"); err != nil || len(got) != 1 {
		t.Fatalf("Find after UpdateOps = %v, %v", got, err)
	}
	del, err := r.idx.DeleteOps(ctx, "Sales", emp("Sales", 1, "").ID, azcore.ETagAny)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.q.Apply(ctx, r.employees.Client(), del, noteChange(notes, "n3")); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	r.check(t)
	for _, k := range []string{"n1", "n2", "n3"} {
		if _, err := notes.Get(ctx, "Sales", k, nil); err != nil {
			t.Fatalf("note %s: %v", k, err)
		}
	}
}
