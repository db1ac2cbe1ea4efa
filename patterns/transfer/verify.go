package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/largerows"
	"github.com/tablekit/tablekit/patterns/table"
)

// Verify compares the tables of want and got within opts' PartitionKey
// range: the entities of each (reserved rows included), by key and by a
// content hash of each entity's properties with their EDM types (system
// properties, Timestamp and ETag, aside). It lists in the Summary the keys
// of want missing from got, the keys of got extra to want, and the keys
// whose content differs, and returns ErrMismatch when any differ. It holds
// a key and a hash per entity of want in memory. Safe for concurrent use.
//
// Round trips: 1 per page of each table (at most 1,000 entities).
func Verify(ctx context.Context, want, got *aztables.Client, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if err := opts.check(); err != nil {
		return sum, err
	}
	o := opts.orDefault()
	if err := o.bothBlobs(); err != nil {
		return sum, err
	}
	w, err := source(want)
	if err != nil {
		return sum, err
	}
	prefix := blobPrefix(&o, w)
	hashes := map[Key][32]byte{}
	err = scan(ctx, w, []span{{From: o.From, To: o.To}}, time.Time{}, 1, func(d *table.Dynamic) error {
		if prefix != "" {
			canonical(d, prefix)
		}
		h, err := entityHash(d)
		if err != nil {
			return fmt.Errorf("transfer: entity (PartitionKey %.40q, RowKey %.40q): %w", d.PartitionKey, d.RowKey, err)
		}
		hashes[Key{d.PartitionKey, d.RowKey}] = h
		return nil
	})
	if err != nil {
		return sum, err
	}
	return compare(ctx, got, hashes, o.From, o.To, &o, sum)
}

// VerifyExport compares the export under prefix in src with the table of
// got, within the export's PartitionKey range, as Verify compares two
// tables (the export is the side wanted), after checking every chunk as
// Import does. An incremental export (made with Since) holds only changes
// and is refused. Safe for concurrent use.
//
// Round trips: 1 for the manifest, 1 per chunk, 1 per page of the table.
func VerifyExport(ctx context.Context, src *container.Client, prefix string, got *aztables.Client, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if err := opts.check(); err != nil {
		return sum, err
	}
	if err := checkPrefix(prefix); err != nil {
		return sum, err
	}
	o := opts.orDefault()
	m, _, err := readManifest(ctx, src, prefix)
	if err != nil {
		return sum, err
	}
	switch {
	case m == nil:
		return sum, fmt.Errorf("%w: no export at %s", ErrInvalid, prefix)
	case !m.Complete:
		return sum, fmt.Errorf("%w: the export at %s is not complete", ErrInvalid, prefix)
	case !m.Since.IsZero():
		return sum, fmt.Errorf("%w: the export at %s is incremental (since %v): it holds only changes", ErrInvalid, prefix, m.Since)
	case (m.Blobs != "") != (o.TargetBlobs != nil):
		return sum, fmt.Errorf("%w: the export at %s holds blobs (Prefix %.40q) and Options.TargetBlobs is %v: both or neither", ErrInvalid, prefix, m.Blobs, o.TargetBlobs)
	}
	hashes := map[Key][32]byte{}
	for _, r := range m.Ranges {
		for _, c := range r.Chunks {
			ds, err := readChunk(ctx, src, c)
			if err != nil {
				return sum, err
			}
			sum.Chunks++
			for i := range ds {
				if m.Blobs != "" {
					canonical(&ds[i], m.Blobs)
				}
				h, err := entityHash(&ds[i])
				if err != nil {
					return sum, err
				}
				k := Key{ds[i].PartitionKey, ds[i].RowKey}
				if _, dup := hashes[k]; dup {
					return sum, fmt.Errorf("%w: chunk %s: entity (PartitionKey %.40q, RowKey %.40q) twice in the export", ErrCorrupt, c.Name, k.PartitionKey, k.RowKey)
				}
				hashes[k] = h
			}
		}
	}
	return compare(ctx, got, hashes, m.From, m.To, &o, sum)
}

// compare reads got in [from, to) and compares it with hashes (consumed).
func compare(ctx context.Context, got *aztables.Client, hashes map[Key][32]byte, from, to string, o *Options, sum Summary) (Summary, error) {
	g, err := source(got)
	if err != nil {
		return sum, err
	}
	var blobs string // the Prefix of got's Store, whose blobs are read and checked
	if o.TargetBlobs != nil {
		blobs = o.TargetBlobs.prefixOr(g.Name())
	}
	sum.Entities = int64(len(hashes))
	var counts [3]int // missing, extra, changed
	add := func(kind int, list *[]Key, k Key) {
		sum.Differences++
		counts[kind]++
		if len(*list) < o.MaxListed {
			*list = append(*list, k)
		}
	}
	err = scan(ctx, g, []span{{From: from, To: to}}, time.Time{}, 1, func(d *table.Dynamic) error {
		k := Key{d.PartitionKey, d.RowKey}
		want, ok := hashes[k] // deleted once compared: a key read twice is extra
		if !ok {
			add(1, &sum.Extra, k)
			return nil
		}
		var ps []largerows.Pointer
		if blobs != "" {
			ps = canonical(d, blobs)
		}
		line, err := appendLine(nil, d, false)
		if err != nil {
			return err
		}
		sum.Bytes += int64(len(line))
		same := sha256.Sum256(line) == want
		for _, p := range ps {
			if !same {
				break
			}
			_, err := readValue(ctx, o.TargetBlobs.Container, p.Name, p)
			if errors.Is(err, errBlob) {
				same = false
			} else if err != nil {
				return err
			}
			sum.Blobs++
			sum.BlobBytes += p.Size
		}
		if !same {
			add(2, &sum.Changed, k)
		}
		delete(hashes, k)
		return nil
	})
	if err != nil {
		return sum, err
	}
	for k := range hashes {
		add(0, &sum.Missing, k)
	}
	for _, l := range []*[]Key{&sum.Missing, &sum.Extra, &sum.Changed} {
		slices.SortFunc(*l, func(a, b Key) int {
			if c := strings.Compare(a.PartitionKey, b.PartitionKey); c != 0 {
				return c
			}
			return strings.Compare(a.RowKey, b.RowKey)
		})
	}
	sum.Ended = time.Now().UTC()
	if sum.Differences > 0 {
		return sum, fmt.Errorf("%w: %d missing, %d extra, %d changed (at most %d of each listed)", ErrMismatch,
			counts[0], counts[1], counts[2], o.MaxListed)
	}
	return sum, nil
}
