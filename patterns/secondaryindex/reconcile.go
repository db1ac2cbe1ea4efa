package secondaryindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// Handler returns the handler of the Store's intents, which keeps its
// OtherPartition indexes: register it with the Worker of Options.Queue
// (eventual.NewWorker(q, []eventual.Handler{store.Handler()}, opts)). Nil
// when the Store has no OtherPartition index.
func (s *Store[T]) Handler() eventual.Handler {
	if s.kind.Name() == "" {
		return eventual.Handler{}
	}
	return s.kind.Handle(s.reconcile)
}

// maxReconcile bounds the rounds of one delivery when the primary keeps
// changing under it (each change brings its own intent anyway).
const maxReconcile = 4

// reconcile makes the OtherPartition copies of one primary match it (design
// rule 3): read the primary, write the copies it calls for, delete the
// copies its previous versions had that it no longer calls for (also when a
// write failed: see below), then read the primary again: if it changed meanwhile, a copy just written may be
// stale, so go round again treating the copies written as old ones. Every
// step is idempotent, so duplicate and reordered intents converge.
func (s *Store[T]) reconcile(ctx context.Context, in eventual.Intent[intent]) error {
	p := in.Payload
	old := p.Old
	for range maxReconcile {
		if err := s.step("read"); err != nil {
			return err
		}
		wanted, etag, err := s.wanted(ctx, p.PK, p.ID)
		if err != nil {
			return err
		}
		// A unique value still held by another entity's stale copy fails
		// its put; the deletes below still run, since that entity's intent
		// may be waiting for one of them (two entities swapping values).
		var putErr error
		for name, w := range wanted {
			if err := s.step("put"); err != nil {
				return err
			}
			if err := s.putCopy(ctx, s.byName[name], w, p.PK, p.ID); err != nil && putErr == nil {
				putErr = err
			}
		}
		for _, ref := range old {
			ix := s.byName[ref.Index]
			if ix == nil || ix.Where != OtherPartition {
				continue // an index no longer declared: Rebuild removes it
			}
			if w, ok := wanted[ref.Index]; ok && w.pk == ref.PK && w.rk == ref.RK {
				continue
			}
			if err := s.step("delete"); err != nil {
				return err
			}
			if err := s.deleteCopy(ctx, ix, ref, p.PK, p.ID); err != nil {
				return err
			}
		}
		if putErr != nil {
			return putErr
		}
		if err := s.step("reread"); err != nil {
			return err
		}
		_, after, err := s.wanted(ctx, p.PK, p.ID)
		if err != nil {
			return err
		}
		if after == etag {
			return nil
		}
		old = old[:0:0]
		for name, w := range wanted {
			old = append(old, copyRef{name, w.pk, w.rk})
		}
		old = append(old, p.Old...)
	}
	return fmt.Errorf("secondaryindex: primary %q/%q changed during %d reconciliations; retrying", p.PK, p.ID, maxReconcile)
}

func (s *Store[T]) step(name string) error {
	if s.hook != nil {
		return s.hook(name)
	}
	return nil
}

// wanted reads the primary and returns the OtherPartition copies it calls
// for, and its ETag ("" when it does not exist).
func (s *Store[T]) wanted(ctx context.Context, pk, id string) (map[string]row, azcore.ETag, error) {
	cur, _, err := s.read(ctx, pk, id)
	if errors.Is(err, table.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	e, err := s.encode(cur.Value)
	if err != nil {
		return nil, "", err
	}
	out := map[string]row{}
	for name, r := range e.copies {
		if s.byName[name].Where == OtherPartition {
			out[name] = r
		}
	}
	return out, cur.ETag, nil
}

// putCopy writes copy w of primary pk/id. A unique index's copy is
// inserted; if the value's row exists it is replaced only when it is this
// primary's, or a row the index could not have written (an ErrDuplicate
// otherwise: another entity has the value).
func (s *Store[T]) putCopy(ctx context.Context, ix *Index[T], w row, pk, id string) error {
	t := s.copyTable(ix)
	d := table.Dynamic{PartitionKey: w.pk, RowKey: w.rk, Properties: w.props}
	if !ix.Unique {
		_, err := t.Upsert(ctx, d, table.Replace)
		return err
	}
	_, err := t.Insert(ctx, d)
	if !errors.Is(err, table.ErrAlreadyExists) {
		return err
	}
	cur, err := t.Get(ctx, w.pk, w.rk, nil)
	if err != nil {
		return err
	}
	if rpk, rid, err := s.refOf(ix, cur.Value); err == nil && (rpk != pk || rid != id) {
		return fmt.Errorf("%w: index %q value row %q belongs to %q", ErrDuplicate, ix.Name, w.rk, keys.Join(rpk, rid))
	}
	_, err = t.Update(ctx, d, cur.ETag, table.Replace)
	return err
}

// deleteCopy deletes copy ref if it is still primary pk/id's (a unique
// value may have passed to another entity since). A ref the index could
// not have written for pk/id (a forged intent) is left alone, unread.
func (s *Store[T]) deleteCopy(ctx context.Context, ix *Index[T], ref copyRef, pk, id string) error {
	if !s.owns(ix, ref.PK, ref.RK, pk, id) {
		return nil
	}
	t := s.copyTable(ix)
	cur, err := t.Get(ctx, ref.PK, ref.RK, nil)
	if errors.Is(err, table.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if rpk, rid, err := s.refOf(ix, cur.Value); err != nil || rpk != pk || rid != id {
		return nil
	}
	err = t.Delete(ctx, ref.PK, ref.RK, cur.ETag)
	if errors.Is(err, table.ErrNotFound) {
		return nil
	}
	return err
}
