package indexentity

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// entry is an entity to write: v as a property bag with its keys, and its
// indexed value.
type entry struct {
	d      table.Dynamic
	pk, rk string
	value  string
}

// prepare checks v as tbl would write it and computes its keys and value.
// Keys under reserved.Prefix are refused (checkKeys): such an entity
// could take the place of an index entity.
func (x *Index[T]) prepare(v T) (entry, error) {
	o := x.tbl.InsertOp(v) // the keys, and every limit checked
	if err := o.Err(); err != nil {
		return entry{}, keyErr(err)
	}
	if err := checkKeys(batchplan.PartitionKey(o), batchplan.RowKey(o)); err != nil {
		return entry{}, err
	}
	d, err := table.ToDynamic(v)
	if err != nil {
		return entry{}, err
	}
	d.Meta = table.Meta{}
	d.PartitionKey, d.RowKey = batchplan.PartitionKey(o), batchplan.RowKey(o)
	e := entry{d: d, pk: d.PartitionKey, rk: d.RowKey, value: x.value(&v)}
	if err := x.checkValue(e.pk, e.value); err != nil {
		return entry{}, err
	}
	return e, nil
}

// checkValue checks that value's list can be addressed.
func (x *Index[T]) checkValue(pk, value string) error {
	if x.store == blobs {
		_, err := x.blobName(value)
		return err
	}
	_, _, err := x.listKey(pk, value)
	return err
}

// valueOf returns the indexed value of an entity read as a property bag.
func (x *Index[T]) valueOf(d table.Dynamic) (string, error) {
	v, err := table.FromDynamic[T](d)
	if err != nil {
		return "", fmt.Errorf("indexentity: entity (%q, %q): %w", d.PartitionKey, d.RowKey, err)
	}
	return x.value(&v), nil
}

// conflict marks an error after which an ETag loop reads again and starts
// over: another writer changed what it read.
type conflict struct{ err error }

func (c *conflict) Error() string { return c.err.Error() }
func (c *conflict) Unwrap() error { return c.err }

func isConflict(err error) bool {
	var c *conflict
	return errors.As(err, &c)
}

// loop runs one pass of an ETag loop (read, then write) until it
// succeeds, fails for another reason than a conflict, or the retry policy
// gives up; Result.Conflicts counts the passes that met a conflict.
func (x *Index[T]) loop(ctx context.Context, op string, pass func(ctx context.Context) (Result, error)) (Result, error) {
	p := x.retry
	p.Retryable = isConflict
	var res Result
	var last error
	conflicts := 0
	err := p.Do(ctx, func(ctx context.Context) error {
		r, err := pass(ctx)
		if err != nil {
			if isConflict(err) {
				conflicts++
			}
			last = err
			return err
		}
		res = r
		return nil
	})
	res.Conflicts = conflicts
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil || isConflict(last):
		return Result{Conflicts: conflicts}, fmt.Errorf("indexentity: %s: %w", op, err)
	}
	return Result{Conflicts: conflicts}, last
}

// Roles of the ops of a transaction: the entity's op is always first.
const entityOp = 0

// settle classifies a failed transaction of an ETag loop: a 412, 409 or
// 404 on a list's index entity is a conflict (another writer changed or
// created or removed it since the read); so is a 412 on the entity when the
// caller gave azcore.ETagAny (the loop conditions the write on the version
// it read, which another writer replaced), and so is eventual's
// ErrCommitWindow (nothing applied). Everything else is final:
// ErrOutcomeUnknown (the core could not settle a lost response; never
// retried), ErrAlreadyExists of an insert, ErrPreconditionFailed for the
// caller's ETag, ErrNotFound of the entity.
func settle(err error, etag azcore.ETag) error {
	if err == nil || errors.Is(err, table.ErrOutcomeUnknown) {
		return err
	}
	if errors.Is(err, eventual.ErrCommitWindow) {
		// The window passed before the batch (nothing applied), whether a
		// worker's aborted record refused it or Commit's own deadline
		// check did: commit again with a new intent.
		return &conflict{err}
	}
	var oe *table.OpError
	if !errors.As(err, &oe) {
		return err
	}
	raced := errors.Is(oe, table.ErrPreconditionFailed) || errors.Is(oe, table.ErrAlreadyExists) || errors.Is(oe, table.ErrNotFound)
	switch {
	case oe.Index != entityOp && raced:
		return &conflict{err}
	case oe.Index == entityOp && etag == azcore.ETagAny && errors.Is(oe, table.ErrPreconditionFailed):
		return &conflict{err}
	}
	return err
}

// submit sends ops (the entity's first) as one transaction and reports the
// entity op's result.
func (x *Index[T]) submit(ctx context.Context, ops []table.Op, etag azcore.ETag) (Result, error) {
	if err := x.step("transaction"); err != nil {
		return Result{}, err
	}
	res, err := x.ent.Submit(ctx, table.Atomic(ops...), nil)
	if err = settle(err, etag); err != nil {
		return Result{}, err
	}
	return Result{Result: table.Result{ETag: res.Ops[entityOp].ETag, Verified: res.Ops[entityOp].Verified}}, nil
}

// Insert adds v (its keys are the table's for it: T's key fields, or the
// table's Options.Keys) and puts its id in the list of its value;
// [table.ErrAlreadyExists] when an entity with its keys exists.
//
// Same-partition store: the guide's procedure. (1) Read the index entity of
// v's value and its ETag; (2) one transaction inserts v and inserts the
// index entity or replaces it If-Match the ETag read; (3) when another
// writer changed the index entity in between (412, or 409 when both
// created it), start again at (1), through Options.Retry. 2 round trips,
// +2 per conflict. A list that would pass one entity's 1 MiB is refused
// after the read, before the transaction (table.ErrTooLarge).
//
// Eventual stores: v and an intent are committed together
// (eventual.Queue.Commit: 3 round trips); the worker then puts the id in
// the list.
func (x *Index[T]) Insert(ctx context.Context, v T) (res Result, err error) {
	ctx, sp := x.obs.Start(ctx, opInsert, x.tbl.Name(), partitionOf(x.tbl, &v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	e, err := x.prepare(v)
	if err != nil {
		return Result{}, err
	}
	return x.loop(ctx, "insert", func(ctx context.Context) (Result, error) {
		p, err := x.insertPlan(ctx, e)
		if err != nil {
			return Result{}, err
		}
		return x.send(ctx, p, "")
	})
}

// InsertOps is Insert as a [table.Change], to join a composed write (see
// "Composing patterns" in package table): Ops[0] is v's insert. In the
// same-partition store it reads the index entity of v's value (1 round
// trip) and the change also writes it, conditioned on the ETag read; in
// the eventual stores nothing is read and the change carries the intent
// that puts v's id in its list: apply it with the Index's Options.Queue
// (eventual's Queue.Apply), whose worker runs Handler. Applied later, a
// write of the list in between fails the transaction (the change's error
// says so; nothing applied): make the change again.
func (x *Index[T]) InsertOps(ctx context.Context, v T) (_ table.Change, err error) {
	ctx, sp := x.obs.Start(ctx, opInsertOps, x.tbl.Name(), partitionOf(x.tbl, &v))
	defer func() { sp.End(err) }()
	e, err := x.prepare(v)
	if err != nil {
		return table.Change{}, err
	}
	p, err := x.insertPlan(ctx, e)
	if err != nil {
		return table.Change{}, err
	}
	return x.change(p), nil
}

// insertPlan is an Insert of e: in the same-partition store, it reads
// the index entity of e's value.
func (x *Index[T]) insertPlan(ctx context.Context, e entry) (plan, error) {
	eop := x.ent.InsertOp(e.d)
	if x.store != samePartition {
		return plan{ops: []table.Op{eop}, intent: &change{e.pk, e.rk, []string{e.value}}}, nil
	}
	lpk, lrk, _ := x.listKey(e.pk, e.value)
	l, err := x.readList(ctx, lpk, lrk)
	if err != nil {
		return plan{}, err
	}
	l.ids, _ = set(l.ids, e.rk, true)
	lop, _, err := x.listOp(l, e.value)
	if err != nil {
		return plan{}, err
	}
	return plan{ops: []table.Op{eop, lop}}, nil
}

// Update replaces the entity with v (whole, as table.Replace does, so that
// its value is exactly the value function's of v) if its ETag matches
// etag (or whatever version exists, with azcore.ETagAny), and moves its id
// to the list of its new value when the value changed: the guide's rename
// (Jones -> Smith). It reads the entity first, to learn the value it has:
// [table.ErrNotFound] when it does not exist,
// [table.ErrPreconditionFailed] when etag is not its ETag. An empty etag
// is [table.ErrNoETag] (and ErrInvalid).
//
// Same-partition store: when the value is unchanged, one transaction
// replaces the entity If-Match the ETag read (2 round trips). Otherwise the
// two index entities are read (concurrently) and one transaction over the
// three entities, each with its ETag, replaces the entity, takes its id out
// of the old list (deleting the index entity if the list is now empty) and
// puts it into the new one: 4 round trips, 3 in sequence, +4 per conflict.
//
// Eventual stores: the replace and an intent naming both values are
// committed together (1 + 3 round trips); an unchanged value needs no
// intent (2).
//
// With azcore.ETagAny the write is conditioned on the version read, and a
// writer that changes the entity in between sends the loop back to the
// read (a conflict), so that the value moved out of is always the value
// replaced.
func (x *Index[T]) Update(ctx context.Context, v T, etag azcore.ETag) (res Result, err error) {
	ctx, sp := x.obs.Start(ctx, opUpdate, x.tbl.Name(), partitionOf(x.tbl, &v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	e, err := x.updatable(v, etag)
	if err != nil {
		return Result{}, err
	}
	return x.loop(ctx, "update", func(ctx context.Context) (Result, error) {
		p, err := x.updatePlan(ctx, e, etag)
		if err != nil {
			return Result{}, err
		}
		return x.send(ctx, p, etag)
	})
}

// UpdateOps is Update as a [table.Change] (see InsertOps): it reads the
// entity (1 round trip; [table.ErrNotFound], or
// [table.ErrPreconditionFailed] when its ETag is not etag) and returns its
// replacement conditioned on the ETag read; when the value changed, the
// same-partition store also reads the two index entities (1 round trip,
// in parallel) and the change moves the id between them, each conditioned
// on the ETag read, and an eventual store's change carries the intent
// naming both values. A write of the entity or of a list in between fails
// the transaction, nothing applied: make the change again.
func (x *Index[T]) UpdateOps(ctx context.Context, v T, etag azcore.ETag) (_ table.Change, err error) {
	ctx, sp := x.obs.Start(ctx, opUpdateOps, x.tbl.Name(), partitionOf(x.tbl, &v))
	defer func() { sp.End(err) }()
	e, err := x.updatable(v, etag)
	if err != nil {
		return table.Change{}, err
	}
	p, err := x.updatePlan(ctx, e, etag)
	if err != nil {
		return table.Change{}, err
	}
	return x.change(p), nil
}

// updatable checks an Update's arguments before the network.
func (x *Index[T]) updatable(v T, etag azcore.ETag) (entry, error) {
	if etag == "" {
		return entry{}, fmt.Errorf("%w: update: %w", ErrInvalid, table.ErrNoETag)
	}
	return x.prepare(v)
}

// updatePlan is an Update to e: it reads the entity and, in the
// same-partition store when the value changes, the two lists.
func (x *Index[T]) updatePlan(ctx context.Context, e entry, etag azcore.ETag) (plan, error) {
	cur, old, err := x.current(ctx, "update", e.pk, e.rk, etag)
	if err != nil {
		return plan{}, err
	}
	d := e.d
	d.Meta = cur.Meta // the version read, with its write history: exact verification
	eop := x.ent.UpdateOp(d, cur.ETag, table.Replace)
	switch {
	case old == e.value:
		return plan{ops: []table.Op{eop}}, nil
	case x.store != samePartition:
		return plan{ops: []table.Op{eop}, intent: &change{e.pk, e.rk, []string{old, e.value}}}, nil
	}
	ops, err := x.moveOps(ctx, e.pk, e.rk, old, e.value)
	if err != nil {
		return plan{}, err
	}
	return plan{ops: append([]table.Op{eop}, ops...)}, nil
}

// Delete removes the entity (partitionKey, rowKey) if its ETag matches
// etag (or whatever version exists, with azcore.ETagAny) and takes its id
// out of the list of its value, deleting the index entity when the list is
// then empty. It reads the entity first, to learn its value:
// [table.ErrNotFound] when it does not exist, [table.ErrPreconditionFailed]
// when etag is not its ETag. An empty etag is [table.ErrNoETag] (and
// ErrInvalid).
//
// Same-partition store: the entity read, the index entity read, and one
// transaction deleting the entity and updating (or deleting) the index
// entity, each If-Match the ETag read: 3 round trips, +3 per conflict.
// Eventual stores: the delete and an intent are committed together (1 + 3
// round trips).
//
// When the transaction's response is lost and the index entity is
// deleted with the entity, nothing is left to read: like table.Delete,
// Delete then reports [table.ErrOutcomeUnknown] (which also matches
// table.ErrNotFound); the entity and its id are gone together or neither.
func (x *Index[T]) Delete(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) (err error) {
	ctx, sp := x.obs.Start(ctx, opDelete, x.tbl.Name(), partitionKey)
	var res Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := x.deletable(partitionKey, rowKey, etag); err != nil {
		return err
	}
	res, err = x.loop(ctx, "delete", func(ctx context.Context) (Result, error) {
		p, err := x.deletePlan(ctx, partitionKey, rowKey, etag)
		if err != nil {
			return Result{}, err
		}
		return x.send(ctx, p, etag)
	})
	return err
}

// DeleteOps is Delete as a [table.Change] (see InsertOps): it reads the
// entity (1 round trip; [table.ErrNotFound], or
// [table.ErrPreconditionFailed] when its ETag is not etag) and returns its
// delete conditioned on the ETag read; the same-partition store also
// reads the index entity of its value (1 round trip) and the change takes
// the id out of it, and an eventual store's change carries the intent. A
// write in between fails the transaction, nothing applied: make the
// change again.
func (x *Index[T]) DeleteOps(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) (_ table.Change, err error) {
	ctx, sp := x.obs.Start(ctx, opDeleteOps, x.tbl.Name(), partitionKey)
	defer func() { sp.End(err) }()
	if err := x.deletable(partitionKey, rowKey, etag); err != nil {
		return table.Change{}, err
	}
	p, err := x.deletePlan(ctx, partitionKey, rowKey, etag)
	if err != nil {
		return table.Change{}, err
	}
	return x.change(p), nil
}

// deletable checks a Delete's arguments before the network.
func (x *Index[T]) deletable(pk, rk string, etag azcore.ETag) error {
	if etag == "" {
		return fmt.Errorf("%w: delete: %w", ErrInvalid, table.ErrNoETag)
	}
	if err := x.ent.DeleteOp(pk, rk, etag).Err(); err != nil {
		return keyErr(err) // the keys, checked before the network
	}
	if err := checkKeys(pk, rk); err != nil {
		return fmt.Errorf("indexentity: delete: %w", err)
	}
	return nil
}

// deletePlan is a Delete of (pk, rk): it reads the entity and, in the
// same-partition store, the list of its value.
func (x *Index[T]) deletePlan(ctx context.Context, pk, rk string, etag azcore.ETag) (plan, error) {
	cur, old, err := x.current(ctx, "delete", pk, rk, etag)
	if err != nil {
		return plan{}, err
	}
	eop := x.ent.DeleteOp(pk, rk, cur.ETag)
	if x.store != samePartition {
		return plan{ops: []table.Op{eop}, intent: &change{pk, rk, []string{old}}}, nil
	}
	lpk, lrk, err := x.listKey(pk, old)
	if err != nil {
		return plan{}, err
	}
	l, err := x.readList(ctx, lpk, lrk)
	if err != nil {
		return plan{}, err
	}
	ops := []table.Op{eop}
	if ids, changed := set(l.ids, rk, false); changed {
		l.ids = ids
		lop, _, err := x.listOp(l, old)
		if err != nil {
			return plan{}, err
		}
		ops = append(ops, lop)
	}
	return plan{ops: ops}, nil
}

// plan is a write as built from what it read: its ops (the entity's
// first) and, in an eventual store, the intent that brings the lists in
// line with it (nil when no indexed value changes).
type plan struct {
	ops    []table.Op
	intent *change
}

// send writes p: one transaction, or, with an intent, one
// eventual.Queue.Commit.
func (x *Index[T]) send(ctx context.Context, p plan, etag azcore.ETag) (Result, error) {
	if p.intent != nil {
		return x.commitOnce(ctx, p.ops[entityOp], etag, *p.intent)
	}
	return x.submit(ctx, p.ops, etag)
}

// change is p as a table.Change: a failure of a list's op (another
// writer changed, created or removed the list since it was read) is
// explained as such.
func (x *Index[T]) change(p plan) table.Change {
	c := table.Change{By: fmt.Sprintf("indexentity %q", x.name), Ops: p.ops}
	if p.intent != nil {
		c.Intents = []table.Intent{x.kind.New(*p.intent)}
	}
	c.Explain = func(i int, err error) error {
		raced := errors.Is(err, table.ErrPreconditionFailed) || errors.Is(err, table.ErrAlreadyExists) || errors.Is(err, table.ErrNotFound)
		if i == entityOp || !raced {
			return nil
		}
		return fmt.Errorf("indexentity: index %s: another writer changed a list since it was read (make the change again): %w", x.name, err)
	}
	return c
}

// current reads the entity (pk, rk) as a property bag, checks it against
// the caller's etag and returns it with its value.
func (x *Index[T]) current(ctx context.Context, op, pk, rk string, etag azcore.ETag) (table.Dynamic, string, error) {
	e, err := x.ent.Get(ctx, pk, rk, nil)
	cur := e.Value
	if err != nil {
		return cur, "", err
	}
	if etag != azcore.ETagAny && cur.ETag != etag {
		return cur, "", fmt.Errorf("indexentity: %s (%q, %q): %w (its ETag is %s, not %s)", op, pk, rk, table.ErrPreconditionFailed, cur.ETag, etag)
	}
	old, err := x.valueOf(cur)
	return cur, old, err
}

// moveOps reads the index entities of values old and new (concurrently)
// and returns the writes that move rk from the one to the other in
// partition pk: each conditioned on the ETag read, or an insert; a list
// that already holds what it should is left out.
func (x *Index[T]) moveOps(ctx context.Context, pk, rk, old, new string) ([]table.Op, error) {
	values := [2]string{old, new}
	var lists [2]list
	var errs [2]error
	var wg sync.WaitGroup
	for i := range values {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lpk, lrk, err := x.listKey(pk, values[i])
			if err == nil {
				lists[i], err = x.readList(ctx, lpk, lrk)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // one line: the first list's error (both name the index)
		}
	}
	var ops []table.Op
	for i, in := range []bool{false, true} {
		ids, changed := set(lists[i].ids, rk, in)
		if !changed {
			continue
		}
		lists[i].ids = ids
		op, _, err := x.listOp(lists[i], values[i])
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// commitOnce is one eventual.Queue.Commit of op, the entity's write
// conditioned on etag (for settle), with an intent for c.
func (x *Index[T]) commitOnce(ctx context.Context, op table.Op, etag azcore.ETag, c change) (Result, error) {
	if err := x.step("commit"); err != nil {
		return Result{}, err
	}
	d := x.kind.New(c)
	res, err := x.q.Commit(ctx, x.ent.Client(), []table.Op{op}, d)
	if err = settle(err, etag); err != nil {
		return Result{}, err
	}
	r := Result{Intent: d.ID()}
	if len(res.Batch.Ops) > 0 {
		r.ETag, r.Verified = res.Batch.Ops[entityOp].ETag, res.Batch.Ops[entityOp].Verified
	}
	return r, nil
}

// The payload of an eventual store's intents: an entity and the values
// whose lists may have to change (its value before the write, if any, and
// after it, if any).
type change struct {
	PartitionKey string   `json:"pk"`
	RowKey       string   `json:"rk"`
	Values       []string `json:"values"`
}
