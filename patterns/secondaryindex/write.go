package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// intent is the payload of an OtherPartition index's intent: the primary
// to reconcile its copies from, and the copies its previous version had
// (found without a scan: the write knew the previous version).
type intent struct {
	PK, ID string
	Old    []copyRef
}

// copyRef locates one copy: index name, partition, RowKey.
type copyRef struct {
	Index, PK, RK string
}

// batch is the operations of one write, with what each copy op is, so a
// failure can be named.
type batch struct {
	ops   []table.Op
	what  []string // per op: "" for the primary, else the index name
	value [][]string
	dels  []bool // per op: a copy delete (a missing copy is drift, skipped)
	old   []copyRef
}

func (b *batch) add(op table.Op, index string, value []string, del bool) {
	b.ops, b.what, b.value, b.dels = append(b.ops, op), append(b.what, index), append(b.value, value), append(b.dels, del)
}

// plan builds the batch that takes the entity from prev (nil: none) to next
// (nil: deleted): the primary op, then per SamePartition index the copy
// ops, and the OtherPartition copies prev had.
func (s *Store[T]) plan(primary table.Op, prev, next *entry, prevValue, nextValue *T) batch {
	var b batch
	b.add(primary, "", nil, false)
	for i := range s.indexes {
		ix := &s.indexes[i]
		var old, cur row
		var hasOld, hasCur bool
		if prev != nil {
			old, hasOld = prev.copies[ix.Name]
		}
		if next != nil {
			cur, hasCur = next.copies[ix.Name]
		}
		if ix.Where == OtherPartition {
			if hasOld {
				b.old = append(b.old, copyRef{ix.Name, old.pk, old.rk})
			}
			continue
		}
		var curValue []string
		if hasCur {
			curValue = ix.Key(nextValue)
		}
		switch {
		case hasOld && hasCur && old.rk == cur.rk:
			if !sameCopy(old, cur) {
				b.add(s.tbl.UpsertOp(table.Dynamic{PartitionKey: cur.pk, RowKey: cur.rk, Properties: cur.props}, table.Replace), ix.Name, curValue, false)
			}
			continue
		case hasOld:
			b.add(s.tbl.DeleteOp(old.pk, old.rk, azcore.ETagAny), ix.Name, ix.Key(prevValue), true)
		}
		if hasCur {
			b.add(s.tbl.InsertOp(table.Dynamic{PartitionKey: cur.pk, RowKey: cur.rk, Properties: cur.props}), ix.Name, curValue, false)
		}
	}
	return b
}

// check applies the transaction limits before the network, naming the
// index whose copies overflow.
func (s *Store[T]) check(b batch) error {
	limitOps := table.MaxBatchOps
	if s.kind.Name() != "" {
		limitOps-- // the commit record
	}
	for i := range b.ops {
		if err := b.ops[i].Err(); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, b.name(i), err)
		}
		if i >= limitOps || table.EstimateBatchSize(b.ops[:i+1]) > table.MaxBatchSize-8<<10 {
			return fmt.Errorf("%w: the write does not fit one transaction (%d operations, 4 MiB) at %s", ErrInvalid, limitOps, b.name(i))
		}
	}
	return nil
}

func (b *batch) name(i int) string {
	if b.what[i] == "" {
		return "the primary"
	}
	return fmt.Sprintf("index %q", b.what[i])
}

// submit sends the batch in one transaction, through Commit with an
// intent when the Store has OtherPartition indexes (again, with a new
// intent, when the commit window passed before the batch: up to 3 times). A copy delete that
// finds no copy (drift) is dropped and the batch sent again; a unique
// index that has the value is ErrDuplicate.
func (s *Store[T]) submit(ctx context.Context, pk, id string, b batch) (table.OpResult, error) {
	windows := 0
	for {
		var res table.BatchResult
		var err error
		if s.kind.Name() != "" {
			var cr eventual.CommitResult
			cr, err = s.queue.Commit(ctx, s.tbl.Client(), b.ops, s.kind.New(intent{PK: pk, ID: id, Old: b.old}))
			if errors.Is(err, eventual.ErrCommitWindow) && windows < 3 {
				windows++ // nothing applied: again, with a new intent
				continue
			}
			res = cr.Batch
		} else {
			res, err = s.tbl.Submit(ctx, table.Atomic(b.ops...), nil)
		}
		if err == nil {
			return res.Ops[0], nil
		}
		if errors.Is(err, table.ErrOutcomeUnknown) || len(res.Ops) < len(b.ops) {
			return table.OpResult{}, err
		}
		drift := -1
		for i := range b.ops {
			e := res.Ops[i].Err
			switch {
			case b.dels[i] && errors.Is(e, table.ErrNotFound):
				drift = i
			case b.what[i] != "" && errors.Is(e, table.ErrAlreadyExists):
				return table.OpResult{}, fmt.Errorf("%w: index %q already has value %q (%w); nothing was written", ErrDuplicate, b.what[i], b.value[i], table.ErrAlreadyExists)
			}
		}
		if drift < 0 {
			return table.OpResult{}, err
		}
		b.ops, b.what, b.value, b.dels = slices.Delete(b.ops, drift, drift+1), slices.Delete(b.what, drift, drift+1), slices.Delete(b.value, drift, drift+1), slices.Delete(b.dels, drift, drift+1)
	}
}

// Insert writes v and its copies: in one transaction with its
// SamePartition copies (1 round trip), and with an intent for its
// OtherPartition copies (3: eventual.Queue.Commit). It fails with
// table.ErrAlreadyExists when the entity exists, and with ErrDuplicate
// when a unique index has one of its values; then nothing was written.
func (s *Store[T]) Insert(ctx context.Context, v T) (table.Result, error) {
	e, err := s.encode(v)
	if err == nil {
		err = s.seal(ctx, &e)
	}
	if err != nil {
		return table.Result{}, err
	}
	b := s.plan(s.tbl.InsertOp(e.primary), nil, &e, nil, &v)
	if err := s.check(b); err != nil {
		return table.Result{}, err
	}
	r, err := s.submit(ctx, e.pk, e.id, b)
	return table.Result{ETag: r.ETag, Verified: r.Verified}, err
}

// Get reads an entity by its partition and id: 1 point query.
func (s *Store[T]) Get(ctx context.Context, pk, id string) (Entity[T], error) {
	d, err := s.tbl.Get(ctx, pk, s.primaryKey(id), nil)
	if err != nil {
		return Entity[T]{}, err
	}
	return s.decode(ctx, d)
}

// Update replaces prev (as read by Get, Lookup with Fetch, or a previous
// write: its ETag is the condition) with next, which must have the same
// keys, and moves its copies: one transaction replaces the primary
// If-Match prev's ETag, deletes the copies whose index value changed,
// writes the new ones and refreshes the others that hold changed fields
// (1 round trip; 3 with OtherPartition indexes). table.ErrPreconditionFailed
// when the entity changed since prev was read: read it again (or use
// Modify).
func (s *Store[T]) Update(ctx context.Context, prev Entity[T], next T) (table.Result, error) {
	if prev.ETag == "" || prev.FromCopy {
		return table.Result{}, fmt.Errorf("%w: Update needs the entity as read from its primary (with its ETag)", ErrInvalid)
	}
	pe, err := s.encode(prev.Value)
	if err != nil {
		return table.Result{}, err
	}
	ne, err := s.encode(next)
	if err != nil {
		return table.Result{}, err
	}
	if err := s.seal(ctx, &ne); err != nil {
		return table.Result{}, err
	}
	if pe.pk != ne.pk || pe.id != ne.id || pe.pk != prev.PartitionKey || pe.id != prev.ID {
		return table.Result{}, fmt.Errorf("%w: Update cannot change an entity's keys (%q/%q to %q/%q): insert the new one and delete the old", ErrInvalid, prev.PartitionKey, prev.ID, ne.pk, ne.id)
	}
	b := s.plan(s.tbl.UpdateOp(ne.primary, prev.ETag, table.Replace), &pe, &ne, &prev.Value, &next)
	if err := s.check(b); err != nil {
		return table.Result{}, err
	}
	r, err := s.submit(ctx, ne.pk, ne.id, b)
	return table.Result{ETag: r.ETag, Verified: r.Verified}, err
}

// Modify reads the entity, applies fn and writes it back with Update,
// again from the read when another writer changed it in between (through
// Options.Retry): 2 round trips (4 with OtherPartition indexes), +2 per
// conflict. fn may run several times; an error from it stops Modify and is
// returned as is.
func (s *Store[T]) Modify(ctx context.Context, pk, id string, fn func(v *T) error) (Entity[T], error) {
	var out Entity[T]
	p := s.retry
	p.Retryable = retry.RetryOn412
	err := p.Do(ctx, func(ctx context.Context) error {
		prev, err := s.Get(ctx, pk, id)
		if err != nil {
			return err
		}
		next := prev.Value
		if err := fn(&next); err != nil {
			return retry.Stop(err)
		}
		r, err := s.Update(ctx, prev, next)
		if err != nil {
			return err
		}
		out = Entity[T]{Value: next, PartitionKey: pk, ID: id, ETag: r.ETag}
		return nil
	})
	return out, err
}

// Delete removes an entity and its copies: it reads the entity (to learn
// its copies and ETag), then deletes it as DeleteEntity does (2 round
// trips; 4 with OtherPartition indexes), again when another writer changed
// it in between. ErrNotFound when it does not exist.
func (s *Store[T]) Delete(ctx context.Context, pk, id string) error {
	p := s.retry
	p.Retryable = retry.RetryOn412
	return p.Do(ctx, func(ctx context.Context) error {
		prev, err := s.Get(ctx, pk, id)
		if err != nil {
			return err
		}
		return s.DeleteEntity(ctx, prev)
	})
}

// DeleteEntity removes prev (as read by Get, or Lookup with Fetch) and its
// copies: one transaction deletes the primary If-Match prev's ETag and its
// SamePartition copies (1 round trip; 3 with OtherPartition indexes, whose
// copies an intent removes). table.ErrPreconditionFailed when the entity
// changed since prev was read.
func (s *Store[T]) DeleteEntity(ctx context.Context, prev Entity[T]) error {
	if prev.ETag == "" || prev.FromCopy {
		return fmt.Errorf("%w: DeleteEntity needs the entity as read from its primary (with its ETag)", ErrInvalid)
	}
	pe, err := s.encode(prev.Value)
	if err != nil {
		return err
	}
	b := s.plan(s.tbl.DeleteOp(prev.PartitionKey, s.primaryKey(prev.ID), prev.ETag), &pe, nil, &prev.Value, nil)
	_, err = s.submit(ctx, prev.PartitionKey, prev.ID, b)
	return err
}
