package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"
	"github.com/tablekit/tablekit/internal/obs"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Intent is a durable intent that a Change carries, to be committed
// together with the change's operations: package eventual's Draft is one,
// and eventual's Queue.Apply commits them. The core checks intents and
// carries them; it never sends them (Apply refuses a change that has
// some).
type Intent interface {
	// ID returns the intent's unique id ("" when it could not be made).
	ID() string
	// Err returns the error met making the intent, if any.
	Err() error
}

// Change is one pattern's part of a composed write: the operations a
// write of the pattern makes in one partition, the intents it needs for
// what lies in other partitions, and what Apply must know to send it
// (see "Composing patterns" in the package documentation). Patterns make
// changes (secondaryindex's InsertOps, logtail's AppendOp in a Change, a
// Table's ops in a Change literal); Join checks several as one
// transaction, and Apply (or eventual's Queue.Apply, when some carry
// intents) writes them all or none. A Change is a value: making one sends
// nothing a transaction depends on (a pattern may upload a blob that
// nothing points at yet).
type Change struct {
	// By names who made the change, for errors: "secondaryindex
	// \"empid\"", "logtail". Default: "change <its position>".
	By string
	// Ops are the change's table writes, all in one partition, each entity
	// once (with the other changes of a composed write, too).
	Ops []Op
	// Intents start flows in other partitions, tables or services with the
	// write (package eventual's Drafts): such a change needs
	// eventual.Queue.Apply.
	Intents []Intent
	// NotAfter, if not zero, is the latest time the change may be sent:
	// Apply sends nothing later (an error matching ErrNotApplied) and
	// stops waiting for the transaction then (outcome unknown when it was
	// in flight). A pattern sets it when what it prepared expires, such as
	// largeentity's blobs, which Sweep may delete once older than Grace.
	NotAfter time.Time
	// Explain, if set, turns the error of Ops[i], which failed its
	// transaction, into the pattern's own error (secondaryindex's
	// ErrDuplicate for a copy whose value another entity holds), or
	// returns nil to leave it as it is. It is called only for a definite
	// failure (never for ErrOutcomeUnknown).
	Explain func(i int, err error) error
}

// name is how errors name change number k.
func (c *Change) name(k int) string {
	if c.By != "" {
		return c.By
	}
	return fmt.Sprintf("change %d", k)
}

// explained returns err, the error of a write of c.Ops in one transaction
// (Apply's, Submit's of Atomic(c.Ops...), or a Commit's whose batch starts
// with c.Ops), as c.Explain explains the op that failed it; otherwise, and
// for an unknown outcome, err as it is.
func (c Change) explained(err error) error {
	if err == nil || c.Explain == nil || errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	var be *BatchError
	if !errors.As(err, &be) {
		return err
	}
	for _, cause := range be.Errs {
		var oe *OpError
		if errors.As(cause, &oe) && oe.Index >= 0 && oe.Index < len(c.Ops) {
			if x := c.Explain(oe.Index, oe); x != nil {
				return x
			}
		}
	}
	return err
}

func init() {
	batchplan.Register(batchplan.Planner{
		Failed: func(err error) any { return failedOp(err) },
		Size:   func(ops any) int { return estimateBatchSize(ops.([]Op)) },
		Join: func(p, changes any) (any, error) {
			j, err := joinChanges(p.(*Profile), changes.([]Change)...)
			return j, err
		},
		Explained: func(c any, err error) error { return c.(Change).explained(err) },
		Keys:      func(o any) (string, string) { return o.(Op).keys() },
	})
}

// joinChanges checks changes as the parts of one entity group transaction on a
// service of profile p (nil: Storage) and returns them joined: their ops
// in the order given, their intents, the earliest NotAfter, an Explain
// that asks the change each op came from, and By naming them all. Nothing
// is sent. It refuses, naming the change (its By) and op at fault: an op
// whose Err is set, a zero Op, an op in another partition than the first
// op's, an entity touched twice (by one change or two), a nil intent, an
// intent whose Err is set or whose ID is empty or given twice, no op at
// all; and, naming every change with its share, more operations than
// p.MaxBatchOps or a request body over p.MaxBatchSize (ErrTooLarge).
// Every error matches ErrInvalid.
func joinChanges(p *Profile, changes ...Change) (Change, error) {
	if p == nil {
		p = Storage
	}
	var j Change
	fail := func(pk, rk string, sentinel error, format string, args ...any) (Change, error) {
		return Change{}, refused("change", pk, rk, sentinel, format, args...)
	}
	var pk, firstBy string
	rows := map[string]string{} // RowKey -> the change that touches it
	ids := map[string]bool{}
	owner := make([]int, 0) // per joined op: its change
	for k := range changes {
		c := &changes[k]
		by := c.name(k)
		for i, o := range c.Ops {
			switch {
			case o.err != nil:
				return Change{}, &Error{Op: "change", PartitionKey: o.pk, RowKey: o.rk, Err: fmt.Errorf("op %d of %s: %w", i, by, o.err)}
			case o.kind == "":
				return fail("", "", ErrInvalidBatch, "op %d of %s is a zero Op: build ops with a Table's InsertOp, UpsertOp, UpdateOp or DeleteOp", i, by)
			case len(j.Ops) == 0:
				pk, firstBy = o.pk, by
			case o.pk != pk:
				return fail(o.pk, o.rk, ErrInvalidBatch, "op %d of %s is in partition %q, the first op (of %s) in %q: a transaction holds one partition; what lies elsewhere needs an intent", i, by, o.pk, firstBy, pk)
			}
			if other, dup := rows[o.rk]; dup {
				return fail(o.pk, o.rk, ErrInvalidBatch, "op %d of %s touches an entity that %s touches too: a transaction touches each entity once", i, by, other)
			}
			rows[o.rk] = by
			j.Ops = append(j.Ops, o)
			owner = append(owner, k)
		}
		for i, in := range c.Intents {
			if in == nil {
				return fail(pk, "", ErrInvalidBatch, "intent %d of %s is nil", i, by)
			}
			if err := in.Err(); err != nil {
				return Change{}, &Error{Op: "change", Err: fmt.Errorf("intent %d of %s: %w", i, by, err)}
			}
			if id := in.ID(); id == "" || ids[id] {
				return fail(pk, "", ErrInvalidBatch, "intent %d of %s has an empty id or one given twice", i, by)
			}
			ids[in.ID()] = true
			j.Intents = append(j.Intents, in)
		}
		if !c.NotAfter.IsZero() && (j.NotAfter.IsZero() || c.NotAfter.Before(j.NotAfter)) {
			j.NotAfter = c.NotAfter
		}
	}
	if len(j.Ops) == 0 {
		return fail("", "", ErrInvalidBatch, "no operation to write (an intent alone is enqueued, not applied)")
	}
	if n := len(j.Ops); n > p.MaxBatchOps {
		return fail(pk, "", ErrTooLarge, "%d operations (%s), more than a transaction of %s holds (%d)", n, shares(changes, func(c *Change) int { return len(c.Ops) }), p.Name, p.MaxBatchOps)
	}
	if n := estimateBatchSize(j.Ops); n > p.MaxBatchSize {
		return fail(pk, "", ErrTooLarge, "about %d bytes (%s), more than a transaction of %s holds (%d)", n, shares(changes, func(c *Change) int { return estimateBatchSize(c.Ops) - batchEnvelope }), p.Name, p.MaxBatchSize)
	}
	names := make([]string, len(changes))
	for k := range changes {
		names[k] = changes[k].name(k)
	}
	j.By = strings.Join(names, " + ")
	starts := make([]int, len(changes)) // the joined index of each change's first op
	for k, n := 1, 0; k < len(changes); k++ {
		n += len(changes[k-1].Ops)
		starts[k] = n
	}
	j.Explain = func(i int, err error) error {
		if i < 0 || i >= len(owner) {
			return nil
		}
		c := &changes[owner[i]]
		if c.Explain == nil {
			return nil
		}
		return c.Explain(i-starts[owner[i]], err)
	}
	return j, nil
}

// shares lists each change's share of a measure, for limit errors.
func shares(changes []Change, measure func(*Change) int) string {
	parts := make([]string, len(changes))
	for k := range changes {
		parts[k] = fmt.Sprintf("%s %d", changes[k].name(k), measure(&changes[k]))
	}
	return strings.Join(parts, ", ")
}

// Apply writes changes as one entity group transaction on t's table, all
// or none: they are checked first (t's profile; nothing is sent when they
// do not fit: one partition, no entity touched twice, the profile's
// limits), then one Submit of one Atomic group sends them, 1 round trip.
// The changes may come from any pattern over t's client (t gives the
// client and the profile). The result reports the joined ops in order
// (each change's ops after those of the changes before it). On a failure
// the error is the change's own explanation of its failing op
// (Change.Explain), else Submit's *BatchError; an unknown outcome is
// settled as Submit settles one. Changes that carry intents need
// eventual's Queue.Apply, which commits the intents with the same
// transaction; Apply refuses them.
func (t *Table[T]) Apply(ctx context.Context, changes ...Change) (BatchResult, error) {
	return apply(ctx, t.obs, t.client, t.name, t.direct, t.profile, changes)
}

func apply(ctx context.Context, o *obs.Obs, c *aztables.Client, name string, d *direct, p *Profile, changes []Change) (BatchResult, error) {
	j, err := joinChanges(p, changes...)
	if err != nil {
		return BatchResult{}, err
	}
	if len(j.Intents) > 0 {
		return BatchResult{}, refused("change", j.Ops[0].pk, "", ErrInvalidBatch, "%s carries %d intents: apply it with eventual's Queue.Apply, which commits them with the transaction", j.By, len(j.Intents))
	}
	if !j.NotAfter.IsZero() {
		if !time.Now().Before(j.NotAfter) {
			return BatchResult{}, &Error{Op: "change", PartitionKey: j.Ops[0].pk, Err: fmt.Errorf("%w: the NotAfter of %s (%s) passed before the transaction was sent", ErrNotApplied, j.By, j.NotAfter.Format(time.RFC3339Nano))}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, j.NotAfter)
		defer cancel()
	}
	res, err := submit(ctx, o, c, name, d, p, Atomic(j.Ops...), nil)
	return res, j.explained(err)
}
