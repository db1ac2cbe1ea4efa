package transfer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/patterns/table"
)

// checkpoint is an import's progress: <prefix>/import-<table>.json, the
// chunks written in full.
type checkpoint struct {
	Table string   `json:"table"`
	Done  []string `json:"done"`
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
// (<prefix>/import-<table>.json) records it, and opts.Resume skips the
// chunks it lists. The export must be Complete. Safe for concurrent use
// with distinct targets.
//
// Round trips: 1 for the manifest, 1 for the checkpoint, then per chunk
// 1 read, ceil(n/100) transactions per partition of its n entities (more
// when they pass the profile's transaction size), and 1 checkpoint write.
func Import(ctx context.Context, src *container.Client, prefix string, dst *aztables.Client, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if err := opts.check(); err != nil {
		return sum, err
	}
	if err := checkPrefix(prefix); err != nil {
		return sum, err
	}
	o := opts.orDefault()
	t, err := target(dst)
	if err != nil {
		return sum, err
	}
	m, _, err := readManifest(ctx, src, prefix)
	if err != nil {
		return sum, err
	}
	if m == nil {
		return sum, fmt.Errorf("%w: no export at %s (no %s)", ErrInvalid, prefix, manifestName(prefix))
	}
	if !m.Complete {
		return sum, fmt.Errorf("%w: the export at %s is not complete (resume it first)", ErrInvalid, prefix)
	}
	var carry *carrier
	rej := &listed{max: o.MaxListed}
	switch {
	case m.Blobs != "" && o.TargetBlobs == nil:
		return sum, fmt.Errorf("%w: the export at %s holds large-entity blobs (Prefix %.40q): Options.TargetBlobs is required", ErrInvalid, prefix, m.Blobs)
	case m.Blobs == "" && o.TargetBlobs != nil:
		return sum, fmt.Errorf("%w: the export at %s holds no blobs (made without Options.Blobs): Options.TargetBlobs has nothing to receive", ErrInvalid, prefix)
	case m.Blobs != "":
		carry = newCarrier(&o, rej, m.Blobs, fromExport(src, prefix), toStore(o.TargetBlobs.Container, o.TargetBlobs.prefixOr(t.Name())), nil, false)
	}
	cp := checkpoint{Table: t.Name()}
	if o.Resume {
		b, _, err := readBlob(ctx, src, checkpointName(prefix, t.Name()), maxManifest, true)
		if err != nil {
			return sum, err
		}
		if b != nil {
			if err := strictJSON(b, &cp); err != nil || cp.Table != t.Name() {
				return sum, fmt.Errorf("%w: checkpoint %s is not one of table %s", ErrCorrupt, checkpointName(prefix, t.Name()), t.Name())
			}
		}
	}
	done := map[string]bool{}
	for _, n := range cp.Done {
		done[n] = true
	}
	w := &writer{t: t, opts: &o, rej: rej}
	progress := newTracker(o.Progress, m.entities())
	for _, r := range m.Ranges {
		for _, c := range r.Chunks {
			if done[c.Name] {
				progress.total -= c.Entities
				continue
			}
			ds, err := readChunk(ctx, src, c)
			if err != nil {
				return finish(sum, w, rej, carry), err
			}
			if err := o.step("read"); err != nil {
				return finish(sum, w, rej, carry), err
			}
			if ds, err = carry.carry(ctx, ds); err != nil {
				return finish(sum, w, rej, carry), err
			}
			if carry != nil {
				if err := o.step("blobs"); err != nil {
					return finish(sum, w, rej, carry), err
				}
			}
			if err := w.write(ctx, ds); err != nil {
				return finish(sum, w, rej, carry), err
			}
			sum.Chunks++
			sum.Bytes += c.RawBytes
			if err := o.step("written"); err != nil {
				return finish(sum, w, rej, carry), err
			}
			cp.Done = append(cp.Done, c.Name)
			b, _ := json.Marshal(cp) // strings only: cannot fail
			if err := writeBlob(ctx, src, checkpointName(prefix, t.Name()), b); err != nil {
				return finish(sum, w, rej, carry), err
			}
			if err := o.step("checkpoint"); err != nil {
				return finish(sum, w, rej, carry), err
			}
			progress.add(c.Entities, c.RawBytes)
		}
	}
	sum = finish(sum, w, rej, carry)
	if sum.Rejected > 0 {
		return sum, fmt.Errorf("%w: %d entities (see Summary.Rejects)", ErrRejected, sum.Rejected)
	}
	return sum, nil
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
