package transfer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/patterns/table"
)

// checkpoint is an import's progress: <prefix>/import-<table>.json, the
// chunks written in full and the entities the target rejected, written
// after each chunk, conditioned on the version read (the processes of a
// shared import each add their chunks to it).
type checkpoint struct {
	Table    string   `json:"table"`
	Done     []string `json:"done"`
	Rejects  []Reject `json:"rejects,omitempty"`
	Rejected int      `json:"rejected,omitempty"`
}

func checkpointName(prefix, tableName string) string {
	return prefix + "/import-" + tableName + ".json"
}

// Import writes the entities of the export under prefix in src into the
// table of dst, as upserts that replace (so importing twice gives the same
// table; entities of dst that the export does not hold are left alone).
// Each chunk is read whole (its size capped before anything is
// allocated), its SHA-256 and sizes checked against the manifest and its
// every line decoded strictly before any of its entities is written;
// entities dst's profile cannot hold are reported in Summary.Rejects
// (with ErrRejected) and never sent. After each chunk a checkpoint blob
// (<prefix>/import-<table>.json) records it and its rejects, and
// opts.Resume skips the chunks it lists and reports the rejects it
// records: Import with Resume after an import that processes shared
// (DistributeImport) writes what they left and reports the whole. Without
// Resume the checkpoint is reset and every chunk written. The export must
// be Complete. Safe for concurrent use with distinct targets.
//
// Round trips: 1 for the manifest, 1 for the checkpoint (a read with
// Resume, else its reset), then per chunk 1 read, ceil(n/100)
// transactions per partition of its n entities (more when they pass the
// profile's transaction size), and 1 checkpoint write (+1 read when
// another process wrote it meanwhile).
func Import(ctx context.Context, src *container.Client, prefix string, dst *aztables.Client, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	o := opts.orDefault()
	im, err := newImporter(ctx, src, prefix, dst, opts, &o)
	if err != nil {
		return sum, err
	}
	progress := newTracker(o.Progress, im.m.entities())
	for i := range im.m.Ranges {
		if err := im.importRange(ctx, i, &sum, progress); err != nil {
			return im.finish(sum), err
		}
	}
	sum = im.finish(sum)
	if sum.Rejected > 0 {
		return sum, fmt.Errorf("%w: %d entities (see Summary.Rejects)", ErrRejected, sum.Rejected)
	}
	return sum, nil
}

// importer imports an export's chunks into a table, and keeps its
// checkpoint.
type importer struct {
	src    *container.Client
	prefix string
	m      *manifest
	o      *Options
	w      *writer
	rej    *listed
	carry  *carrier // nil: the export holds no blobs

	cpName string
	cp     checkpoint // the version last read or written
	etag   azcore.ETag
}

// newImporter checks an import's arguments and the export, then reads
// the checkpoint (o.Resume) or resets it: 2 round trips.
func newImporter(ctx context.Context, src *container.Client, prefix string, dst *aztables.Client, opts, o *Options) (*importer, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	t, err := target(dst)
	if err != nil {
		return nil, err
	}
	m, _, err := readManifest(ctx, src, prefix)
	switch {
	case err != nil:
		return nil, err
	case m == nil:
		return nil, fmt.Errorf("%w: no export at %s (no %s)", ErrInvalid, prefix, manifestName(prefix))
	case !m.Complete:
		return nil, fmt.Errorf("%w: the export at %s is not complete (resume it first)", ErrInvalid, prefix)
	case m.Blobs != "" && o.TargetBlobs == nil:
		return nil, fmt.Errorf("%w: the export at %s holds large-entity blobs (Prefix %.40q): Options.TargetBlobs is required", ErrInvalid, prefix, m.Blobs)
	case m.Blobs == "" && o.TargetBlobs != nil:
		return nil, fmt.Errorf("%w: the export at %s holds no blobs (made without Options.Blobs): Options.TargetBlobs has nothing to receive", ErrInvalid, prefix)
	}
	im := &importer{src: src, prefix: prefix, m: m, o: o, rej: &listed{max: o.MaxListed},
		cpName: checkpointName(prefix, t.Name()), cp: checkpoint{Table: t.Name()}}
	im.w = &writer{t: t, opts: o, rej: im.rej}
	if m.Blobs != "" {
		im.carry = newCarrier(o, m.Blobs, fromExport(src, prefix), toStore(o.TargetBlobs.Container, o.TargetBlobs.prefixOr(t.Name())), nil)
	}
	// The checkpoint: with Resume, the one there (if any); else a new one.
	if o.Resume {
		err = im.readCheckpoint(ctx)
	} else {
		im.etag, err = putIf(ctx, src, im.cpName, mustJSON(im.cp), azcore.ETagAny)
	}
	if err != nil {
		return nil, err
	}
	return im, nil
}

// readCheckpoint reads the checkpoint, if there is one.
func (im *importer) readCheckpoint(ctx context.Context) error {
	b, etag, err := readBlob(ctx, im.src, im.cpName, maxManifest, true)
	if err != nil {
		return err
	}
	if b == nil { // none yet, or deleted: the next write creates it
		im.cp, im.etag = checkpoint{Table: im.cp.Table}, ""
		return nil
	}
	var cp checkpoint
	if err := strictJSON(b, &cp); err != nil || cp.Table != im.cp.Table || cp.Rejected < len(cp.Rejects) {
		return fmt.Errorf("%w: checkpoint %s is not one of table %s", ErrCorrupt, im.cpName, im.cp.Table)
	}
	im.cp, im.etag = cp, etag
	return nil
}

// importRange writes the chunks of range i that the checkpoint does not
// list, in order, each recorded after it is written.
func (im *importer) importRange(ctx context.Context, i int, sum *Summary, progress *tracker) error {
	for _, c := range im.m.Ranges[i].Chunks {
		if slices.Contains(im.cp.Done, c.Name) {
			progress.skip(c.Entities)
			continue
		}
		ds, err := readChunk(ctx, im.src, c)
		if err != nil {
			return err
		}
		if err := im.o.step("read"); err != nil {
			return err
		}
		im.rej.mu.Lock()
		listed0, count0 := len(im.rej.rej), im.rej.nrej
		im.rej.mu.Unlock()
		if err := writeCarried(ctx, im.carry, im.w, ds); err != nil {
			return err
		}
		sum.Chunks++
		sum.Bytes += c.RawBytes
		if err := im.o.step("written"); err != nil {
			return err
		}
		im.rej.mu.Lock()
		rejs, n := slices.Clone(im.rej.rej[listed0:]), im.rej.nrej-count0
		im.rej.mu.Unlock()
		if err := im.record(ctx, c.Name, rejs, n); err != nil {
			return err
		}
		if err := im.o.step("checkpoint"); err != nil {
			return err
		}
		progress.add(c.Entities, c.RawBytes)
	}
	return nil
}

// record adds chunk name, and the n entities of it rejected (rejs
// listed), to the checkpoint, conditioned on the version last read or
// written; when another process wrote it meanwhile, it reads that version
// and adds them to it. A chunk the checkpoint lists already (the write of
// a response lost, or another process's) is not added again.
func (im *importer) record(ctx context.Context, name string, rejs []Reject, n int) error {
	for {
		if slices.Contains(im.cp.Done, name) {
			return nil
		}
		cp := im.cp
		cp.Done = append(slices.Clip(cp.Done), name)
		cp.Rejects = append(slices.Clip(cp.Rejects), rejs[:min(len(rejs), max(im.o.MaxListed-len(cp.Rejects), 0))]...)
		cp.Rejected += n
		etag, err := putIf(ctx, im.src, im.cpName, mustJSON(cp), im.etag)
		if err == nil {
			im.cp, im.etag = cp, etag
			return nil
		}
		if !errors.Is(err, errChanged) {
			return err
		}
		if err := im.readCheckpoint(ctx); err != nil {
			return err
		}
	}
}

// finish fills sum from what the import wrote and carried, and the
// rejects its checkpoint records (of every run and process).
func (im *importer) finish(sum Summary) Summary {
	sum = finish(sum, im.w, im.rej, im.carry)
	if im.cp.Rejected > sum.Rejected {
		sum.Rejects, sum.Rejected = slices.Clone(im.cp.Rejects[:min(len(im.cp.Rejects), im.o.MaxListed)]), im.cp.Rejected
	}
	return sum
}

// finish fills sum from what an Import or Copy wrote, rejected and
// carried (carry may be nil).
func finish(sum Summary, w *writer, rej *listed, carry *carrier) Summary {
	sum = carry.summarise(sum)
	w.mu.Lock()
	sum.Entities, sum.Transactions = w.wrote, w.txns
	w.mu.Unlock()
	sum = rej.summarise(sum)
	sum.Ended = time.Now().UTC()
	return sum
}

// readChunk reads chunk c whole, checks its size and SHA-256 against c,
// and decodes every line: all of it, or an ErrCorrupt error.
func readChunk(ctx context.Context, src *container.Client, c chunk) ([]table.Dynamic, error) {
	b, _, err := readBlob(ctx, src, c.Name, c.Bytes, false)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != c.Bytes {
		return nil, fmt.Errorf("%w: chunk %s is %d bytes, its manifest says %d", ErrCorrupt, c.Name, len(b), c.Bytes)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != c.SHA256 {
		return nil, fmt.Errorf("%w: chunk %s: SHA-256 differs from its manifest's", ErrCorrupt, c.Name)
	}
	return decodeChunk(b, c)
}

// decodeChunk decompresses and decodes a chunk whose bytes were checked,
// holding it to the sizes its manifest states.
func decodeChunk(b []byte, c chunk) ([]table.Dynamic, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: chunk %s: %v", ErrCorrupt, c.Name, err)
	}
	zr.Multistream(false)
	lim := &io.LimitedReader{R: zr, N: c.RawBytes + 1}
	br := bufio.NewReaderSize(lim, 64<<10)
	ds := make([]table.Dynamic, 0, min(c.Entities, 1<<16))
	var raw int64
	for {
		line, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: chunk %s line %d: %v", ErrCorrupt, c.Name, len(ds)+1, err)
		}
		raw += int64(len(line)) + 1
		if int64(len(ds)) >= c.Entities || raw > c.RawBytes {
			return nil, fmt.Errorf("%w: chunk %s holds more than its manifest says", ErrCorrupt, c.Name)
		}
		d, err := decodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: chunk %s line %d: %v", ErrCorrupt, c.Name, len(ds)+1, err)
		}
		ds = append(ds, d)
	}
	if int64(len(ds)) != c.Entities || raw != c.RawBytes {
		return nil, fmt.Errorf("%w: chunk %s holds %d entities in %d bytes, its manifest says %d in %d", ErrCorrupt, c.Name, len(ds), raw, c.Entities, c.RawBytes)
	}
	return ds, nil
}

// readLine reads one '\n'-terminated line of at most maxLine bytes,
// without the newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, errors.New("last line has no newline")
		default:
			return nil, err
		}
	}
}
