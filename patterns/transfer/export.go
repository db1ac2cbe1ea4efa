package transfer

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/patterns/table"
)

// Export writes the entities of the table of src (every row: the
// patterns' reserved rows and properties included) to blobs under prefix
// in dst: gzip-compressed chunks of JSON lines and a manifest
// (<prefix>/manifest.json, see manifest). With opts.Ranges it reads
// several PartitionKey ranges at once. With opts.Resume it continues an
// unfinished export at prefix from its manifest; without, a prefix that
// holds a manifest is ErrExists. It is safe for concurrent use with
// distinct prefixes.
//
// Round trips: 1 per page of at most 1,000 entities, 1 per chunk and 1 per
// manifest write (one per chunk, one at the start and one at the end),
// plus the probes of a split (see Options.Ranges).
func Export(ctx context.Context, src *aztables.Client, dst *container.Client, prefix string, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if err := opts.check(); err != nil {
		return sum, err
	}
	if err := checkPrefix(prefix); err != nil {
		return sum, err
	}
	o := opts.orDefault()
	t, err := source(src)
	if err != nil {
		return sum, err
	}
	if err := checkSince(t, o.Since); err != nil {
		return sum, err
	}
	m, etag, err := readManifest(ctx, dst, prefix)
	if err != nil {
		return sum, err
	}
	switch {
	case m != nil && !o.Resume:
		return sum, fmt.Errorf("%w: %s", ErrExists, manifestName(prefix))
	case m != nil:
		if m.Table != t.Name() || m.From != o.From || m.To != o.To || !m.Since.Equal(o.Since) || m.Blobs != blobPrefix(&o, t) {
			return sum, fmt.Errorf("%w: the export at %s is of table %.40q, range [%.40q, %.40q), since %v, blobs %.40q: not this one",
				ErrInvalid, prefix, m.Table, m.From, m.To, m.Since, m.Blobs)
		}
		sum.Started = m.Started
		if m.Complete {
			sum.Ended = time.Now().UTC()
			return sum, nil
		}
	default:
		ranges, err := split(ctx, t, o.From, o.To, o.Since, o.Ranges, o.Concurrency)
		if err != nil {
			return sum, err
		}
		m = newManifest(t, &o, sum.Started, ranges)
	}
	x, err := newExporter(t, dst, prefix, &o, m, etag, newTracker(o.Progress, 0))
	if err != nil {
		return sum, err
	}
	if etag == "" {
		if err := x.commit(ctx, func(*manifest) (bool, error) { return true, nil }); errors.Is(err, errChanged) {
			return sum, fmt.Errorf("%w: %s (written meanwhile)", ErrExists, manifestName(prefix))
		} else if err != nil {
			return sum, err
		}
	}
	err = x.run(ctx)
	if err == nil {
		err = x.complete(ctx)
	}
	sum.Entities, sum.Bytes, sum.Chunks = x.progress.entities, x.progress.bytes, x.chunks
	sum = x.rej.summarise(x.carry.summarise(sum))
	if err != nil {
		return sum, err
	}
	sum.Ended = time.Now().UTC()
	if sum.Rejected > 0 {
		return sum, fmt.Errorf("%w: %d entities exported without their blobs (see Summary.Rejects)", ErrRejected, sum.Rejected)
	}
	return sum, nil
}

// newManifest is the manifest of a new export of t.
func newManifest(t *table.Table[table.Dynamic], o *Options, started time.Time, ranges []span) *manifest {
	return &manifest{Format: formatID, Table: t.Name(), Profile: t.Profile().Name, From: o.From, To: o.To,
		Since: o.Since.UTC(), Started: started, Guarantee: guaranteeText, Ranges: ranges, Blobs: blobPrefix(o, t)}
}

// blobPrefix is the Prefix of the blobs an export of t with o carries,
// "" for none.
func blobPrefix(o *Options, t *table.Table[table.Dynamic]) string {
	if o.Blobs == nil {
		return ""
	}
	return o.Blobs.prefixOr(t.Name())
}

// newExporter returns the exporter of the export m at prefix, which
// carries blobs from o.Blobs when m does.
func newExporter(t *table.Table[table.Dynamic], dst *container.Client, prefix string, o *Options, m *manifest, etag azcore.ETag, progress *tracker) (*exporter, error) {
	x := &exporter{t: t, c: dst, prefix: prefix, o: o, m: m, etag: etag, progress: progress, rej: &listed{max: o.MaxListed}}
	if m.Blobs == "" {
		return x, nil
	}
	if o.Blobs == nil {
		return nil, fmt.Errorf("%w: the export at %s carries blobs (Prefix %.40q): Options.Blobs is required", ErrInvalid, prefix, m.Blobs)
	}
	x.carry = newCarrier(o, x.rej, m.Blobs, fromTable(o.Blobs), toExport(dst, prefix), rereader(t), true)
	return x, nil
}

// complete marks the export complete when every range is done.
func (x *exporter) complete(ctx context.Context) error {
	return x.commit(ctx, func(m *manifest) (bool, error) {
		if m.Complete {
			return false, nil
		}
		for _, r := range m.Ranges {
			if !r.Done {
				return false, nil
			}
		}
		m.Complete, m.Ended = true, time.Now().UTC()
		return true, nil
	})
}

// errLost is a range another process took over (its lease expired here).
var errLost = errors.New("transfer: the range was taken over by another process")

type exporter struct {
	t        *table.Table[table.Dynamic]
	c        *container.Client
	prefix   string
	o        *Options
	progress *tracker
	carry    *carrier // nil: the export carries no blobs
	rej      *listed  // rows exported without their blobs

	mu     sync.Mutex // guards m, etag and chunks; held across the manifest's upload, so versions land in order
	m      *manifest  // the version last read or written; replaced, never changed
	etag   azcore.ETag
	chunks int
}

// commit writes the manifest as fn changes it, conditioned on the version
// last read or written; when another process wrote it meanwhile (ranges of
// one export shared across processes), it reads that version and applies
// fn to it again. fn reports whether it changed anything (nothing is
// written when not); its error ends commit.
func (x *exporter) commit(ctx context.Context, fn func(*manifest) (bool, error)) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for {
		m := x.m.clone()
		changed, err := fn(m)
		if err != nil || !changed {
			return err
		}
		etag, err := writeManifest(ctx, x.c, x.prefix, m, x.etag)
		if err == nil {
			x.m, x.etag = m, etag
			return x.o.step("manifest")
		}
		if !errors.Is(err, errChanged) || x.etag == "" {
			return err
		}
		m, etag, err = readManifest(ctx, x.c, x.prefix)
		if err != nil {
			return err
		}
		if m == nil || m.Table != x.m.Table || len(m.Ranges) != len(x.m.Ranges) {
			return fmt.Errorf("%w: the manifest at %s was replaced by another export", ErrInvalid, x.prefix)
		}
		x.m, x.etag = m, etag
	}
}

// run exports the ranges not done, Concurrency at a time.
func (x *exporter) run(ctx context.Context) error {
	x.mu.Lock()
	var todo []int
	for i, r := range x.m.Ranges {
		if !r.Done {
			todo = append(todo, i)
		}
	}
	x.mu.Unlock()
	return parallel(ctx, todo, x.o.Concurrency, func(ctx context.Context, i int) error {
		// errLost in one process: a write of this range landed after this
		// call read the manifest (a crashed run's request, late). The
		// manifest now read holds it; continue from there.
		for try := 0; ; try++ {
			err := x.exportRange(ctx, i)
			if !errors.Is(err, errLost) || try == 3 {
				return err
			}
		}
	})
}

// chunkWriter builds one chunk in memory.
type chunkWriter struct {
	buf      bytes.Buffer
	zw       *gzip.Writer
	line     []byte
	entities int64
	raw      int64
}

func newChunkWriter() *chunkWriter {
	w := &chunkWriter{}
	w.zw, _ = gzip.NewWriterLevel(&w.buf, gzip.BestSpeed) // the level is valid
	return w
}

func (w *chunkWriter) add(d *table.Dynamic) error {
	var err error
	if w.line, err = appendLine(w.line[:0], d, true); err != nil {
		return fmt.Errorf("transfer: entity (PartitionKey %.40q, RowKey %.40q): %w", d.PartitionKey, d.RowKey, err)
	}
	if _, err := w.zw.Write(w.line); err != nil {
		return err
	}
	w.entities++
	w.raw += int64(len(w.line))
	return nil
}

func (w *chunkWriter) reset() {
	w.buf.Reset()
	w.zw.Reset(&w.buf)
	w.entities, w.raw = 0, 0
}

// exportRange exports range i from its cursor to its end (nothing when
// the manifest last read says it is done).
func (x *exporter) exportRange(ctx context.Context, i int) error {
	x.mu.Lock()
	r := x.m.Ranges[i]
	x.mu.Unlock()
	if r.Done {
		return nil
	}
	w := newChunkWriter()
	n, from := len(r.Chunks), r.Next
	q := query(r.From, r.To, x.m.Since, r.Next)
	q.PageSize = pageSize(x.o.ChunkBytes)
	for page, err := range x.t.Pages(ctx, q) {
		if err != nil {
			return wrap(err, "reading %s", x.t.Name())
		}
		items, err := x.carry.carry(ctx, page.Items)
		if err != nil {
			return err
		}
		if x.carry != nil {
			if err := x.o.step("blobs"); err != nil {
				return err
			}
		}
		for j := range items {
			if err := w.add(&items[j]); err != nil {
				return err
			}
		}
		if w.raw > maxChunkRaw {
			return fmt.Errorf("transfer: a page of %s holds more than %d bytes: too large for one chunk", x.t.Name(), maxChunkRaw)
		}
		if page.Next != "" && w.raw < int64(x.o.ChunkBytes) {
			continue
		}
		if w.entities > 0 {
			n++
			if err := x.flush(ctx, w, i, n, from, page.Next); err != nil {
				return err
			}
			w.reset()
		} else if page.Next == "" {
			if err := x.record(ctx, i, n, from, nil, ""); err != nil {
				return err
			}
		}
		from = page.Next
	}
	return nil
}

// pageSize is the page size of an export of chunks of chunkBytes: pages
// of about a quarter chunk for entities of 1 KiB, at most 1,000 (the
// service's most), so that a chunk, which ends at a page boundary, passes
// chunkBytes by little.
func pageSize(chunkBytes int) int {
	return min(max(chunkBytes/4096, 1), table.MaxPageSize)
}

// flush uploads chunk n of range i, read from cursor from, and records
// it, with the cursor after it, in the manifest.
func (x *exporter) flush(ctx context.Context, w *chunkWriter, i, n int, from, next table.Cursor) error {
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("transfer: compressing: %w", err)
	}
	sum := sha256.Sum256(w.buf.Bytes())
	c := chunk{Name: chunkName(x.prefix, i, n), Entities: w.entities, RawBytes: w.raw,
		Bytes: int64(w.buf.Len()), SHA256: hex.EncodeToString(sum[:])}
	if err := writeBlob(ctx, x.c, c.Name, w.buf.Bytes()); err != nil {
		return err
	}
	if err := x.o.step("chunk"); err != nil {
		return err
	}
	if err := x.record(ctx, i, n, from, &c, next); err != nil {
		return err
	}
	x.mu.Lock()
	x.chunks++
	x.mu.Unlock()
	x.progress.add(c.Entities, c.RawBytes)
	return nil
}

// record writes to the manifest that range i, at n-1 chunks and cursor
// from, has chunk c (none when nil) and continues at next (done when
// empty). A range that is no longer there (another process recorded
// chunks of it, after this one's lease expired) is errLost: nothing is
// recorded twice.
func (x *exporter) record(ctx context.Context, i, n int, from table.Cursor, c *chunk, next table.Cursor) error {
	return x.commit(ctx, func(m *manifest) (bool, error) {
		r := &m.Ranges[i]
		want := n - 1
		if c == nil {
			want = n
		}
		if r.Done || len(r.Chunks) != want || r.Next != from {
			return false, errLost
		}
		if c != nil {
			r.Chunks = append(r.Chunks, *c)
		}
		r.Next, r.Done = next, next == ""
		return true, nil
	})
}
