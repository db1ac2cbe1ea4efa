package largeentity

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/patterns/table"
)

// ErrChanged: a blob an entity pointed at when it was read is gone,
// because the entity changed since (a Delete or Sweep removes only blobs
// that no current version points at): read the entity again. Get, Range
// and RangePage read again themselves; Fetch returns it.
var ErrChanged = errors.New("largeentity: a blob the entity pointed at is gone: the entity changed since it was read")

// InsertOps is Insert as a [table.Change], to join a composed write (see
// "Composing patterns" in package table): the offloaded values are
// uploaded now, each to a new blob (1 round trip per value, in
// parallel), and the change holds the entity's insert, pointing at them,
// with a NotAfter half of Grace after the uploads began. Nothing points
// at the blobs until the transaction applies: if it does not, they are
// orphans that Sweep deletes (the entity never points at a missing blob).
func (s *Store[T]) InsertOps(ctx context.Context, v T) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opInsertOps, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.End(err) }()
	pk, rk, err := s.keysOf("insert", &v)
	if err != nil {
		return table.Change{}, err
	}
	p, err := s.Prepare(ctx, v, pk, rk, nil)
	if err != nil {
		return table.Change{}, err
	}
	return table.Change{By: s.by(), Ops: []table.Op{s.tbl.InsertOp(p.Row)}, NotAfter: p.NotAfter}, nil
}

// UpdateOps is Update as a [table.Change]: the offloaded values are
// uploaded now, and the change holds the entity's replacement if its
// ETag is etag (azcore.ETagAny: any version; empty: [table.ErrNoETag]),
// with a NotAfter as InsertOps'. The replaced version's blobs, and the
// new ones if the transaction does not apply, are left to Sweep.
func (s *Store[T]) UpdateOps(ctx context.Context, v T, etag azcore.ETag) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdateOps, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.End(err) }()
	if etag == "" {
		return table.Change{}, fmt.Errorf("largeentity: update: %w: %w", ErrInvalid, table.ErrNoETag)
	}
	pk, rk, err := s.keysOf("update", &v)
	if err != nil {
		return table.Change{}, err
	}
	p, err := s.Prepare(ctx, v, pk, rk, nil)
	if err != nil {
		return table.Change{}, err
	}
	return table.Change{By: s.by(), Ops: []table.Op{s.tbl.UpdateOp(p.Row, etag, table.Replace)}, NotAfter: p.NotAfter}, nil
}

// DeleteOps is Delete as a [table.Change]: the entity's delete if its
// ETag is etag (azcore.ETagAny: any version). Nothing is sent (ctx is for
// the shape every ...Ops shares), so the blobs it points at are left to
// Sweep. Invalid keys or an empty etag ([table.ErrNoETag]) are ErrInvalid.
func (s *Store[T]) DeleteOps(ctx context.Context, pk, rk string, etag azcore.ETag) (table.Change, error) {
	if err := checkKeys("delete", pk, rk); err != nil {
		return table.Change{}, err
	}
	op := s.tbl.DeleteOp(pk, rk, etag)
	if err := op.Err(); err != nil {
		return table.Change{}, fmt.Errorf("largeentity: delete: %w", invalid.Mark(ErrInvalid, err))
	}
	return table.Change{By: s.by(), Ops: []table.Op{op}}, nil
}

func (s *Store[T]) by() string { return fmt.Sprintf("largeentity %q", s.prefix) }

// The methods below let another pattern keep large values in the rows it
// writes (patterns/secondaryindex's primary rows): it writes the rows, in
// its own transactions and under its own keys, and this Store offloads,
// reads and sweeps their values. Such rows must be in the Store's table
// (Sweep reads them there), written only through Prepare.

// Client returns the client of the Store's table.
func (s *Store[T]) Client() *aztables.Client { return s.tbl.Client() }

// Offloads reports whether the Store may offload property name (a field
// it chooses, by tag or Options.Fields): another pattern must then keep
// it out of every row but the entity's own (no index copy holds it).
func (s *Store[T]) Offloads(name string) bool {
	for _, f := range s.chosen {
		if f.name == name {
			return true
		}
	}
	return false
}

// Without returns v with every field the Store may offload left zero:
// the part of v that another pattern may copy into other rows, and that
// encodes as one entity whatever its large values' sizes.
func (s *Store[T]) Without(v T) T {
	rv := reflect.ValueOf(&v).Elem()
	for _, f := range s.chosen {
		fv := rv.FieldByIndex(f.index)
		fv.Set(reflect.Zero(fv.Type()))
	}
	return v
}

// Prepared is a value made ready by Prepare for a write that another
// pattern sends.
type Prepared struct {
	// Row is the entity to write, whole (table.Replace or an insert): v's
	// properties under the keys given, a pointer property in place of
	// each offloaded value.
	Row table.Dynamic
	// Blobs are the offloaded values Row points at, by property name.
	Blobs []Blob
	// NotAfter is the latest time Row's write may be sent: half of Grace
	// after the uploads began, since Sweep may delete an unreferenced blob
	// older than Grace. Give it to the write's table.Change.
	NotAfter time.Time

	uploaded []*offload
}

// PrepareOptions configures Prepare. A nil *PrepareOptions means an
// insert's: no current blobs.
type PrepareOptions struct {
	// Current are the blobs of the stored version that the write is
	// conditioned on by its ETag (from Pointers): a value whose content is
	// unchanged keeps its blob, without an upload (safe because the write
	// applies only over a version that points at it).
	Current []Blob
	// KeepEmpty keeps the Current blob of each field that v leaves empty,
	// for a write whose value was read without its large values (such as
	// patterns/secondaryindex's Modify); otherwise an empty field has no
	// value, and its blob is left to Sweep.
	KeepEmpty bool
}

// Prepare readies v for a write that another pattern sends, in its own
// transaction, of an entity with keys (pk, rk) in the Store's table: it
// chooses the values to offload as Insert does, uploads each to a new
// blob (created only if absent, Concurrency at a time: 1 round trip per
// value, in parallel), and returns the row to write, pointing at them.
// Send the write before Prepared.NotAfter, conditioned on the version
// whose blobs are opts.Current; if it does not apply, Discard the blobs
// (or leave them to Sweep).
func (s *Store[T]) Prepare(ctx context.Context, v T, pk, rk string, opts *PrepareOptions) (_ Prepared, err error) {
	ctx, sp := s.obs.Start(ctx, opPrepare, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := checkKeys("prepare", pk, rk); err != nil {
		return Prepared{}, err
	}
	var o PrepareOptions
	if opts != nil {
		o = *opts
	}
	cur := make(map[string]Blob, len(o.Current))
	for _, b := range o.Current {
		cur[b.Property] = b
	}
	var keep map[string]Blob
	if o.KeepEmpty {
		keep = cur
	}
	p, err := s.planAt("prepare", v, pk, rk, keep)
	if err != nil {
		return Prepared{}, err
	}
	start := s.now()
	up, err := s.uploads(ctx, "prepare", &p, cur)
	if err != nil {
		return Prepared{}, err
	}
	return Prepared{Row: p.d, Blobs: p.blobs(), NotAfter: start.Add(s.grace / 2), uploaded: up}, nil
}

// Discard deletes the blobs p uploaded, for a write of p.Row that
// certainly did not apply (best effort: Sweep deletes what it leaves).
func (s *Store[T]) Discard(ctx context.Context, p Prepared) { s.deleteBlobs(ctx, p.uploaded) }

// Pointers removes from row, an entity another pattern read from the
// Store's table, the pointer properties of the values T holds, and
// returns the blobs they name (by property name), without reading them.
// A pointer this Store could not have written for row's keys is an error
// (ErrForeignBlob, ErrCorrupt), as for Get.
func (s *Store[T]) Pointers(row *table.Dynamic) ([]Blob, error) {
	return s.pointers(*row)
}

// Fetch reads the values of blobs (from Pointers) into v's fields, in
// parallel (Concurrency at a time), each checked against its pointer's
// size and SHA-256 (ErrCorrupt otherwise). A blob gone because the entity
// changed since it was read is ErrChanged: read the entity again.
func (s *Store[T]) Fetch(ctx context.Context, v *T, blobs []Blob) (err error) {
	ctx, sp := s.obs.Start(ctx, opFetch, s.tbl.Name(), "")
	defer func() { sp.End(err) }()
	return s.fetchAll(ctx, v, blobs)
}

// fetchAll is Fetch without its span (Get's and Range's reads are theirs).
func (s *Store[T]) fetchAll(ctx context.Context, v *T, blobs []Blob) error {
	rv := reflect.ValueOf(v).Elem()
	i := 0
	for b, err := range prefetch.Map(ctx, prefetch.Slice(blobs), s.conc, s.fetch) {
		if err != nil {
			return err
		}
		ref := blobs[i]
		i++
		f := s.readable[ref.Property]
		if f == nil {
			return fmt.Errorf("%w: blob %s of property %s, which %v has no field for", ErrCorrupt, ref.Name, ref.Property, rv.Type())
		}
		if err := f.set(rv, b); err != nil {
			return fmt.Errorf("%w: blob %s of property %s: %v", ErrCorrupt, ref.Name, ref.Property, err)
		}
	}
	return nil
}
