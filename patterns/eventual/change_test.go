package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// Apply commits the intents of several changes with all their ops in one
// transaction: an order and its audit row (two changes, one partition)
// with one intent, 3 round trips; the intent runs; without intents it is
// one transaction.
func TestApplyChanges(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	audit := table.Change{By: "audit", Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "audit-1"})}}
	primary := table.Change{By: "orders", Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 5})},
		Intents: []table.Intent{indexKind.New(indexOrder{"c1", "o1", "a@x"})}}
	r.Faults.Reset()
	res, err := r.q.Apply(ctx, r.orders.Client(), primary, audit)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Faults.Count(); n != 3 || !res.Released || len(res.Batch.Ops) != 3 || res.Batch.Ops[0].ETag == "" {
		t.Fatalf("Apply: %d round trips, released %v, %d ops (%+v), want 3, true, 3 (2 ops + 1 commit record)", n, res.Released, len(res.Batch.Ops), res.Batch.Ops)
	}
	w := r.worker(t, nil)
	stop := start(t, w)
	drain(t, w)
	stop()
	if got := r.indexRows(t); got["a@x/c1_o1"] != 5 {
		t.Fatalf("index after the intent ran: %v", got)
	}
	// No intents: one transaction, and a change's explanation of its
	// failing op (the order exists) is the error.
	errTaken := errors.New("order id taken")
	again := table.Change{By: "orders", Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1"})},
		Explain: func(i int, err error) error { return fmt.Errorf("%w: %w", errTaken, err) }}
	r.Faults.Reset()
	_, err = r.q.Apply(ctx, r.orders.Client(), table.Change{Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "audit-2"})}}, again)
	if !errors.Is(err, errTaken) || !errors.Is(err, table.ErrAlreadyExists) || r.Faults.Count() != 1 {
		t.Fatalf("Apply of an existing order: %v after %d round trips, want the change's explanation after 1", err, r.Faults.Count())
	}
	if _, err := r.orders.Get(ctx, "c1", "audit-2", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the other change's op applied without the failing one: %v", err)
	}
}

// Apply checks everything before the network: the commit records count
// toward the transaction's limits and are named, a change in another
// partition is named, an intent that is not a Draft is refused; and a
// change whose NotAfter has passed sends nothing.
func TestApplyRefusals(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	var ops []table.Op
	for i := range 100 {
		ops = append(ops, r.orders.InsertOp(order{Customer: "c1", ID: fmt.Sprint("o", i)}))
	}
	draft := indexKind.New(indexOrder{"c1", "o1", "a@x"})
	full := table.Change{By: "orders", Ops: ops}
	r.Faults.Reset()
	_, err := r.q.Apply(ctx, r.orders.Client(), full, table.Change{By: "index", Intents: []table.Intent{draft}})
	if !errors.Is(err, eventual.ErrInvalid) || !errors.Is(err, table.ErrTooLarge) || !strings.Contains(err.Error(), "orders 100") || !strings.Contains(err.Error(), "eventual (commit records) 1") {
		t.Errorf("100 ops and an intent: %v", err)
	}
	other := table.Change{By: "elsewhere", Ops: []table.Op{r.orders.InsertOp(order{Customer: "c2", ID: "x"})}}
	_, err = r.q.Apply(ctx, r.orders.Client(), table.Change{By: "orders", Ops: ops[:1], Intents: []table.Intent{draft}}, other)
	if !errors.Is(err, table.ErrInvalidBatch) || !strings.Contains(err.Error(), "elsewhere") || !strings.Contains(err.Error(), `"c2"`) {
		t.Errorf("a change in another partition: %v", err)
	}
	_, err = r.q.Apply(ctx, r.orders.Client(), table.Change{Ops: ops[:1], Intents: []table.Intent{fakeIntent{}}})
	if !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), "not an eventual.Draft") {
		t.Errorf("a foreign intent: %v", err)
	}
	_, err = r.q.Apply(ctx, r.orders.Client(), table.Change{Ops: ops[:1], Intents: []table.Intent{draft}, NotAfter: time.Now().Add(-time.Second)})
	if !errors.Is(err, table.ErrNotApplied) {
		t.Errorf("a change past its NotAfter: %v", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent by refused Applies", n)
	}
}

// Apply and Commit check a write once, before anything is sent: one
// batchplan.Join of the changes with the commit records (Apply used to join
// the changes, then again with the records, and Commit's own checks ran a
// third time); an Apply without intents leaves it to table.Apply's. The
// refusals of TestApplyRefusals and TestValidation show every check kept.
func TestApplyChecksOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	var joins []string // the changes each join was given, by name
	eventual.SetJoin(r.q, func(p *table.Profile, changes ...table.Change) (table.Change, error) {
		var names []string
		for _, c := range changes {
			names = append(names, fmt.Sprintf("%s %d", c.By, len(c.Ops)))
		}
		joins = append(joins, strings.Join(names, " + "))
		return batchplan.Join(p, changes...)
	})
	audit := table.Change{By: "audit", Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "audit-1"})}}
	primary := table.Change{By: "orders", Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 5})},
		Intents: []table.Intent{indexKind.New(indexOrder{"c1", "o1", "a@x"})}}
	r.Faults.Reset()
	if _, err := r.q.Apply(ctx, r.orders.Client(), primary, audit); err != nil {
		t.Fatal(err)
	}
	if want := []string{"orders 1 + audit 1 + eventual (commit records) 1"}; !slices.Equal(joins, want) || r.Faults.Count() != 3 {
		t.Fatalf("Apply with an intent: checks %q after %d round trips, want %q after 3", joins, r.Faults.Count(), want)
	}
	joins = nil
	if _, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o2"})}, indexKind.New(indexOrder{"c1", "o2", "b@x"}), indexKind.New(indexOrder{"c1", "o2", "c@x"})); err != nil {
		t.Fatal(err)
	}
	if want := []string{"the primary write 1 + eventual (commit records) 2"}; !slices.Equal(joins, want) {
		t.Fatalf("Commit of two intents: checks %q, want %q", joins, want)
	}
	joins = nil
	if _, err := r.q.Apply(ctx, r.orders.Client(), table.Change{Ops: []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o3"})}}); err != nil || len(joins) != 0 {
		t.Fatalf("Apply without intents: %v; checks %q here, want none (table.Apply's own)", err, joins)
	}
	// Intents without ops: Join refuses the changes, not a transaction of
	// commit records alone.
	joins = nil
	_, err := r.q.Apply(ctx, r.orders.Client(), table.Change{By: "index", Intents: []table.Intent{indexKind.New(indexOrder{})}})
	if !errors.Is(err, eventual.ErrInvalid) || !errors.Is(err, table.ErrInvalidBatch) || !slices.Equal(joins, []string{"index 0"}) {
		t.Fatalf("Apply of an intent alone: %v, checks %q", err, joins)
	}
}

type fakeIntent struct{}

func (fakeIntent) ID() string { return "0123456789abcdef0123456789abcdef" }
func (fakeIntent) Err() error { return nil }

// A client of a table that is not the one given in Options.Tables: the
// error names the table and says to pass that very client; a table not
// there at all says to add it.
func TestTablesMismatchNamesTheTable(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	second := r.Clean(r.orders.Client())
	op := r.orders.InsertOp(order{Customer: "c1", ID: "o1"})
	_, err := r.q.Commit(ctx, second, []table.Op{op}, indexKind.New(indexOrder{"c1", "o1", "a@x"}))
	if !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), r.orders.Name()) || !strings.Contains(err.Error(), "very *aztables.Client") {
		t.Errorf("a second client of the table: %v", err)
	}
	_, err = r.q.Commit(ctx, r.index.Client(), []table.Op{op}, indexKind.New(indexOrder{"c1", "o1", "a@x"}))
	if !errors.Is(err, eventual.ErrInvalid) || !strings.Contains(err.Error(), r.index.Name()) || !strings.Contains(err.Error(), "not in Options.Tables") {
		t.Errorf("a table not in Options.Tables: %v", err)
	}
}

// Drain without a running Run fails at once (within an Idle wait) with
// ErrNotRunning, instead of waiting for its deadline; with Run it drains.
func TestDrainWithoutRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	w := r.worker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
		t.Fatal(err)
	}
	err := w.Drain(ctx)
	if !errors.Is(err, eventual.ErrNotRunning) || ctx.Err() != nil {
		t.Fatalf("Drain without Run: %v (context: %v), want ErrNotRunning before the deadline", err, ctx.Err())
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	if err := w.Drain(ctx); !errors.Is(err, eventual.ErrNotRunning) {
		t.Fatalf("Drain after Run stopped: %v", err)
	}
}
