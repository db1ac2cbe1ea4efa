package dataseries_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
)

// message is another pattern's row in the series' partition: the message
// the hourly count counts.
type message struct {
	User string `table:",pk"`
	ID   string `table:",rk"`
	Text string
}

// composeRig is a series and a typed table of messages over one table.
type composeRig struct {
	s    *dataseries.Series[int64]
	msgs *table.Table[message]
	ft   *faults.Transport
}

func newComposeRig(t *testing.T) composeRig {
	t.Helper()
	r := testrig.New(t)
	c := r.Table()
	s, err := dataseries.New[int64](testrig.NewTable[table.Dynamic](t, c), dataseries.Hours(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := composeRig{s: s, msgs: testrig.NewTable[message](t, c), ft: r.Faults}
	f.ft.Reset()
	return f
}

// trips fails t unless n requests reached the transport since the last
// call, and starts counting again.
func (f composeRig) trips(t *testing.T, what string, n int) {
	t.Helper()
	if got := f.ft.Count(); got != n {
		t.Fatalf("%s: %d round trips, want %d", what, got, n)
	}
	f.ft.Reset()
}

func (f composeRig) insertOp(id string) table.Change {
	return table.Change{By: "messages", Ops: []table.Op{f.msgs.InsertOp(message{User: "u1", ID: id, Text: "hi"})}}
}

// AddOps joins a message's insert in one transaction: the read (1 round
// trip), then Apply (1); the series' first write is an insert. A write of
// the series between AddOps and Apply fails the transaction and nothing of
// it applies, the message included.
func TestAddOpsJoinsATransaction(t *testing.T) {
	t.Parallel()
	f := newComposeRig(t)
	ctx := context.Background()
	for i, id := range []string{"m1", "m2"} {
		add, err := f.s.AddOps(ctx, "u1", "2024-07-31", "H18", 1)
		if err != nil {
			t.Fatal(err)
		}
		f.trips(t, "AddOps", 1)
		if _, err := f.msgs.Apply(ctx, f.insertOp(id), add); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		f.trips(t, "Apply", 1)
	}
	day, err := f.s.Get(ctx, "u1", "2024-07-31")
	if err != nil || day.Value["H18"] != 2 {
		t.Fatalf("Get = %v, %v; want H18 2", day.Value, err)
	}
	if _, err := f.msgs.Get(ctx, "u1", "m2", nil); err != nil {
		t.Fatalf("the message of the transaction: %v", err)
	}

	// Another writer in between: 412, nothing applied.
	add, err := f.s.AddOps(ctx, "u1", "2024-07-31", "H18", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Set(ctx, "u1", "2024-07-31", "H02", 5); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	if _, err := f.msgs.Apply(ctx, f.insertOp("m3"), add); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Apply after another write: %v, want ErrPreconditionFailed", err)
	}
	f.trips(t, "a failed Apply", 1)
	if _, err := f.msgs.Get(ctx, "u1", "m3", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the message of a failed transaction: %v, want ErrNotFound", err)
	}
	if day, err := f.s.Get(ctx, "u1", "2024-07-31"); err != nil || day.Value["H18"] != 2 || day.Value["H02"] != 5 {
		t.Fatalf("after a failed transaction: %v, %v", day.Value, err)
	}

	// Two first writers: the second insert fails, nothing of it applied.
	a, err := f.s.AddOps(ctx, "u1", "2024-08-01", "H00", 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.s.AddOps(ctx, "u1", "2024-08-01", "H00", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.msgs.Apply(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := f.msgs.Apply(ctx, f.insertOp("m4"), b); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Apply of a second first write: %v, want ErrAlreadyExists", err)
	}
	if _, err := f.msgs.Get(ctx, "u1", "m4", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the message of a failed transaction: %v, want ErrNotFound", err)
	}
}

// A transaction holding AddOps whose response is lost is settled by the
// write history: applied once, reported applied.
func TestAddOpsLostResponse(t *testing.T) {
	t.Parallel()
	f := newComposeRig(t)
	ctx := context.Background()
	if _, err := f.s.Set(ctx, "u1", "d", "H01", 10); err != nil {
		t.Fatal(err)
	}
	add, err := f.s.AddOps(ctx, "u1", "d", "H01", 1)
	if err != nil {
		t.Fatal(err)
	}
	f.ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodPost }, LoseResponse: true})
	res, err := f.msgs.Apply(ctx, add, f.insertOp("m1"))
	if err != nil || !res.Ops[0].Verified {
		t.Fatalf("Apply with a lost response = %+v, %v; want applied, verified", res, err)
	}
	if day, err := f.s.Get(ctx, "u1", "d"); err != nil || day.Value["H01"] != 11 {
		t.Fatalf("after a lost response: %v, %v; want H01 11", day.Value, err)
	}
}

// SetOps, SetAllOps and DeleteOps join a transaction with nothing sent
// before Apply; their limits are checked with nothing sent at all.
func TestSetAndDeleteOps(t *testing.T) {
	t.Parallel()
	f := newComposeRig(t)
	ctx := context.Background()
	set, err := f.s.SetOps(ctx, "u1", "d", "H03", 7)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "SetOps", 0)
	if _, err := f.msgs.Apply(ctx, set, f.insertOp("m1")); err != nil {
		t.Fatal(err)
	}
	day, err := f.s.Get(ctx, "u1", "d")
	if err != nil || day.Value["H03"] != 7 {
		t.Fatalf("after SetOps: %v, %v", day.Value, err)
	}
	f.ft.Reset()
	all, err := f.s.SetAllOps(ctx, "u1", "d", map[string]int64{"H04": 4}, day.ETag)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "SetAllOps", 0)
	if _, err := f.msgs.Apply(ctx, all, f.insertOp("m2")); err != nil {
		t.Fatal(err)
	}
	day, err = f.s.Get(ctx, "u1", "d")
	if err != nil || day.Value["H03"] != 0 || day.Value["H04"] != 4 {
		t.Fatalf("after SetAllOps: %v, %v", day.Value, err)
	}
	// A stale ETag: the transaction fails, the message is not written.
	stale, err := f.s.SetAllOps(ctx, "u1", "d", nil, day.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Set(ctx, "u1", "d", "H05", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.msgs.Apply(ctx, stale, f.insertOp("m3")); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("SetAllOps on a stale ETag: %v", err)
	}
	if _, err := f.msgs.Get(ctx, "u1", "m3", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the message of a failed transaction: %v", err)
	}
	day, err = f.s.Get(ctx, "u1", "d")
	if err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	del, err := f.s.DeleteOps(ctx, "u1", "d", day.ETag)
	if err != nil {
		t.Fatal(err)
	}
	f.trips(t, "DeleteOps", 0)
	if _, err := f.msgs.Apply(ctx, del, table.Change{By: "messages", Ops: []table.Op{f.msgs.DeleteOp("u1", "m1", azcore.ETagAny)}}); err != nil {
		t.Fatal(err)
	}
	if day, err := f.s.Get(ctx, "u1", "d"); err != nil || day.ETag != "" || day.Value["H04"] != 0 {
		t.Fatalf("after DeleteOps: %+v, %v; want a series never written", day, err)
	}

	// Refused before the network.
	f.ft.Reset()
	for name, ops := range map[string]func() (table.Change, error){
		"SetOps of no slot":         func() (table.Change, error) { return f.s.SetOps(ctx, "u1", "d", "H24", 1) },
		"SetOps of an invalid key":  func() (table.Change, error) { return f.s.SetOps(ctx, "u1", "a/b", "H01", 1) },
		"SetAllOps without an ETag": func() (table.Change, error) { return f.s.SetAllOps(ctx, "u1", "d", nil, "") },
		"SetAllOps of no slot": func() (table.Change, error) {
			return f.s.SetAllOps(ctx, "u1", "d", map[string]int64{"X": 1}, azcore.ETagAny)
		},
		"DeleteOps without an ETag": func() (table.Change, error) { return f.s.DeleteOps(ctx, "u1", "d", "") },
		"DeleteOps of an invalid key": func() (table.Change, error) {
			return f.s.DeleteOps(ctx, "u1", "a#b\x01", azcore.ETagAny)
		},
		"AddOps of no slot": func() (table.Change, error) { return f.s.AddOps(ctx, "u1", "d", "H24", 1) },
	} {
		if _, err := ops(); !errors.Is(err, dataseries.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	f.trips(t, "refused ops", 0)
}

// Delete removes the series if its ETag matches: 1 round trip; an empty
// ETag is refused with nothing sent; a stale one is ErrPreconditionFailed;
// a series never written (or deleted) is ErrNotFound.
func TestDelete(t *testing.T) {
	t.Parallel()
	f := newComposeRig(t)
	ctx := context.Background()
	if _, err := f.s.Set(ctx, "u1", "d", "H07", 3); err != nil {
		t.Fatal(err)
	}
	day, err := f.s.Get(ctx, "u1", "d")
	if err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	if err := f.s.Delete(ctx, "u1", "d", ""); !errors.Is(err, dataseries.ErrInvalid) || !errors.Is(err, table.ErrNoETag) {
		t.Fatalf("Delete without an ETag: %v", err)
	}
	if err := f.s.Delete(ctx, "u1", "a/b", azcore.ETagAny); !errors.Is(err, dataseries.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
		t.Fatalf("Delete of an invalid key: %v", err)
	}
	f.trips(t, "refused Deletes", 0)
	if _, err := f.s.Set(ctx, "u1", "d", "H08", 1); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	if err := f.s.Delete(ctx, "u1", "d", day.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete on a stale ETag: %v", err)
	}
	if day, err = f.s.Get(ctx, "u1", "d"); err != nil || day.Value["H07"] != 3 {
		t.Fatalf("after a refused Delete: %v, %v", day.Value, err)
	}
	f.ft.Reset()
	if err := f.s.Delete(ctx, "u1", "d", day.ETag); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Delete", 1)
	if day, err := f.s.Get(ctx, "u1", "d"); err != nil || day.ETag != "" || day.Value["H07"] != 0 {
		t.Fatalf("after Delete: %+v, %v", day, err)
	}
	if err := f.s.Delete(ctx, "u1", "d", azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete of a deleted series: %v, want ErrNotFound", err)
	}
	// Add starts it again from zero.
	if e, err := f.s.Add(ctx, "u1", "d", "H07", 1); err != nil || e.Value != 1 {
		t.Fatalf("Add after Delete = %v, %v", e.Value, err)
	}
}
