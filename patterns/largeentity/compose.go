package largeentity

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/largerows"
	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/patterns/table"
)

// errChanged is internal/largerows.ErrChanged: a blob an entity pointed at
// when it was read is gone, because the entity changed since. Get, Range
// and RangePage read again on it.
var errChanged = largerows.ErrChanged

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
	p, err := rows[T]{s}.Prepare(ctx, v, pk, rk, nil, false)
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
	p, err := rows[T]{s}.Prepare(ctx, v, pk, rk, nil, false)
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

// rows is the Store as internal/largerows gives it to another pattern
// that keeps T's large values in rows of its own making
// (patterns/secondaryindex's primary rows): it writes the rows, in its
// own transactions and under its own keys, and this Store offloads, reads
// and sweeps their values.
type rows[T any] struct{ s *Store[T] }

// rowsOf is registered with internal/largerows.
func rowsOf(store any) any { return store.(interface{ rows() any }).rows() }

func (s *Store[T]) rows() any { return rows[T]{s} }

func (r rows[T]) Client() *aztables.Client { return r.s.tbl.Client() }

func (r rows[T]) Offloads(name string) bool {
	for _, f := range r.s.chosen {
		if f.name == name {
			return true
		}
	}
	return false
}

func (r rows[T]) Without(v T) T {
	rv := reflect.ValueOf(&v).Elem()
	for _, f := range r.s.chosen {
		fv := rv.FieldByIndex(f.index)
		fv.Set(reflect.Zero(fv.Type()))
	}
	return v
}

func (r rows[T]) Prepare(ctx context.Context, v T, pk, rk string, current largerows.Blobs, keepEmpty bool) (_ largerows.Prepared, err error) {
	s := r.s
	ctx, sp := s.obs.Start(ctx, opPrepare, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := checkKeys("prepare", pk, rk); err != nil {
		return largerows.Prepared{}, err
	}
	blobs, _ := current.([]Blob)
	cur := make(map[string]Blob, len(blobs))
	for _, b := range blobs {
		cur[b.Property] = b
	}
	var keep map[string]Blob
	if keepEmpty {
		keep = cur
	}
	p, err := s.planAt("prepare", v, pk, rk, keep)
	if err != nil {
		return largerows.Prepared{}, err
	}
	start := s.now()
	up, err := s.uploads(ctx, "prepare", &p, cur)
	if err != nil {
		return largerows.Prepared{}, err
	}
	return largerows.Prepared{Row: p.d, NotAfter: start.Add(s.grace / 2), Uploaded: up}, nil
}

func (r rows[T]) Discard(ctx context.Context, p largerows.Prepared) {
	up, _ := p.Uploaded.([]*offload)
	r.s.deleteBlobs(ctx, up)
}

func (r rows[T]) Pointers(row *table.Dynamic) (largerows.Blobs, error) {
	blobs, err := r.s.pointers(*row)
	if len(blobs) == 0 {
		return nil, err
	}
	return blobs, err
}

func (r rows[T]) Fetch(ctx context.Context, v *T, blobs largerows.Blobs) (err error) {
	s := r.s
	ctx, sp := s.obs.Start(ctx, opFetch, s.tbl.Name(), "")
	defer func() { sp.End(err) }()
	list, _ := blobs.([]Blob)
	return s.fetchAll(ctx, v, list)
}

// fetchAll reads the values of blobs into v's fields (Get's and Range's
// reads, and those of the rows another pattern keeps through
// internal/largerows).
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

// pointerCodec is largerows.Codec: the pointers of rows of any type by a
// Prefix alone, for patterns/transfer.
type pointerCodec struct{}

func (pointerCodec) Pointers(prefix string, row *table.Dynamic) ([]largerows.Pointer, error) {
	var ps []largerows.Pointer
	var bad string
	var ferr error
	for name, val := range row.Properties {
		prop, ok := strings.CutPrefix(name, reserved.BlobPointerPrefix)
		if !ok {
			continue
		}
		b, err := parsePointer(prefix, row.PartitionKey, row.RowKey, prop, val)
		if err != nil {
			if bad == "" || prop < bad {
				bad, ferr = prop, err
			}
			continue
		}
		ps = append(ps, largerows.Pointer{Property: prop, Name: b.Name, Size: b.Size, SHA256: b.SHA256})
	}
	slices.SortFunc(ps, func(a, b largerows.Pointer) int { return strings.Compare(a.Property, b.Property) })
	return ps, ferr
}

func (pointerCodec) Move(prefix, pk, rk string, p largerows.Pointer) (largerows.Pointer, string, string) {
	p.Name = blobDir(prefix, pk, rk, p.Property) + p.Name[len(p.Name)-idLen:]
	return p, pointerProperty(p.Property), pointerValue(Blob{Name: p.Name, Size: p.Size, SHA256: p.SHA256})
}

func (pointerCodec) Metadata(pk, rk string, p largerows.Pointer) map[string]*string {
	return metadata(pk, rk, p.Property)
}
