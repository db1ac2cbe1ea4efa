package largeentity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/fieldmodel"
	"github.com/tablekit/tablekit/internal/retrycore"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// offload is one value a write puts in a blob.
type offload struct {
	f       *field
	content []byte
	blob    Blob
}

// plan is what a write stores: the entity as a property bag, with a
// pointer property in place of each offloaded value.
type plan struct {
	d        table.Dynamic
	offloads []*offload
	kept     []Blob // blobs of empty fields kept as they are (Prepare's keepEmpty, internal/largerows)
}

// zeroHash stands for a SHA-256 not computed yet; it has the length of
// every hex SHA-256, so the entity's size is known before hashing.
var zeroHash = strings.Repeat("0", 2*sha256.Size)

// plan decides which of v's chosen values go to blobs (every value of an
// "always" field, those over the threshold, then the largest others while
// the entity would exceed the service's limits) and checks the keys and
// the entity as a write would, all before the network.
func (s *Store[T]) plan(op string, v T) (plan, error) {
	pk, rk, err := s.keysOf(op, &v)
	if err != nil {
		return plan{}, err
	}
	return s.planAt(op, v, pk, rk, nil)
}

// planAt is plan under keys (pk, rk), checked by the caller. A field of
// keep that is empty in v keeps that blob: its pointer, not its value.
func (s *Store[T]) planAt(op string, v T, pk, rk string, keep map[string]Blob) (plan, error) {
	refuse := func(err error) error {
		return fmt.Errorf("largeentity: %s (%q, %q): %w: %w", op, pk, rk, ErrInvalid, err)
	}
	rv := reflect.ValueOf(&v).Elem() // v is the caller's copy: fields can be cleared
	type candidate struct {
		o      *offload
		inline int
	}
	var p plan
	var inline []candidate
	for _, f := range s.chosen {
		b, size, ok, err := f.content(rv)
		if err != nil {
			return plan{}, refuse(fmt.Errorf("property %s: %w: %v", f.name, table.ErrInvalidEntity, err))
		}
		if !ok {
			if k, kept := keep[f.name]; kept {
				p.kept = append(p.kept, k)
			}
			continue
		}
		if len(b) > MaxValueSize {
			return plan{}, refuse(fmt.Errorf("property %s: %w: %d bytes, more than MaxValueSize (%d)", f.name, table.ErrTooLarge, len(b), MaxValueSize))
		}
		o := &offload{f: f, content: b}
		if f.always || size > s.threshold {
			p.offloads = append(p.offloads, o)
		} else {
			inline = append(inline, candidate{o, size})
		}
	}
	slices.SortStableFunc(inline, func(a, b candidate) int { return b.inline - a.inline })
	for checked := false; ; checked = true {
		for _, o := range p.offloads {
			fv := rv.FieldByIndex(o.f.index)
			fv.Set(reflect.Zero(fv.Type()))
			if o.blob.Name == "" {
				o.blob = Blob{Property: o.f.name, Name: s.blobName(pk, rk, o.f.name), Size: int64(len(o.content)), SHA256: zeroHash}
			}
		}
		d, err := table.ToDynamic(v)
		if err != nil {
			return plan{}, refuse(err)
		}
		if s.extra && !checked {
			// T's extra map may hold any name; its fields' names were
			// checked by New. The table is a view that writes reserved
			// names: only this Store's pointers may have one.
			for name := range d.Properties {
				if err := fieldmodel.ValidName(name); err != nil {
					return plan{}, refuse(err)
				}
			}
		}
		d.PartitionKey, d.RowKey = pk, rk
		for _, o := range p.offloads {
			delete(d.Properties, o.f.name)
			d.Properties[pointerProperty(o.f.name)] = pointerValue(o.blob)
		}
		for _, b := range p.kept {
			delete(d.Properties, b.Property)
			d.Properties[pointerProperty(b.Property)] = pointerValue(b)
		}
		err = s.tbl.InsertOp(d).Err()
		if err == nil {
			p.d = d
			return p, nil
		}
		if !errors.Is(err, table.ErrTooLarge) || len(inline) == 0 {
			return plan{}, refuse(err)
		}
		p.offloads = append(p.offloads, inline[0].o)
		inline = inline[1:]
	}
}

func pointerValue(b Blob) string {
	j, _ := json.Marshal(b) // a struct of strings and an int: cannot fail
	return string(j)
}

// setPointers writes the final pointers (with their hashes) into p's
// entity.
func (p *plan) setPointers() {
	for _, o := range p.offloads {
		p.d.Properties[pointerProperty(o.f.name)] = pointerValue(o.blob)
	}
}

func (p *plan) blobs() []Blob {
	out := make([]Blob, len(p.offloads), len(p.offloads)+len(p.kept))
	for i, o := range p.offloads {
		out[i] = o.blob
	}
	out = append(out, p.kept...)
	slices.SortFunc(out, func(a, b Blob) int { return strings.Compare(a.Property, b.Property) })
	return out
}

// step runs the test hook at a step boundary; an error is a crash there.
func (s *Store[T]) step(name string) error {
	if s.hook != nil {
		if err := s.hook(name); err != nil {
			return fmt.Errorf("largeentity: stopped before %s: %w", name, err)
		}
	}
	return nil
}

// write carries out plan p: the blobs first (each under a fresh name,
// created only if absent), then the entity, inserted when etag is empty
// and replaced on etag's condition otherwise. cur are the blobs the stored
// version etag points at, when known (Modify): a value whose content is
// unchanged keeps its blob. When the entity write certainly did not apply,
// the blobs uploaded for it are deleted; otherwise nothing references them
// and Sweep deletes them.
func (s *Store[T]) write(ctx context.Context, op string, p plan, etag azcore.ETag, cur map[string]Blob) (Result, error) {
	pk, rk := p.d.PartitionKey, p.d.RowKey
	start := s.now()
	up, err := s.uploads(ctx, op, &p, cur)
	if err != nil {
		return Result{}, err
	}
	if err := s.step("entity"); err != nil {
		return Result{}, err
	}
	left := s.grace/2 - s.now().Sub(start)
	if left <= 0 {
		s.deleteBlobs(ctx, up)
		return Result{}, fmt.Errorf("largeentity: %s (%q, %q): %w", op, pk, rk, ErrGraceExceeded)
	}
	wctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	var res table.Result
	if etag == "" {
		res, err = s.tbl.Insert(wctx, p.d)
	} else {
		res, err = s.tbl.Update(wctx, p.d, etag, table.Replace)
	}
	if err != nil {
		if !errors.Is(err, table.ErrOutcomeUnknown) {
			s.deleteBlobs(ctx, up)
		}
		return Result{}, fmt.Errorf("largeentity: %s (%q, %q): %w", op, pk, rk, err)
	}
	return Result{Result: res, Blobs: p.blobs()}, nil
}

// uploads writes the blobs of plan p (each under a fresh name, created
// only if absent, Concurrency at a time) and sets p's pointers. cur are
// the blobs the stored version the write is conditioned on points at,
// when known: a value whose content is unchanged keeps its blob, without
// an upload. It returns the offloads it uploaded.
func (s *Store[T]) uploads(ctx context.Context, op string, p *plan, cur map[string]Blob) ([]*offload, error) {
	pk, rk := p.d.PartitionKey, p.d.RowKey
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("largeentity: %s (%q, %q): %w", op, pk, rk, err)
	}
	var up []*offload
	for _, o := range p.offloads {
		if c, ok := cur[o.f.name]; ok && c.Size == o.blob.Size {
			h := sha256.Sum256(o.content)
			if hex.EncodeToString(h[:]) == c.SHA256 {
				o.blob = c // the stored version's blob of this content: kept
				continue
			}
		}
		up = append(up, o)
	}
	if err := s.step("upload"); err != nil {
		return nil, err
	}
	upload := func(ctx context.Context, o *offload) (struct{}, error) { return struct{}{}, s.upload(ctx, pk, rk, o) }
	for _, err := range prefetch.Map(ctx, prefetch.Slice(up), s.conc, upload) {
		if err != nil {
			return nil, fmt.Errorf("largeentity: %s (%q, %q): %w", op, pk, rk, err)
		}
	}
	p.setPointers()
	return up, nil
}

// upload writes one value to its blob, computing its SHA-256 meanwhile.
// The blob is created only if absent (If-None-Match: *): its name is
// unique to this write, so a 409 BlobAlreadyExists can only answer a
// resend whose earlier attempt created it (a lost response), and means
// the upload applied.
func (s *Store[T]) upload(ctx context.Context, pk, rk string, o *offload) error {
	sum := make(chan string, 1)
	go func() {
		h := sha256.Sum256(o.content)
		sum <- hex.EncodeToString(h[:])
	}()
	_, err := s.blobs.NewBlockBlobClient(o.blob.Name).UploadBuffer(ctx, o.content, &blockblob.UploadBufferOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptr(azcore.ETagAny)}},
		Metadata:         metadata(pk, rk, o.f.name),
	})
	o.blob.SHA256 = <-sum
	if err != nil && !bloberror.HasCode(err, bloberror.BlobAlreadyExists) {
		return fmt.Errorf("uploading %s to blob %s: %w", o.f.name, o.blob.Name, redact.Error(err))
	}
	return nil
}

// deleteBlobs deletes blobs that nothing references, best effort: what it
// leaves, Sweep deletes.
func (s *Store[T]) deleteBlobs(ctx context.Context, os []*offload) {
	ctx = context.WithoutCancel(ctx)
	for _, o := range os {
		_, _ = s.blobs.NewBlobClient(o.blob.Name).Delete(ctx, nil)
	}
}

// Insert stores v as a new entity, under the keys of its key fields (or
// Options.Keys): its offloaded values first, each in a new blob (in
// parallel, Concurrency at a time), then the entity pointing at them. 2
// round trips for one offloaded value (1 + one per value; 1 when every
// value is inline). table.ErrAlreadyExists when the entity exists (its
// blobs are then deleted). Lost responses are settled: a blob create
// resent after one answers 409 (applied), the entity insert is verified
// by the table package, so an Insert is never applied twice nor reported
// failed when it was applied.
func (s *Store[T]) Insert(ctx context.Context, v T) (res Result, err error) {
	ctx, sp := s.obs.Start(ctx, opInsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	p, err := s.plan("insert", v)
	if err != nil {
		return Result{}, err
	}
	return s.write(ctx, "insert", p, "", nil)
}

// Update replaces the whole entity with v (stored under v's keys) if its
// ETag still matches etag (table.ErrPreconditionFailed otherwise), or
// whatever version is stored with azcore.ETagAny; an empty etag is
// table.ErrNoETag. It writes v whole (the Store owns the layout of its
// rows: pointers beside properties), so it takes no table.Mode. Every
// offloaded value goes to a new blob first, then the entity is replaced:
// 1 round trip plus one per offloaded value. The blobs of the replaced
// version are left for Sweep (a reader of that version may still be
// fetching them). table.ErrNotFound when the entity does not exist. A
// lost response is settled as for [table.Table.Update].
func (s *Store[T]) Update(ctx context.Context, v T, etag azcore.ETag) (res Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpdate, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	if etag == "" {
		return Result{}, fmt.Errorf("largeentity: update: %w: %w", ErrInvalid, table.ErrNoETag)
	}
	p, err := s.plan("update", v)
	if err != nil {
		return Result{}, err
	}
	return s.write(ctx, "update", p, etag, nil)
}

// Upsert stores v under its keys whether or not the entity exists,
// replacing it whole: it reads the stored version's pointers (a point
// query projected on them), then inserts v when there is none, or
// replaces the version read, conditioned on its ETag, as Update does. A
// value whose content the stored version already has keeps its blob
// (no upload); the others go to new blobs first. When another writer
// comes between the read and the write (the insert finds the entity,
// 409, or the replace finds it changed or gone, 412 or 404), the write
// certainly did not apply: its new blobs are deleted and Upsert starts
// again from the read, per Options.Retry. So it never leaves an orphan of
// its own but on a crash or an unsettled outcome, and never replaces a
// version it did not read, whose blobs it would not know. Round trips: 1
// read + 1 upload per new offloaded value (in parallel) + 1 write (2 when
// every value is inline); the same again per conflict. The blobs of the
// replaced version are left for Sweep. A lost response is settled as
// for Insert and Update.
func (s *Store[T]) Upsert(ctx context.Context, v T) (res Result, err error) {
	ctx, sp := s.obs.Start(ctx, opUpsert, s.tbl.Name(), s.partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	first, err := s.plan("upsert", v) // every check before the network
	if err != nil {
		return Result{}, err
	}
	pk, rk := first.d.PartitionKey, first.d.RowKey
	p := s.retry
	p.Retryable = func(err error) bool {
		return !errors.Is(err, table.ErrOutcomeUnknown) && (errors.Is(err, table.ErrAlreadyExists) ||
			errors.Is(err, table.ErrPreconditionFailed) || errors.Is(err, table.ErrNotFound))
	}
	err = p.Do(ctx, func(ctx context.Context) error {
		got, err := s.tbl.Get(ctx, pk, rk, &table.GetOptions{Select: s.pointerProperties()})
		var etag azcore.ETag
		var cur map[string]Blob
		switch {
		case errors.Is(err, table.ErrNotFound) && !errors.Is(err, table.ErrOutcomeUnknown):
			// none: an insert
		case err != nil:
			return retrycore.Stop(fmt.Errorf("largeentity: upsert (%q, %q): %w", pk, rk, err))
		default:
			etag = got.Value.ETag
			// Only pointers this Store could have written for (pk, rk)
			// are kept; a foreign one is replaced.
			refs, _ := s.pointers(got.Value)
			cur = make(map[string]Blob, len(refs))
			for _, b := range refs {
				cur[b.Property] = b
			}
		}
		pl, err := s.plan("upsert", v) // afresh: uploads fill in a plan
		if err != nil {
			return retrycore.Stop(err)
		}
		if etag != "" {
			pl.d.Meta = got.Value.Meta // the version read, with its write history: a lost response is settled exactly
		}
		res, err = s.write(ctx, "upsert", pl, etag, cur)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// Modify changes one entity with a read-modify-write: it reads the entity
// and its offloaded values (Get), calls fn with the value, and replaces
// the entity conditioned on the ETag read, again (reading afresh) when
// another writer came first, per Options.Retry; fn must be safe to call
// several times, and must not change the keys (ErrInvalid and
// table.ErrInvalidKey, nothing written). A value whose content fn left
// unchanged keeps its blob (no upload); changed ones go to new blobs.
// Round trips: Get's, then one per changed offloaded value, then 1; the
// same again per conflict. It returns the entity as written, with the
// ETag of the write. An error from fn ends Modify with that error and
// writes nothing. A lost response is settled from the entity's write
// history, so fn's change is never applied twice; when it cannot be
// settled Modify returns table.ErrOutcomeUnknown and does not call fn
// again.
func (s *Store[T]) Modify(ctx context.Context, pk, rk string, fn func(*T) error) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opModify, s.tbl.Name(), pk)
	var verified bool
	defer func() { sp.EndWrite(err, verified) }()
	if err := s.modifiable(pk, rk); err != nil {
		return Entity[T]{}, err
	}
	var out Entity[T]
	p := s.retry
	p.Retryable = func(err error) bool {
		return retry.RetryOn412(err) && !errors.Is(err, ErrCorrupt)
	}
	err = p.Do(ctx, func(ctx context.Context) error {
		e, d, err := s.get(ctx, "modify", pk, rk, nil)
		if err != nil {
			return err
		}
		if err := fn(&e.Value); err != nil {
			return retrycore.Stop(err)
		}
		pl, err := s.plan("modify", e.Value)
		if err != nil {
			return err
		}
		if pl.d.PartitionKey != pk || pl.d.RowKey != rk {
			return fmt.Errorf("largeentity: modify (%q, %q): %w: %w: fn changed the keys to (%q, %q)", pk, rk, ErrInvalid, table.ErrInvalidKey, pl.d.PartitionKey, pl.d.RowKey)
		}
		pl.d.Meta = d.Meta // the version read, with its write history: a lost response is settled exactly
		cur := map[string]Blob{}
		for _, b := range e.Blobs {
			cur[b.Property] = b
		}
		res, err := s.write(ctx, "modify", pl, e.ETag, cur)
		if err != nil {
			return err
		}
		verified = res.Verified
		out = Entity[T]{Entity: table.Entity[T]{PartitionKey: pk, RowKey: rk, ETag: res.ETag, Value: e.Value}, Blobs: res.Blobs}
		return nil
	})
	if err != nil {
		return Entity[T]{}, err
	}
	return out, nil
}

// Delete removes the entity if its ETag still matches etag
// (table.ErrPreconditionFailed otherwise), or whatever version is stored
// with azcore.ETagAny (an empty etag is table.ErrNoETag), then the blobs
// that version pointed at. It reads the entity's pointers first (a point
// query projected on them) and deletes conditioned on the version read,
// so it knows exactly which blobs became unreferenced: 2 round trips plus
// one per offloaded value; with azcore.ETagAny, 2 more each time another
// write comes between the read and the delete. table.ErrNotFound when the
// entity does not exist. Only blobs this Store could have written for
// (pk, rk) are deleted: a pointer naming any other blob (ErrForeignBlob
// on a read) is not followed, nor is a malformed one; the entity is
// deleted all the same. A blob delete that fails leaves an orphan for
// Sweep; it does not fail the Delete, which has applied. As with
// table.Delete, a delete whose response was lost leaves nothing to read:
// its error is then table.ErrOutcomeUnknown (which also matches
// table.ErrNotFound), and the blobs are deleted once a read finds the
// entity gone.
func (s *Store[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) (err error) {
	ctx, sp := s.obs.Start(ctx, opDelete, s.tbl.Name(), pk)
	defer func() { sp.EndWrite(err, false) }()
	if err := checkKeys("delete", pk, rk); err != nil {
		return err
	}
	if etag == "" {
		return fmt.Errorf("largeentity: delete (%q, %q): %w: %w", pk, rk, ErrInvalid, table.ErrNoETag)
	}
	p := s.retry
	p.Retryable = func(err error) bool {
		return etag == azcore.ETagAny && errors.Is(err, table.ErrPreconditionFailed) && !errors.Is(err, table.ErrOutcomeUnknown)
	}
	return p.Do(ctx, func(ctx context.Context) error {
		got, err := s.tbl.Get(ctx, pk, rk, &table.GetOptions{Select: s.pointerProperties()})
		d := got.Value
		if err != nil {
			return fmt.Errorf("largeentity: delete (%q, %q): %w", pk, rk, err)
		}
		if etag != azcore.ETagAny && d.ETag != etag {
			return fmt.Errorf("largeentity: delete (%q, %q): the entity changed since it was read: %w", pk, rk, table.ErrPreconditionFailed)
		}
		// A pointer this Store could not have written for (pk, rk), such
		// as one copied from another entity, is not followed: the entity
		// goes, the blob it names stays.
		refs, _ := s.pointers(d)
		err = s.tbl.Delete(ctx, pk, rk, d.ETag)
		if errors.Is(err, table.ErrOutcomeUnknown) {
			// Gone now means gone for good: no later version can point at
			// these blobs (every write that keeps a blob is conditioned on
			// a version that points at it).
			if _, gerr := s.tbl.Get(ctx, pk, rk, &table.GetOptions{Select: []string{"RowKey"}}); !errors.Is(gerr, table.ErrNotFound) || errors.Is(gerr, table.ErrOutcomeUnknown) {
				return fmt.Errorf("largeentity: delete (%q, %q): %w", pk, rk, err)
			}
		} else if err != nil {
			return fmt.Errorf("largeentity: delete (%q, %q): %w", pk, rk, err)
		}
		if serr := s.step("delete blobs"); serr != nil {
			return serr
		}
		os := make([]*offload, len(refs))
		for i, b := range refs {
			os[i] = &offload{blob: b}
		}
		s.deleteBlobs(ctx, os)
		if err != nil {
			return fmt.Errorf("largeentity: delete (%q, %q): %w", pk, rk, err)
		}
		return nil
	})
}

// pointerProperties are the pointer properties of every field a read can
// resolve, for projections.
func (s *Store[T]) pointerProperties() []string {
	out := make([]string, 0, len(s.readable))
	for name := range s.readable {
		out = append(out, pointerProperty(name))
	}
	slices.Sort(out)
	return out
}

func ptr[V any](v V) *V { return &v }

// modifiable checks, before the network, that Modify can write back what
// it reads: valid keys, and a T whose keys this Store knows.
func (s *Store[T]) modifiable(pk, rk string) error {
	if err := checkKeys("modify", pk, rk); err != nil {
		return err
	}
	if s.keys == nil {
		return fmt.Errorf("largeentity: modify: %w", invalid.Mark(ErrInvalid, s.keysErr))
	}
	return nil
}
