package wideentity_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// note is another pattern's row in the wide entities' partition.
type note struct {
	PK   string `table:",pk"`
	Key  string `table:",rk"`
	Text string
}

// trips fails t unless n requests reached the rig since the last call, and
// starts counting again.
func (f *fixture) trips(t *testing.T, what string, n int) {
	t.Helper()
	if got := f.ft.Count(); got != n {
		t.Fatalf("%s: %d round trips, want %d", what, got, n)
	}
	f.ft.Reset()
}

func noteOp(notes *table.Table[note], key string) table.Change {
	return table.Change{By: "notes", Ops: []table.Op{notes.InsertOp(note{PK: "p", Key: key, Text: "x"})}}
}

func day(rk string, props map[string]any) table.Dynamic {
	return table.Dynamic{PartitionKey: "p", RowKey: rk, Properties: props}
}

// InsertOps, UpdateOps (a merge and a replace), ModifyOps and DeleteOps
// each join a note's insert in one transaction: 1 round trip for Apply (and
// 1 read for ModifyOps, none for the others); the entity reads back as
// written, the note with it. A write in between fails the transaction and
// nothing of it applies.
func TestOpsJoinATransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 3)
	notes := testrig.NewTable[note](t, f.tbl.Client())
	ctx := context.Background()
	apply := func(what string, note string, c table.Change) table.BatchResult {
		t.Helper()
		f.ft.Reset()
		res, err := notes.Apply(ctx, c, noteOp(notes, note))
		if err != nil {
			t.Fatalf("Apply of %s: %v", what, err)
		}
		f.trips(t, "Apply of "+what, 1)
		if _, err := notes.Get(ctx, "p", note, nil); err != nil {
			t.Fatalf("the note of %s: %v", what, err)
		}
		return res
	}
	get := func(want map[string]any) wideentity.Entity[table.Dynamic] {
		t.Helper()
		e, err := s.Get(ctx, "p", "d")
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if e.Value.Properties[k] != v {
				t.Fatalf("%s = %v, want %v (%v)", k, e.Value.Properties[k], v, e.Value.Properties)
			}
		}
		f.ft.Reset()
		return e
	}

	ins, err := s.InsertOps(ctx, day("d", map[string]any{"a": "1", "b": "2", "c": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "InsertOps", 0)
	if len(ins.Ops) != 4 {
		t.Fatalf("InsertOps: %d ops, want the header and 3 parts", len(ins.Ops))
	}
	res := apply("InsertOps", "n1", ins)
	e := get(map[string]any{"a": "1", "b": "2", "c": "3"})
	if e.ETag != res.Ops[0].ETag {
		t.Fatalf("Apply's first result %q is not the header's ETag %q", res.Ops[0].ETag, e.ETag)
	}

	merge, err := s.UpdateOps(ctx, day("d", map[string]any{"b": "two"}), azcore.ETagAny, table.Merge)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "UpdateOps", 0)
	apply("UpdateOps (a merge)", "n2", merge)
	e = get(map[string]any{"a": "1", "b": "two", "c": "3"})

	repl, err := s.UpdateOps(ctx, day("d", map[string]any{"z": "26"}), e.ETag, table.Replace)
	if err != nil {
		t.Fatal(err)
	}
	apply("UpdateOps (a replace)", "n3", repl)
	e = get(map[string]any{"z": "26", "a": nil})

	mod, err := s.ModifyOps(ctx, "p", "d", func(v *table.Dynamic) error {
		v.Properties["y"] = "25"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "ModifyOps", 1)
	apply("ModifyOps", "n4", mod)
	e = get(map[string]any{"z": "26", "y": "25"})

	// A write in between: the stale change fails whole, its note too.
	stale, err := s.ModifyOps(ctx, "p", "d", func(v *table.Dynamic) error { v.Properties["x"] = "24"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, day("d", map[string]any{"w": "23"}), azcore.ETagAny, table.Merge); err != nil {
		t.Fatal(err)
	}
	if _, err := notes.Apply(ctx, stale, noteOp(notes, "n5")); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Apply of a stale ModifyOps: %v, want ErrPreconditionFailed", err)
	}
	if _, err := notes.Get(ctx, "p", "n5", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the note of a failed transaction: %v, want ErrNotFound", err)
	}
	e = get(map[string]any{"x": nil, "w": "23"})

	// InsertOps of an existing entity: 409, nothing applied.
	again, err := s.InsertOps(ctx, day("d", map[string]any{"a": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notes.Apply(ctx, again, noteOp(notes, "n6")); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Apply of InsertOps of an existing entity: %v", err)
	}
	if _, err := notes.Get(ctx, "p", "n6", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the note of a failed transaction: %v, want ErrNotFound", err)
	}

	f.ft.Reset()
	del, err := s.DeleteOps(ctx, "p", "d", e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "DeleteOps", 0)
	apply("DeleteOps", "n7", del)
	if _, err := s.Get(ctx, "p", "d"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("after DeleteOps: %v", err)
	}
	if rks, _ := f.rows(t, "p"); len(rks) != 5 {
		t.Fatalf("rows left: %v, want the notes of the 5 transactions applied", rks)
	}
}

// A change built without a read for the Store's layout meets an entity
// stored with another Parts: the transaction applies nothing, and its
// error says why; Update, which reads the header then, writes it.
func TestOpsOfAnotherLayout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	two, three := newStore[table.Dynamic](t, f, 2), newStore[table.Dynamic](t, f, 3)
	notes := testrig.NewTable[note](t, f.tbl.Client())
	ctx := context.Background()
	if _, err := two.Insert(ctx, day("d", map[string]any{"a": "1"})); err != nil {
		t.Fatal(err)
	}
	for what, mk := range map[string]func() (table.Change, error){
		"UpdateOps": func() (table.Change, error) {
			return three.UpdateOps(ctx, day("d", map[string]any{"a": "2"}), azcore.ETagAny, table.Fields("a"))
		},
		"DeleteOps": func() (table.Change, error) { return three.DeleteOps(ctx, "p", "d", azcore.ETagAny) },
		"UpdateOps of a missing entity": func() (table.Change, error) {
			return three.UpdateOps(ctx, day("gone", map[string]any{"a": "2"}), azcore.ETagAny, table.Replace)
		},
	} {
		c, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		_, err = notes.Apply(ctx, noteOp(notes, "n"), c)
		if !errors.Is(err, table.ErrNotFound) || !strings.Contains(err.Error(), "another Parts") {
			t.Fatalf("%s: %v, want ErrNotFound naming another layout", what, err)
		}
		if _, err := notes.Get(ctx, "p", "n", nil); !errors.Is(err, table.ErrNotFound) {
			t.Fatalf("%s: the note of a failed transaction: %v", what, err)
		}
	}
	if e, err := two.Get(ctx, "p", "d"); err != nil || e.Value.Properties["a"] != "1" {
		t.Fatalf("after failed changes: %v, %v", e.Value.Properties, err)
	}
}

// The ops forms check what the writes check, with nothing sent: keys,
// ETags, modes, and the transaction's limits (a change must leave room for
// the others).
func TestOpsRefusedBeforeTheNetwork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 2)
	ctx := context.Background()
	big := map[string]any{}
	for i := range 40 {
		big[strings.Repeat("p", 1)+string(rune('a'+i%26))+string(rune('a'+i/26))] = strings.Repeat("x", 60_000)
	}
	f.ft.Reset()
	for what, mk := range map[string]func() (table.Change, error){
		"InsertOps of an invalid key": func() (table.Change, error) {
			return s.InsertOps(ctx, table.Dynamic{PartitionKey: "a/b", RowKey: "d"})
		},
		"InsertOps too large": func() (table.Change, error) { return s.InsertOps(ctx, day("d", big)) },
		"InsertOps reserved name": func() (table.Change, error) {
			return s.InsertOps(ctx, day("d", map[string]any{wideentity.VersionProperty: "x"}))
		},
		"UpdateOps without an ETag": func() (table.Change, error) {
			return s.UpdateOps(ctx, day("d", map[string]any{"a": "1"}), "", table.Replace)
		},
		"UpdateOps with an empty Fields": func() (table.Change, error) {
			return s.UpdateOps(ctx, day("d", map[string]any{"a": "1"}), azcore.ETagAny, table.Fields())
		},
		"DeleteOps without an ETag":   func() (table.Change, error) { return s.DeleteOps(ctx, "p", "d", "") },
		"DeleteOps of an invalid key": func() (table.Change, error) { return s.DeleteOps(ctx, "a/b", "d", azcore.ETagAny) },
		"ModifyOps of an invalid key": func() (table.Change, error) {
			return s.ModifyOps(ctx, "p/q", "d", func(*table.Dynamic) error { return nil })
		},
	} {
		if _, err := mk(); !errors.Is(err, wideentity.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	f.trips(t, "refused ops", 0)
}

// A transaction holding UpdateOps whose response is lost is settled from
// the header's write history: reported applied, written once.
func TestUpdateOpsLostResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 2)
	notes := testrig.NewTable[note](t, f.tbl.Client())
	ctx := context.Background()
	res, err := s.Insert(ctx, day("d", map[string]any{"a": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.UpdateOps(ctx, day("d", map[string]any{"a": "2"}), res.ETag, table.Replace)
	if err != nil {
		t.Fatal(err)
	}
	f.ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodPost }, LoseResponse: true})
	ar, err := notes.Apply(ctx, c, noteOp(notes, "n"))
	if err != nil || !ar.Ops[0].Verified {
		t.Fatalf("Apply with a lost response = %+v, %v; want applied, verified", ar, err)
	}
	if e, err := s.Get(ctx, "p", "d"); err != nil || e.Value.Properties["a"] != "2" {
		t.Fatalf("after a lost response: %v, %v", e.Value.Properties, err)
	}
}
