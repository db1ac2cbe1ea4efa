package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/fieldmodel"
	"github.com/tablekit/tablekit/internal/retrycore"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/largerows"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// ErrDrift is the error of a change made by InsertOps, UpdateOps,
// ModifyOps or DeleteOps whose transaction failed because an index copy
// of the stored version was missing (drift: Check reports it, Rebuild
// repairs it). Update, Modify and Delete skip such a copy and write on;
// a composed write cannot leave out one op, so it reports it.
var ErrDrift = errors.New("secondaryindex: an index copy the write deletes is missing (drift)")

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
	// pk and id are the entity's keys; prepared, its large values
	// uploaded for the write (Options.Large), nil when none.
	pk, id   string
	prepared *largerows.Prepared
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
			curValue, _ = ix.keyOf(nextValue) // encode computed it
		}
		switch {
		case hasOld && hasCur && old.rk == cur.rk:
			if !sameCopy(old, cur) {
				b.add(s.tbl.UpsertOp(table.Dynamic{PartitionKey: cur.pk, RowKey: cur.rk, Properties: cur.props}, table.Replace), ix.Name, curValue, false)
			}
			continue
		case hasOld:
			b.add(s.tbl.DeleteOp(old.pk, old.rk, azcore.ETagAny), ix.Name, valueOf(ix, prevValue), true)
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
	p := s.tbl.Profile()
	limitOps := p.MaxBatchOps
	if s.kind.Name() != "" {
		limitOps-- // the commit record
	}
	for i := range b.ops {
		if err := b.ops[i].Err(); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, b.name(i), err)
		}
		if i >= limitOps || batchplan.Size(b.ops[:i+1]) > p.MaxBatchSize-8<<10 {
			return fmt.Errorf("%w: the write does not fit one transaction of %s (%d operations, %d bytes) at %s", ErrInvalid, p.Name, limitOps, p.MaxBatchSize, b.name(i))
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

// explain is the Store's error for op i of b, which failed its
// transaction with err: a unique index's copy insert that found the value
// taken is ErrDuplicate, a copy delete that found no copy ErrDrift; nil
// for the others (the primary's own error stands).
func (b *batch) explain(i int, err error) error {
	switch {
	case i < 0 || i >= len(b.ops):
		return nil
	case b.dels[i] && errors.Is(err, table.ErrNotFound):
		return fmt.Errorf("%w: index %q, value %q: run Check and Rebuild: %w", ErrDrift, b.what[i], b.value[i], err)
	case b.what[i] != "" && errors.Is(err, table.ErrAlreadyExists):
		return fmt.Errorf("%w: index %q already has value %q (%w); nothing was written", ErrDuplicate, b.what[i], b.value[i], table.ErrAlreadyExists)
	}
	return nil
}

// change is b as a [table.Change] of the Store: its ops, the intent of
// its OtherPartition indexes, its large values' NotAfter, its
// explanations.
func (s *Store[T]) change(b batch) table.Change {
	c := table.Change{By: fmt.Sprintf("secondaryindex %q", s.primary), Ops: b.ops, Explain: b.explain}
	if s.kind.Name() != "" {
		c.Intents = []table.Intent{s.kind.New(intent{PK: b.pk, ID: b.id, Old: b.old})}
	}
	if b.prepared != nil {
		c.NotAfter = b.prepared.NotAfter
	}
	return c
}

// submit sends the batch in one transaction, through eventual's
// Queue.Apply with an intent when the Store has OtherPartition indexes (again, with a new
// intent, when the commit window passed before the batch: up to 3 times). A copy delete that
// finds no copy (drift) is dropped and the batch sent again; a unique
// index that has the value is ErrDuplicate. When the write certainly did
// not apply, the large values uploaded for it are deleted.
func (s *Store[T]) submit(ctx context.Context, b batch) (table.OpResult, error) {
	r, err := s.send(ctx, b)
	if err != nil && b.prepared != nil && !errors.Is(err, table.ErrOutcomeUnknown) {
		s.large.Discard(ctx, *b.prepared)
	}
	return r, err
}

func (s *Store[T]) send(ctx context.Context, b batch) (table.OpResult, error) {
	windows := 0
	for {
		c := s.change(b)
		var res table.BatchResult
		var err error
		if s.kind.Name() != "" {
			var cr eventual.CommitResult
			cr, err = s.queue.Apply(ctx, s.tbl.Client(), c)
			if errors.Is(err, eventual.ErrCommitWindow) && windows < 3 {
				windows++ // nothing applied: again, with a new intent
				continue
			}
			res = cr.Batch
		} else {
			res, err = s.tbl.Apply(ctx, c)
		}
		if err == nil {
			return res.Ops[0], nil
		}
		if errors.Is(err, table.ErrOutcomeUnknown) || len(res.Ops) < len(b.ops) || errors.Is(err, ErrDuplicate) {
			return table.OpResult{}, err
		}
		drift := -1
		for i := range b.ops {
			if b.dels[i] && errors.Is(res.Ops[i].Err, table.ErrNotFound) {
				drift = i
			}
		}
		if drift < 0 {
			return table.OpResult{}, err
		}
		b.ops, b.what, b.value, b.dels = slices.Delete(b.ops, drift, drift+1), slices.Delete(b.what, drift, drift+1), slices.Delete(b.value, drift, drift+1), slices.Delete(b.dels, drift, drift+1)
	}
}

// insert prepares the insert of v: its rows, its large values uploaded
// (after the limits are checked), and the batch.
func (s *Store[T]) insert(ctx context.Context, v T) (batch, error) {
	e, err := s.encode(v)
	if err == nil {
		err = s.seal(ctx, &e)
	}
	if err != nil {
		return batch{}, err
	}
	b := s.plan(s.tbl.InsertOp(e.primary), nil, &e, nil, &v)
	b.pk, b.id = e.pk, e.id
	if err := s.check(b); err != nil {
		return batch{}, err
	}
	return b, s.prepare(ctx, &b, v, nil, false, func(d table.Dynamic) table.Op { return s.tbl.InsertOp(d) })
}

// prepare uploads v's large values (Options.Large) for b and makes b's
// primary op, from the row to write (sealed by Options.Sealer), with op; current are the blobs of
// the version b is conditioned on, kept for the values that are unchanged
// (or, with keep, left empty in v). The limits are checked again.
func (s *Store[T]) prepare(ctx context.Context, b *batch, v T, current largerows.Blobs, keep bool, op func(table.Dynamic) table.Op) error {
	if s.large == nil {
		return nil
	}
	p, err := s.large.Prepare(ctx, v, b.pk, s.primaryKey(b.id), current, keep)
	if err != nil {
		return err
	}
	if s.sealer != nil {
		if err := s.sealer.Seal(ctx, &p.Row); err != nil {
			s.large.Discard(ctx, p)
			return err
		}
	}
	b.ops[0], b.prepared = op(p.Row), &p
	if err := s.check(*b); err != nil {
		s.large.Discard(ctx, p)
		return err
	}
	return nil
}

// Insert writes v and its copies: in one transaction with its
// SamePartition copies (1 round trip), and with an intent for its
// OtherPartition copies (3: eventual's Queue.Apply); with Options.Large,
// after uploading its large values (1 round trip per value, in
// parallel). It fails with [table.ErrAlreadyExists] when the entity
// exists, and with ErrDuplicate when a unique index has one of its
// values; then nothing was written.
func (s *Store[T]) Insert(ctx context.Context, v T) (_ table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opInsert, s.tbl.Name(), partitionOf(&v))
	var r table.OpResult
	defer func() { sp.EndWrite(err, r.Verified) }()
	b, err := s.insert(ctx, v)
	if err != nil {
		return table.Result{}, err
	}
	r, err = s.submit(ctx, b)
	return table.Result{ETag: r.ETag, Verified: r.Verified}, err
}

// InsertOps is Insert as a [table.Change], to write v and its copies in
// one transaction with other patterns' changes in v's partition (see
// "Composing patterns" in package table): Ops[0] is the primary's insert,
// then the SamePartition copies' inserts; Intents holds the intent of the
// OtherPartition indexes, if any (apply it with eventual's Queue.Apply);
// with Options.Large the large values are uploaded now (1 round trip per
// value, in parallel) and NotAfter bounds the transaction's sending. The
// change explains a copy that finds its unique value taken as
// ErrDuplicate. Nothing is written to the table until the change is
// applied; a change never applied leaves its large values to the Large
// Store's Sweep.
func (s *Store[T]) InsertOps(ctx context.Context, v T) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opInsertOps, s.tbl.Name(), partitionOf(&v))
	defer func() { sp.End(err) }()
	b, err := s.insert(ctx, v)
	if err != nil {
		return table.Change{}, err
	}
	return s.change(b), nil
}

// Get reads the entity with PartitionKey pk and RowKey (id) rk: 1 point
// query of its primary row, + 1 read per large value (Options.Large), in
// parallel. [table.ErrNotFound] when it does not exist. A large value's
// blob gone because the entity changed after the read makes Get read the
// entity again (largeentity's reread, bounded); a blob missing while the
// entity, read again unchanged, still points at it is
// [largeentity.ErrCorrupt], as is a blob whose size or SHA-256 is not its
// pointer's.
func (s *Store[T]) Get(ctx context.Context, pk, rk string) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.checkKeys(pk, rk); err != nil {
		return Entity[T]{}, err
	}
	return s.get(ctx, pk, rk, nil)
}

// get reads an entity with its large values (the properties sel, when
// not nil), again when a blob is gone because the entity changed: with
// largeentity's reread loop (internal/reread), so a blob missing while the
// entity, unchanged, still points at it is largeentity.ErrCorrupt.
func (s *Store[T]) get(ctx context.Context, pk, id string, sel []string) (Entity[T], error) {
	var gopts *table.GetOptions
	if sel != nil {
		gopts = &table.GetOptions{Select: sel}
	}
	var e Entity[T]
	err := largerows.Reread("get", pk, id, func() (azcore.ETag, error) {
		d, err := s.tbl.Get(ctx, pk, s.primaryKey(id), gopts)
		if err != nil {
			return "", err
		}
		var blobs largerows.Blobs
		e, blobs, err = s.decode(ctx, d.Value)
		if err != nil || blobs == nil {
			return d.ETag, err
		}
		if err := s.large.Fetch(ctx, &e.Value, blobs); err != nil {
			return d.ETag, fmt.Errorf("secondaryindex: (%q, %q): %w", pk, id, err)
		}
		return d.ETag, nil
	})
	if err != nil {
		return Entity[T]{}, err
	}
	return e, nil
}

// read reads the entity without its large values, and returns the blobs
// that hold them: for writes and checks, which never need the values.
func (s *Store[T]) read(ctx context.Context, pk, id string) (Entity[T], largerows.Blobs, error) {
	d, err := s.tbl.Get(ctx, pk, s.primaryKey(id), nil)
	if err != nil {
		return Entity[T]{}, nil, err
	}
	return s.decode(ctx, d.Value)
}

// checkKeys checks the keys of an entity addressed by key: its
// PartitionKey and its primary row's RowKey.
func (s *Store[T]) checkKeys(pk, rk string) error {
	if err := fieldmodel.CheckKeys(pk, s.primaryKey(rk)); err != nil {
		return fmt.Errorf("secondaryindex: id %.40q: %w", rk, invalid.Mark(ErrInvalid, err))
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
// moves). With Options.Large, v's large values are written whole: one
// unchanged since the version read keeps its blob, a changed one is
// uploaded first (+1 round trip per value, in parallel), an empty one is
// removed. With azcore.ETagAny, a writer that changes the entity in
// between sends Update back to the read (through Options.Retry), so the
// copies deleted are always those of the version replaced. An empty etag
// is [table.ErrNoETag] (and ErrInvalid). v's keys name the entity; use
// Modify to change some fields of the stored version.
func (s *Store[T]) Update(ctx context.Context, v T, etag azcore.ETag) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdate, s.tbl.Name(), partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	e, err := s.updateKeys(v, etag)
	if err != nil {
		return table.Result{}, err
	}
	_, res, err = s.write(ctx, e.pk, e.id, etag, false, func(*T) (*T, error) { return &v, nil })
	return res, err
}

// updateKeys checks an Update's arguments and returns v's encoding.
func (s *Store[T]) updateKeys(v T, etag azcore.ETag) (entry, error) {
	if etag == "" {
		return entry{}, fmt.Errorf("%w: update: %w", ErrInvalid, table.ErrNoETag)
	}
	return s.encode(v)
}

// UpdateOps is Update as a [table.Change] (see InsertOps): it reads the
// primary (1 round trip; [table.ErrNotFound], or
// [table.ErrPreconditionFailed] when its ETag is not etag) and returns the
// primary's replacement conditioned on the ETag read, with its copies'
// ops, intent and large values as Update writes them. Applied later, a
// write in between fails the transaction with
// [table.ErrPreconditionFailed]: make the change again. A copy of the
// version read found missing fails it with ErrDrift.
func (s *Store[T]) UpdateOps(ctx context.Context, v T, etag azcore.ETag) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdateOps, s.tbl.Name(), partitionOf(&v))
	defer func() { sp.End(err) }()
	e, err := s.updateKeys(v, etag)
	if err != nil {
		return table.Change{}, err
	}
	b, _, err := s.build(ctx, e.pk, e.id, etag, false, func(*T) (*T, error) { return &v, nil })
	if err != nil {
		return table.Change{}, err
	}
	return s.change(b), nil
}

// Modify reads the entity, applies fn and writes it back as Update does,
// again from the read when another writer changed it in between (through
// Options.Retry): 2 round trips (4 with OtherPartition indexes), +2 per
// conflict. fn may run several times; an error from it stops Modify and is
// returned as is. fn may not change the entity's keys. With
// Options.Large, the large values are not read: fn sees them empty, and
// one it leaves empty keeps its blob (set one to replace it, +1 round trip
// to upload it; use Update to remove one). The Entity returned holds the
// value written (its large values only as fn set them) and its new ETag.
func (s *Store[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opModify, s.tbl.Name(), pk)
	var res table.Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := s.checkKeys(pk, rk); err != nil {
		return Entity[T]{}, err
	}
	e, res, err := s.write(ctx, pk, rk, azcore.ETagAny, true, func(v *T) (*T, error) {
		if err := fn(v); err != nil {
			return nil, retrycore.Stop(err)
		}
		return v, nil
	})
	return e, err
}

// ModifyOps is Modify as a [table.Change] (see InsertOps and UpdateOps):
// it reads the entity (1 round trip), calls fn once, and returns the
// write conditioned on the ETag read; large values as for Modify. A write
// in between fails the transaction with [table.ErrPreconditionFailed]:
// make the change again.
func (s *Store[T]) ModifyOps(ctx context.Context, pk, rk string, fn func(v *T) error) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opModifyOps, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.checkKeys(pk, rk); err != nil {
		return table.Change{}, err
	}
	b, _, err := s.build(ctx, pk, rk, azcore.ETagAny, true, func(v *T) (*T, error) { return v, fn(v) })
	if err != nil {
		return table.Change{}, err
	}
	return s.change(b), nil
}

// Delete removes the entity (pk, rk) and its copies, if its ETag is etag
// (any version with azcore.ETagAny). It reads the primary first, to learn
// its copies: [table.ErrNotFound] when it does not exist,
// [table.ErrPreconditionFailed] when its ETag is not etag. Then one
// transaction deletes the primary If-Match the ETag read and its
// SamePartition copies: 2 round trips (4 with OtherPartition indexes,
// whose copies an intent removes). The blobs of its large values
// (Options.Large) are left to the Large Store's Sweep. With
// azcore.ETagAny, it reads again when another writer changed the entity
// in between. An empty etag is [table.ErrNoETag] (and ErrInvalid). A lost
// response that cannot be settled is [table.ErrOutcomeUnknown].
func (s *Store[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) (err error) {
	ctx, sp := s.obs.Start(ctx, opDelete, s.tbl.Name(), pk)
	var res table.Result
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := s.deleteKeys(pk, rk, etag); err != nil {
		return err
	}
	_, res, err = s.write(ctx, pk, rk, etag, false, nil)
	return err
}

func (s *Store[T]) deleteKeys(pk, rk string, etag azcore.ETag) error {
	if etag == "" {
		return fmt.Errorf("%w: delete: %w", ErrInvalid, table.ErrNoETag)
	}
	return s.checkKeys(pk, rk)
}

// DeleteOps is Delete as a [table.Change] (see InsertOps and UpdateOps):
// it reads the primary (1 round trip) and returns its delete conditioned
// on the ETag read, with its copies' deletes and intent.
func (s *Store[T]) DeleteOps(ctx context.Context, pk, rk string, etag azcore.ETag) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opDeleteOps, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := s.deleteKeys(pk, rk, etag); err != nil {
		return table.Change{}, err
	}
	b, _, err := s.build(ctx, pk, rk, etag, false, nil)
	if err != nil {
		return table.Change{}, err
	}
	return s.change(b), nil
}

// write is the read-modify-write of Update, Modify and Delete: build,
// then submit; with azcore.ETagAny a 412 (another writer in between)
// starts again from the read, through Options.Retry. It returns the
// entity written and the write's result.
func (s *Store[T]) write(ctx context.Context, pk, id string, etag azcore.ETag, keep bool, next func(*T) (*T, error)) (Entity[T], table.Result, error) {
	p := s.retry
	p.Retryable = retry.RetryOn412
	if etag != azcore.ETagAny {
		p.Retryable = func(error) bool { return false } // the caller's ETag: a 412 is final
	}
	var out Entity[T]
	var res table.Result
	err := p.Do(ctx, func(ctx context.Context) error {
		b, v, err := s.build(ctx, pk, id, etag, keep, next)
		if err != nil {
			return err
		}
		r, err := s.submit(ctx, b)
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

// build reads the entity (pk, id) without its large values, fails with
// table.ErrPreconditionFailed when its ETag is not etag (unless
// azcore.ETagAny), and makes the batch that writes next(the value read),
// conditioned on the ETag read, with the copies; next nil deletes the
// entity. With keep, large values left empty keep their blobs. It returns
// the batch and the value it writes. Errors that retrying cannot cure are
// retrycore.Stop's.
func (s *Store[T]) build(ctx context.Context, pk, id string, etag azcore.ETag, keep bool, next func(*T) (*T, error)) (batch, *T, error) {
	cur, blobs, err := s.read(ctx, pk, id)
	if err != nil {
		return batch{}, nil, err
	}
	if etag != azcore.ETagAny && cur.ETag != etag {
		return batch{}, nil, fmt.Errorf("secondaryindex: (%q, %q): %w (its ETag is %s, not %s)", pk, id, table.ErrPreconditionFailed, cur.ETag, etag)
	}
	pe, err := s.encode(cur.Value)
	if err != nil {
		return batch{}, nil, err
	}
	if next == nil {
		b := s.plan(s.tbl.DeleteOp(pk, s.primaryKey(id), cur.ETag), &pe, nil, &cur.Value, nil)
		b.pk, b.id = pk, id
		return b, nil, nil
	}
	prev := cur.Value
	v, err := next(&cur.Value)
	if err != nil {
		return batch{}, nil, err
	}
	ne, err := s.encode(*v)
	if err == nil {
		err = s.seal(ctx, &ne)
	}
	if err != nil {
		return batch{}, nil, retrycore.Stop(err)
	}
	if ne.pk != pk || ne.id != id {
		return batch{}, nil, retrycore.Stop(fmt.Errorf("%w: the keys of (%q, %q) cannot change (to %q, %q): insert the new entity and delete the old", ErrInvalid, pk, id, ne.pk, ne.id))
	}
	b := s.plan(s.tbl.UpdateOp(ne.primary, cur.ETag, table.Replace), &pe, &ne, &prev, v)
	b.pk, b.id = pk, id
	if err := s.check(b); err != nil {
		return batch{}, nil, retrycore.Stop(err)
	}
	if err := s.prepare(ctx, &b, *v, blobs, keep, func(d table.Dynamic) table.Op { return s.tbl.UpdateOp(d, cur.ETag, table.Replace) }); err != nil {
		return batch{}, nil, retrycore.Stop(err)
	}
	return b, v, nil
}

// valueOf is ix's value of v, for an error message.
func valueOf[T any](ix *Index[T], v *T) []string {
	parts, _ := ix.keyOf(v)
	return parts
}
