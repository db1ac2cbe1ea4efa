package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/largerows"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// Blobs is where a table's rows keep their large values: the container
// and Prefix of its patterns/largeentity Store (or of the Store a
// secondaryindex keeps its Options.Large values in).
type Blobs struct {
	// Container holds the blobs.
	Container *container.Client
	// Prefix is the Store's Options.Prefix. Default: the table's name,
	// as the Store's.
	Prefix string
}

// prefixOr returns b's Prefix, or the table name when it is empty.
func (b *Blobs) prefixOr(tableName string) string {
	if b.Prefix != "" {
		return b.Prefix
	}
	return tableName
}

func (b *Blobs) check(name string) error {
	switch {
	case b == nil:
		return nil
	case b.Container == nil:
		return fmt.Errorf("%w: %s.Container is nil", ErrInvalid, name)
	case len(b.Prefix) > maxPrefix:
		return fmt.Errorf("%w: %s.Prefix is longer than %d bytes", ErrInvalid, name, maxPrefix)
	}
	return nil
}

// exportBlobName is the name of the blob of an export that holds a value
// whose SHA-256 is sum: content-addressed, so writing it again (a resume,
// another process, another row with the same value) writes the same bytes.
func exportBlobName(prefix, sum string) string { return prefix + "/blobs/" + sum }

// errBlob is a blob that is not what its pointer says (another size,
// another SHA-256) or is absent (errGone): a reason to reject its row,
// not to stop.
var (
	errBlob = errors.New("transfer: the blob is not the value its pointer names")
	errGone = fmt.Errorf("%w: absent", errBlob)
)

// hasPointers reports whether d has a pointer property.
func hasPointers(d *table.Dynamic) bool {
	for name := range d.Properties {
		if strings.HasPrefix(name, reserved.BlobPointerPrefix) {
			return true
		}
	}
	return false
}

// carrier carries the blobs that rows point at with the rows: from a
// table's container (Export, Copy), where a blob gone means its row
// changed since it was read and is read again, or from an export
// (Import); to an export (content-addressed) or to a target Store's
// container (under the names that Store gives them, the row's pointers
// renamed when the Prefixes differ). Every blob is read whole, its size
// capped by its pointer before anything is allocated, and its size and
// SHA-256 checked before it is written anywhere.
type carrier struct {
	prefix string // the source Store's Prefix: pointers are checked against it
	// read returns p's content, checked against p; errBlob (wrapped) when
	// the blob is absent or not p's.
	read func(ctx context.Context, p largerows.Pointer) ([]byte, error)
	// write stores b, p's checked content, for row d, and points d at it.
	write func(ctx context.Context, d *table.Dynamic, p largerows.Pointer, b []byte) error
	// reread reads d again from the live source (nil: an export, which
	// does not change).
	reread func(ctx context.Context, d *table.Dynamic) (table.Dynamic, error)
	keep   bool // a row whose blobs fail stays (Export), else it is left out
	rej    *listed
	sem    chan struct{} // bounds the blobs in flight (and in memory)

	mu    sync.Mutex
	blobs int64
	bytes int64
}

// newCarrier returns a carrier of the blobs of a Store with prefix, for a
// call with o, whose rejects go to rej.
func newCarrier(o *Options, rej *listed, prefix string, read func(context.Context, largerows.Pointer) ([]byte, error),
	write func(context.Context, *table.Dynamic, largerows.Pointer, []byte) error,
	reread func(context.Context, *table.Dynamic) (table.Dynamic, error), keep bool) *carrier {
	return &carrier{prefix: prefix, read: read, write: write, reread: reread, keep: keep,
		rej: rej, sem: make(chan struct{}, o.Concurrency)}
}

// summarise adds what c carried to sum (c may be nil).
func (c *carrier) summarise(sum Summary) Summary {
	if c != nil {
		c.mu.Lock()
		sum.Blobs, sum.BlobBytes = c.blobs, c.bytes
		c.mu.Unlock()
	}
	return sum
}

// carry carries the blobs of ds's rows, and returns the rows to export
// or write: re-read where their blobs had gone, without those deleted
// meanwhile, and, unless keep, without those rejected.
func (c *carrier) carry(ctx context.Context, ds []table.Dynamic) ([]table.Dynamic, error) {
	if c == nil {
		return ds, nil
	}
	out := make([]bool, len(ds)) // left out
	var idx []int
	for i := range ds {
		if hasPointers(&ds[i]) {
			idx = append(idx, i)
		}
	}
	err := parallel(ctx, idx, cap(c.sem), func(ctx context.Context, i int) error {
		keep, err := c.one(ctx, &ds[i])
		out[i] = !keep
		return err
	})
	if err != nil {
		return nil, err
	}
	kept := ds[:0]
	for i := range ds {
		if !out[i] {
			kept = append(kept, ds[i])
		}
	}
	return kept, nil
}

// one carries the blobs of d, reading d again (largeentity's reread loop)
// when one is gone from a live source. It reports whether d is to be kept.
func (c *carrier) one(ctx context.Context, d *table.Dynamic) (bool, error) {
	first := true
	err := largerows.Reread("transfer", d.PartitionKey, d.RowKey, func() (azcore.ETag, error) {
		if !first {
			nd, err := c.reread(ctx, d)
			if err != nil {
				return "", err
			}
			*d = nd
		}
		first = false
		ps, err := largerows.Rows().Pointers(c.prefix, d)
		if err != nil {
			return d.ETag, err
		}
		for _, p := range ps {
			c.sem <- struct{}{}
			b, err := c.read(ctx, p)
			if err == nil {
				err = c.write(ctx, d, p, b)
			}
			<-c.sem
			if errors.Is(err, errGone) && c.reread != nil {
				return d.ETag, fmt.Errorf("%w: %w", largerows.ErrChanged, err)
			}
			if err != nil {
				return d.ETag, err
			}
			c.mu.Lock()
			c.blobs++
			c.bytes += p.Size
			c.mu.Unlock()
		}
		return d.ETag, nil
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, table.ErrNotFound):
		return false, nil // deleted during the scan: as a row would be
	case errors.Is(err, errBlob), errors.Is(err, largeentity.ErrCorrupt), errors.Is(err, largerows.ErrChanged):
		c.rej.reject(Reject{Key: Key{d.PartitionKey, d.RowKey}, Reason: redact.Text(err.Error())})
		return c.keep, nil
	default:
		return false, err
	}
}

// readValue reads blob name of c, the content of p: exactly p.Size bytes
// (nothing larger is allocated) with p's SHA-256, else errBlob; errGone
// when the blob is absent.
func readValue(ctx context.Context, c *container.Client, name string, p largerows.Pointer) ([]byte, error) {
	b, _, err := readBlob(ctx, c, name, p.Size, true)
	switch {
	case errors.Is(err, ErrCorrupt):
		return nil, fmt.Errorf("%w: blob %s of property %s is larger than the %d bytes its pointer says", errBlob, name, p.Property, p.Size)
	case err != nil:
		return nil, err
	case b == nil:
		return nil, fmt.Errorf("%w: blob %s of property %s", errGone, name, p.Property)
	case int64(len(b)) != p.Size:
		return nil, fmt.Errorf("%w: blob %s of property %s holds %d bytes, its pointer says %d", errBlob, name, p.Property, len(b), p.Size)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != p.SHA256 {
		return nil, fmt.Errorf("%w: blob %s of property %s: SHA-256 differs from its pointer's", errBlob, name, p.Property)
	}
	return b, nil
}

// fromTable reads the values of a live Store's blobs, by their names.
func fromTable(b *Blobs) func(context.Context, largerows.Pointer) ([]byte, error) {
	return func(ctx context.Context, p largerows.Pointer) ([]byte, error) {
		return readValue(ctx, b.Container, p.Name, p)
	}
}

// fromExport reads the values an export holds, by their SHA-256.
func fromExport(c *container.Client, prefix string) func(context.Context, largerows.Pointer) ([]byte, error) {
	return func(ctx context.Context, p largerows.Pointer) ([]byte, error) {
		return readValue(ctx, c, exportBlobName(prefix, p.SHA256), p)
	}
}

// toExport stores values in an export, by their SHA-256; rows unchanged.
func toExport(c *container.Client, prefix string) func(context.Context, *table.Dynamic, largerows.Pointer, []byte) error {
	return func(ctx context.Context, _ *table.Dynamic, p largerows.Pointer, b []byte) error {
		return writeBlob(ctx, c, exportBlobName(prefix, p.SHA256), b)
	}
}

// toStore stores values in a target Store's container under the names
// that Store gives them (with its metadata, for its Sweep), and points
// the rows at them. A name already there is written again: it is unique
// to one value of one entity, so the bytes are the same (or were not
// that value's, and are now).
func toStore(c *container.Client, prefix string) func(context.Context, *table.Dynamic, largerows.Pointer, []byte) error {
	codec := largerows.Rows()
	return func(ctx context.Context, d *table.Dynamic, p largerows.Pointer, b []byte) error {
		moved, prop, val := codec.Move(prefix, d.PartitionKey, d.RowKey, p)
		_, err := c.NewBlockBlobClient(moved.Name).UploadBuffer(ctx, b, &blockblob.UploadBufferOptions{
			Metadata: codec.Metadata(d.PartitionKey, d.RowKey, moved)})
		if err != nil {
			return wrap(err, "writing blob %s", moved.Name)
		}
		d.Properties[prop] = val
		return nil
	}
}

// rereader reads a row of t again, for a carrier of a live table.
func rereader(t *table.Table[table.Dynamic]) func(context.Context, *table.Dynamic) (table.Dynamic, error) {
	return func(ctx context.Context, d *table.Dynamic) (table.Dynamic, error) {
		e, err := t.Get(ctx, d.PartitionKey, d.RowKey, nil)
		if err != nil {
			return table.Dynamic{}, wrap(err, "reading (%.40q, %.40q) of %s again", d.PartitionKey, d.RowKey, t.Name())
		}
		e.Value.ETag = e.ETag
		return e.Value, nil
	}
}

// canonical replaces, in d, the value of each pointer valid under prefix
// by its size and SHA-256 alone, so that Verify compares values, not the
// names two Stores give them.
func canonical(d *table.Dynamic, prefix string) []largerows.Pointer {
	ps, _ := largerows.Rows().Pointers(prefix, d)
	for _, p := range ps {
		d.Properties[reserved.BlobPointerPrefix+p.Property] = fmt.Sprintf(`{"size":%d,"sha256":%q}`, p.Size, p.SHA256)
	}
	return ps
}
