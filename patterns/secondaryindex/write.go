package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/keys"
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
// [table.ErrAlreadyExists] when the entity exists, and with ErrDuplicate
// when a unique index has one of its values; then nothing was written.
func (s *Store[T]) Insert(ctx context.Context, v T) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opInsert, s.tbl.Name(), partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
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

// Get reads the entity with PartitionKey pk and RowKey (id) rk: 1 point
// query of its primary row. [table.ErrNotFound] when it does not exist.
func (s *Store[T]) Get(ctx context.Context, pk, rk string) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.checkKeys(pk, rk); err != nil {
		return Entity[T]{}, err
	}
	d, err := s.tbl.Get(ctx, pk, s.primaryKey(rk), nil)
	if err != nil {
		return Entity[T]{}, err
	}
	return s.decode(ctx, d.Value)
}

// checkKeys checks the keys of an entity addressed by key: its
// PartitionKey and its primary row's RowKey.
func (s *Store[T]) checkKeys(pk, rk string) error {
	if err := keys.Validate(pk); err != nil {
		return fmt.Errorf("%w: PartitionKey: %w", ErrInvalid, err)
	}
	if err := keys.Validate(s.primaryKey(rk)); err != nil {
		return fmt.Errorf("%w: id %q: %w", ErrInvalid, rk, err)
	}
	return nil
}

// Update replaces the entity with v, if its ETag is etag (any version with
// azcore.ETagAny), and moves its copies. It reads the primary first (to
// learn the copies the stored version has): [table.ErrNotFound] when it
// does not exist, [table.ErrPreconditionFailed] when its ETag is not etag,
// before anything is written. Then one transaction replaces the primary
// If-Match the ETag read, deletes the copies whose index value changed,
// writes the new ones and refreshes the others that hold changed fields:
// 2 round trips (4 with OtherPartition indexes, whose copies an intent
// moves). With azcore.ETagAny, a writer that changes the entity in
// between sends Update back to the read (through Options.Retry), so the
// copies deleted are always those of the version replaced. An empty etag
// is [table.ErrNoETag] (and ErrInvalid). v's keys name the entity; use
// Modify to change some fields of the stored version.
func (s *Store[T]) Update(ctx context.Context, v T, etag azcore.ETag) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdate, s.tbl.Name(), partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	if etag == "" {
		return table.Result{}, fmt.Errorf("%w: update: %w", ErrInvalid, table.ErrNoETag)
	}
	e, err := s.encode(v)
	if err != nil {
		return table.Result{}, err
	}
	_, res, err = s.change(ctx, e.pk, e.id, etag, func(*T) (*T, error) { return &v, nil })
	return res, err
}

// Modify reads the entity, applies fn and writes it back as Update does,
// again from the read when another writer changed it in between (through
// Options.Retry): 2 round trips (4 with OtherPartition indexes), +2 per
// conflict. fn may run several times; an error from it stops Modify and is
// returned as is. fn may not change the entity's keys. The Entity returned
// holds the value written and its new ETag.
func (s *Store[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opModify, s.tbl.Name(), pk)
	var res table.Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := s.checkKeys(pk, rk); err != nil {
		return Entity[T]{}, err
	}
	e, res, err := s.change(ctx, pk, rk, azcore.ETagAny, func(v *T) (*T, error) {
		if err := fn(v); err != nil {
			return nil, retry.Stop(err)
		}
		return v, nil
	})
	return e, err
}

// Delete removes the entity (pk, rk) and its copies, if its ETag is etag
// (any version with azcore.ETagAny). It reads the primary first, to learn
// its copies: [table.ErrNotFound] when it does not exist,
// [table.ErrPreconditionFailed] when its ETag is not etag. Then one
// transaction deletes the primary If-Match the ETag read and its
// SamePartition copies: 2 round trips (4 with OtherPartition indexes,
// whose copies an intent removes). With azcore.ETagAny, it reads again
// when another writer changed the entity in between. An empty etag is
// [table.ErrNoETag] (and ErrInvalid). A lost response that cannot be
// settled is [table.ErrOutcomeUnknown].
func (s *Store[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) (err error) {
	ctx, sp := s.obs.Start(ctx, opDelete, s.tbl.Name(), pk)
	var res table.Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if etag == "" {
		return fmt.Errorf("%w: delete: %w", ErrInvalid, table.ErrNoETag)
	}
	if err := s.checkKeys(pk, rk); err != nil {
		return err
	}
	_, res, err = s.change(ctx, pk, rk, etag, nil)
	return err
}

// change is the read-modify-write of Update, Modify and Delete: it reads
// the entity (pk, id), fails with table.ErrPreconditionFailed when its
// ETag is not etag (unless azcore.ETagAny), and writes next(the value
// read) in one transaction with the copies, conditioned on the ETag read;
// next nil deletes the entity. With azcore.ETagAny a 412 (another writer
// in between) starts again from the read, through Options.Retry. It
// returns the entity written and the write's result.
func (s *Store[T]) change(ctx context.Context, pk, id string, etag azcore.ETag, next func(*T) (*T, error)) (Entity[T], table.Result, error) {
	p := s.retry
	p.Retryable = retry.RetryOn412
	if etag != azcore.ETagAny {
		p.Retryable = func(error) bool { return false } // the caller's ETag: a 412 is final
	}
	var out Entity[T]
	var res table.Result
	err := p.Do(ctx, func(ctx context.Context) error {
		cur, err := s.Get(ctx, pk, id)
		if err != nil {
			return err
		}
		if etag != azcore.ETagAny && cur.ETag != etag {
			return fmt.Errorf("secondaryindex: (%q, %q): %w (its ETag is %s, not %s)", pk, id, table.ErrPreconditionFailed, cur.ETag, etag)
		}
		pe, err := s.encode(cur.Value)
		if err != nil {
			return err
		}
		var b batch
		var v *T
		if next == nil {
			b = s.plan(s.tbl.DeleteOp(pk, s.primaryKey(id), cur.ETag), &pe, nil, &cur.Value, nil)
		} else {
			prev := cur.Value
			if v, err = next(&cur.Value); err != nil {
				return err
			}
			ne, err := s.encode(*v)
			if err == nil {
				err = s.seal(ctx, &ne)
			}
			if err != nil {
				return retry.Stop(err)
			}
			if ne.pk != pk || ne.id != id {
				return retry.Stop(fmt.Errorf("%w: the keys of (%q, %q) cannot change (to %q, %q): insert the new entity and delete the old", ErrInvalid, pk, id, ne.pk, ne.id))
			}
			b = s.plan(s.tbl.UpdateOp(ne.primary, cur.ETag, table.Replace), &pe, &ne, &prev, v)
			if err := s.check(b); err != nil {
				return retry.Stop(err)
			}
		}
		r, err := s.submit(ctx, pk, id, b)
		if err != nil {
			return err
		}
		res = table.Result{ETag: r.ETag, Verified: r.Verified}
		if v != nil {
			out = Entity[T]{Entity: table.Entity[T]{PartitionKey: pk, RowKey: id, ETag: r.ETag, Value: *v}}
		}
		return nil
	})
	return out, res, err
}
