package largeentity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit/internal/largerows"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/table"
)

// maxRereads bounds the reads of an entity whose blobs keep disappearing
// because it keeps changing.
const maxRereads = 8

// Get reads the entity with keys (pk, rk) and its offloaded values: a
// point query, then every blob it points at (in parallel, Concurrency at a
// time), so 2 round trips of latency for any number of values (1 + one
// request per value); 1 when every value is inline, or when opts.Select
// leaves out the offloaded properties. A pointer is followed only if this
// Store could have written it for (pk, rk) (ErrForeignBlob otherwise, with
// no blob read; see the package's Trust), and each blob's size and
// SHA-256 are checked against it: a mismatch, or a blob missing while the
// entity still points at it, is ErrCorrupt, never data. A blob
// deleted because the entity changed after the read (a concurrent Delete,
// or Sweep after an Update) makes Get read the entity again, so it returns
// one version, whole, or table.ErrNotFound.
func (s *Store[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (_ Entity[T], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	if err := checkKeys("get", pk, rk); err != nil {
		return Entity[T]{}, err
	}
	var sel []string
	if opts != nil && opts.Select != nil {
		sel = s.projection(opts.Select)
	}
	e, _, err := s.get(ctx, "get", pk, rk, sel)
	return e, err
}

// projection adds to the selected properties the pointer properties of
// those a read can resolve.
func (s *Store[T]) projection(names []string) []string {
	out := slices.Clone(names)
	for _, n := range names {
		if s.readable[n] != nil {
			out = append(out, pointerProperty(n))
		}
	}
	return out
}

// get reads an entity and its blobs, reading again when a blob is gone
// because the entity changed (rereadLoop). It also returns the entity as read.
func (s *Store[T]) get(ctx context.Context, op, pk, rk string, sel []string) (Entity[T], table.Dynamic, error) {
	var gopts *table.GetOptions
	if sel != nil {
		gopts = &table.GetOptions{Select: sel}
	}
	var e Entity[T]
	var d table.Dynamic
	err := rereadLoop(op, pk, rk, func() (azcore.ETag, error) {
		got, err := s.tbl.Get(ctx, pk, rk, gopts)
		d = got.Value
		if err != nil {
			return "", fmt.Errorf("largeentity: %s (%q, %q): %w", op, pk, rk, err)
		}
		e, err = s.resolve(ctx, d)
		return d.ETag, err
	})
	if err != nil {
		return Entity[T]{}, d, err
	}
	return e, d, nil
}

func init() { largerows.Register(rereadLoop, rowsOf, pointerCodec{}) }

// rereadLoop calls read (a read of entity (pk, rk) and its blobs, returning
// the ETag read) until it ends otherwise than with errChanged, at most
// 1 + maxRereads times: a blob an entity pointed at is deleted only once
// no current version points at it, so a blob gone means the entity
// changed, and reading it again finds a new version. The same ETag read
// again (a blob missing while the entity, unchanged, still points at it) is
// ErrCorrupt. It is the one reread loop of the package and of the patterns
// that keep their large values through a Store (internal/largerows), op names
// the operation in its errors.
func rereadLoop(op, pk, rk string, read largerows.ReadFunc) error {
	var last azcore.ETag
	for i := 0; ; i++ {
		etag, err := read()
		switch {
		case !errors.Is(err, errChanged):
			return err
		case i > 0 && etag == last:
			return fmt.Errorf("%w: %v, and the entity still points at it", ErrCorrupt, err)
		case i == maxRereads:
			return fmt.Errorf("largeentity: %s (%q, %q): the entity changed during each of %d reads: %w", op, pk, rk, i+1, err)
		}
		last = etag
	}
}

// pointers removes the pointer properties from d and returns the blobs
// they name, for the properties T has fields for, by property name. A
// pointer this Store could not have written for d's keys and that
// property is left out, and the first of them (by property name) is the
// error: a read fails on it, Delete deletes only the blobs returned.
func (s *Store[T]) pointers(d table.Dynamic) ([]Blob, error) {
	var refs []Blob
	var bad string
	var ferr error
	for name, val := range d.Properties {
		prop, ok := strings.CutPrefix(name, reserved.BlobPointerPrefix)
		if !ok {
			continue
		}
		delete(d.Properties, name)
		if s.readable[prop] == nil {
			continue // T has no field for it: like any property T lacks
		}
		b, err := parsePointer(s.prefix, d.PartitionKey, d.RowKey, prop, val)
		if err != nil {
			if bad == "" || prop < bad {
				bad, ferr = prop, err
			}
			continue
		}
		refs = append(refs, b)
	}
	slices.SortFunc(refs, func(a, b Blob) int { return strings.Compare(a.Property, b.Property) })
	return refs, ferr
}

// parsePointer decodes the value of property prop's pointer in entity
// (pk, rk), if it is one a Store with prefix writes: JSON naming a blob
// under the entity's and property's own directory with a write-unique id
// (never another entity's blob: ErrForeignBlob), a size of 1 to
// MaxValueSize (table.ErrTooLarge) and a hex SHA-256; every error matches
// ErrCorrupt.
func parsePointer(prefix, pk, rk, prop string, val any) (Blob, error) {
	str, _ := val.(string)
	var b Blob
	if err := json.Unmarshal([]byte(str), &b); err != nil || b.Size < 1 || !isHex(b.SHA256, len(zeroHash)) {
		return Blob{}, fmt.Errorf("%w: (%q, %q): property %s holds no valid pointer", ErrCorrupt, pk, rk, pointerProperty(prop))
	}
	b.Property = prop
	if !ownName(prefix, pk, rk, prop, b.Name) {
		return Blob{}, fmt.Errorf("%w: %w: (%q, %q): property %s names blob %q, not one of this entity's %s values (%s<id>)",
			ErrCorrupt, ErrForeignBlob, pk, rk, pointerProperty(prop), b.Name, prop, blobDir(prefix, pk, rk, prop))
	}
	if b.Size > MaxValueSize {
		return Blob{}, fmt.Errorf("%w: %w: (%q, %q): property %s records %d bytes, more than MaxValueSize (%d); not read",
			ErrCorrupt, table.ErrTooLarge, pk, rk, pointerProperty(prop), b.Size, MaxValueSize)
	}
	return b, nil
}

// resolve decodes entity d into a T with its offloaded values read from
// their blobs, Concurrency at a time.
func (s *Store[T]) resolve(ctx context.Context, d table.Dynamic) (Entity[T], error) {
	d.Properties = maps.Clone(d.Properties) // the caller's entity stays as read
	refs, err := s.pointers(d)
	if err != nil {
		return Entity[T]{}, err
	}
	v, err := table.FromDynamic[T](d)
	if err != nil {
		return Entity[T]{}, fmt.Errorf("largeentity: (%q, %q): %w", d.PartitionKey, d.RowKey, err)
	}
	if err := s.fetchAll(ctx, &v, refs); err != nil {
		return Entity[T]{}, fmt.Errorf("(%q, %q): %w", d.PartitionKey, d.RowKey, err)
	}
	return Entity[T]{Entity: table.Entity[T]{PartitionKey: d.PartitionKey, RowKey: d.RowKey, ETag: d.ETag, Value: v}, Blobs: refs}, nil
}

// fetch reads one blob and checks its size and SHA-256 (computed as the
// body arrives).
func (s *Store[T]) fetch(ctx context.Context, b Blob) ([]byte, error) {
	resp, err := s.blobs.NewBlobClient(b.Name).DownloadStream(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return nil, fmt.Errorf("%w: blob %s of property %s", errChanged, b.Name, b.Property)
	}
	if err != nil {
		return nil, fmt.Errorf("largeentity: reading blob %s of property %s: %w", b.Name, b.Property, redact.Error(err))
	}
	body := resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3})
	defer body.Close()
	// b.Size is at most MaxValueSize (pointer): nothing larger is allocated.
	if resp.ContentLength == nil || *resp.ContentLength != b.Size {
		return nil, fmt.Errorf("%w: blob %s of property %s holds %v bytes, the entity says %d", ErrCorrupt, b.Name, b.Property, deref(resp.ContentLength), b.Size)
	}
	buf := make([]byte, b.Size)
	sum, err := readHashing(body, buf)
	if err != nil {
		return nil, fmt.Errorf("largeentity: reading blob %s of property %s: %w", b.Name, b.Property, redact.Error(err))
	}
	if n, _ := body.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("%w: blob %s of property %s is longer than %d bytes", ErrCorrupt, b.Name, b.Property, b.Size)
	}
	if got := hex.EncodeToString(sum); got != b.SHA256 {
		return nil, fmt.Errorf("%w: blob %s of property %s has SHA-256 %s, the entity says %s", ErrCorrupt, b.Name, b.Property, got, b.SHA256)
	}
	return buf, nil
}

func deref(p *int64) any {
	if p == nil {
		return "unknown"
	}
	return *p
}

// Range yields the entities of partition pk whose RowKeys are in [from,
// to) (an empty bound is open), in key order, each with its offloaded
// values: one range query (a round trip per page of up to 1,000
// entities, or opts.PageSize), and the blobs of up to Concurrency
// entities read in parallel ahead of the loop. On a service whose queries
// return rows in no key order (Cosmos DB) the range's rows are read whole
// and sorted before the first entity is returned (same round trips,
// memory for the range's rows, not their blobs). opts.Select projects as
// for Get. An entity whose blob is gone because it changed after the
// query is read again (and skipped if it was deleted). The first error
// ends the sequence.
func (s *Store[T]) Range(ctx context.Context, pk, from, to string, opts *GetOptions) iter.Seq2[Entity[T], error] {
	return obs.Seq2(s.obs, ctx, opRange, s.tbl.Name(), pk, func(ctx context.Context) iter.Seq2[Entity[T], error] {
		return s.rangeOf(ctx, pk, from, to, opts)
	})
}

// rangeOf is Range, without its span.
func (s *Store[T]) rangeOf(ctx context.Context, pk, from, to string, opts *GetOptions) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		q, err := s.rangeQuery(pk, from, to, "", opts)
		if err != nil {
			yield(Entity[T]{}, err)
			return
		}
		// In key order on every service: an ordered fan-out of one query
		// streams pages on Table Storage and, on a service without key
		// order (Cosmos DB), reads the range whole and sorts it first.
		rows := s.tbl.FanOut(ctx, []*table.Query{q}, &table.FanOutOptions{Ordered: true})
		for it, err := range prefetch.Map(ctx, rows, s.conc, s.rangeOne(pk, q.Select)) {
			if err != nil {
				yield(Entity[T]{}, err)
				return
			}
			if it.ok && !yield(it.e, nil) {
				return
			}
		}
	}
}

// RangePage returns one page of Range: the entities of one page of the
// range query from cursor ("" for the first), each with its offloaded
// values, and the cursor of the next page (Next, empty at the end): a
// [table.Cursor], a string to keep anywhere and resume from in another
// process, with the same pk, from, to and Select; plain, it shows the next
// entity's keys, sealed with the table's CursorKey nothing (see the
// package documentation, "Trust"). 1 round trip for the page (up to
// opts.PageSize entities, 1,000 by default), + 1 read per offloaded value,
// Concurrency at a time. A page may be short, or empty, with a Next. On a
// service whose queries return rows in no key order (Cosmos DB) a page's
// entities come in the service's order: every entity exactly once across
// the pages, not in key order (Range sorts).
func (s *Store[T]) RangePage(ctx context.Context, pk, from, to string, cursor table.Cursor, opts *GetOptions) (_ table.Page[Entity[T]], err error) {
	ctx, sp := s.obs.Start(ctx, opRangePage, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	q, err := s.rangeQuery(pk, from, to, cursor, opts)
	if err != nil {
		return table.Page[Entity[T]]{}, err
	}
	rows, err := s.tbl.QueryPage(ctx, q)
	if err != nil {
		return table.Page[Entity[T]]{}, invalid.Mark(ErrInvalid, err)
	}
	page := table.Page[Entity[T]]{Next: rows.Next}
	for it, err := range prefetch.Map(ctx, prefetch.Slice(rows.Items), s.conc, s.rangeOne(pk, q.Select)) {
		if err != nil {
			return table.Page[Entity[T]]{}, err
		}
		if it.ok {
			page.Items = append(page.Items, it.e)
		}
	}
	return page, nil
}

// rangeQuery is the query of Range and RangePage.
func (s *Store[T]) rangeQuery(pk, from, to string, cursor table.Cursor, opts *GetOptions) (*table.Query, error) {
	if err := checkKeys("range", pk, ""); err != nil {
		return nil, err
	}
	q := &table.Query{Filter: table.And(table.PartitionKey(pk), table.RowKeyRange(from, to)), Cursor: cursor}
	if opts != nil {
		if opts.Select != nil {
			q.Select = s.projection(opts.Select)
		}
		if opts.PageSize < 0 || opts.PageSize > table.MaxPageSize {
			return nil, fmt.Errorf("largeentity: range: %w: PageSize %d: 1 to %d, or 0 for the default", ErrInvalid, opts.PageSize, table.MaxPageSize)
		}
		q.PageSize = opts.PageSize
	}
	return q, nil
}

// ranged is one entity of a range: ok false for one deleted since the
// query read it.
type ranged[T any] struct {
	e  Entity[T]
	ok bool
}

// rangeOne resolves a row of a range query of partition pk, reading it
// again (projected on sel) when a blob is gone because it changed.
func (s *Store[T]) rangeOne(pk string, sel []string) func(context.Context, table.Dynamic) (ranged[T], error) {
	return func(ctx context.Context, d table.Dynamic) (ranged[T], error) {
		e, err := s.resolve(ctx, d)
		if errors.Is(err, errChanged) {
			e, _, err = s.get(ctx, "range", pk, d.RowKey, sel)
			if errors.Is(err, table.ErrNotFound) {
				return ranged[T]{}, nil
			}
		}
		return ranged[T]{e, err == nil}, err
	}
}

// readHashing fills buf from r and returns its SHA-256, computed by
// another goroutine as the bytes arrive, so that hashing overlaps the
// transfer instead of following it.
func readHashing(r io.Reader, buf []byte) ([]byte, error) {
	chunks := make(chan []byte, 16)
	sum := make(chan []byte, 1)
	go func() {
		h := sha256.New()
		for c := range chunks {
			h.Write(c)
		}
		sum <- h.Sum(nil)
	}()
	var err error
	for off := 0; off < len(buf); {
		n, rerr := r.Read(buf[off:])
		if n > 0 {
			chunks <- buf[off : off+n]
			off += n
		}
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			} else if off < len(buf) {
				err = io.ErrUnexpectedEOF
			}
			break
		}
	}
	close(chunks)
	s := <-sum
	if err != nil {
		return nil, err
	}
	return s, nil
}
