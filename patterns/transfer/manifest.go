package transfer

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/patterns/table"
)

// format is the manifest's format identifier; a manifest of another
// format is refused.
const formatID = "tablekit-transfer/1"

// Caps on what an export read back may make a reader allocate.
const (
	maxManifest = 64 << 20  // a manifest's JSON
	maxChunk    = 256 << 20 // a chunk's compressed bytes
	maxChunkRaw = 256 << 20 // a chunk's uncompressed bytes
	maxRanges   = 4096
	maxPrefix   = 512
)

// guaranteeText is what an export of a table that is being written holds, as
// recorded in every manifest.
const guaranteeText = "scan, not snapshot: every entity that existed for the whole export and was not changed is exported once, " +
	"as stored; an entity written during the export is exported in its state before or after that write, or, if inserted " +
	"or deleted during it, may be missing; the export is consistent per entity, not across entities"

// manifest describes an export: the blob <prefix>/manifest.json. Export
// writes it after every chunk (Complete false until the end), so an
// unfinished export can be resumed and a finished one read back.
type manifest struct {
	Format string `json:"format"`
	// Table is the exported table's name; Profile the name of its
	// service's profile ("Azure Table Storage", ...).
	Table   string `json:"table"`
	Profile string `json:"profile"`
	// From, To and Since are the Options the export was made with.
	From  string    `json:"from,omitempty"`
	To    string    `json:"to,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Started and Ended bound the export (Ended is set when Complete).
	// Started is also the watermark for a following incremental export
	// (Options.Since): every write after it has a later Timestamp.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// Complete reports that every range was read to its end.
	Complete bool `json:"complete"`
	// Guarantee states what the export holds (guaranteeText).
	Guarantee string `json:"guarantee"`
	// Ranges are the PartitionKey ranges read, each with its chunks.
	Ranges []span `json:"ranges"`
	// Blobs is the Prefix of the source's largeentity Store when the
	// export holds the blobs its rows point at (Options.Blobs), each as
	// <prefix>/blobs/<its SHA-256 in hex>.
	Blobs string `json:"blobs,omitempty"`
}

// span is one PartitionKey range of an export and its chunks, in order.
type span struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Next is where reading resumes (a table.Cursor of the range's
	// query); empty when Done.
	Next table.Cursor `json:"next,omitempty"`
	Done bool         `json:"done"`
	// Chunks are the range's chunks in the order written.
	Chunks []chunk `json:"chunks"`
}

// chunk is one blob of an export: gzip-compressed JSON lines, one entity
// a line.
type chunk struct {
	// Name is the blob's name: <prefix>/r<range>-<n>.jsonl.gz.
	Name string `json:"name"`
	// Entities is the number of lines; RawBytes their size uncompressed;
	// Bytes the blob's size; SHA256 the hex SHA-256 of the blob.
	Entities int64  `json:"entities"`
	RawBytes int64  `json:"rawBytes"`
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256"`
}

// entities returns the number of entities in the export's chunks.
func (m *manifest) entities() int64 {
	var n int64
	for _, r := range m.Ranges {
		for _, c := range r.Chunks {
			n += c.Entities
		}
	}
	return n
}

func manifestName(prefix string) string { return prefix + "/manifest.json" }

// chunkName is the name of an upload of chunk n of range rng: unique to
// the upload (16 random hex digits), so that the manifest's SHA-256 is
// always of the very blob it names, even when a crashed process's late
// upload of the same chunk lands after the resume's.
func chunkName(prefix string, rng, n int) string {
	return fmt.Sprintf("%s/r%04d-%06d-%016x.jsonl.gz", prefix, rng, n, rand.Uint64())
}

// isChunkName reports whether name is a name chunkName gives chunk n of
// range rng under prefix.
func isChunkName(name, prefix string, rng, n int) bool {
	head := fmt.Sprintf("%s/r%04d-%06d-", prefix, rng, n)
	rest, ok := strings.CutPrefix(name, head)
	if !ok || len(rest) != 16+len(".jsonl.gz") || !strings.HasSuffix(rest, ".jsonl.gz") {
		return false
	}
	for _, c := range rest[:16] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func checkPrefix(prefix string) error {
	switch {
	case prefix == "" || len(prefix) > maxPrefix:
		return fmt.Errorf("%w: prefix must be 1 to %d bytes", ErrInvalid, maxPrefix)
	case strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || strings.Contains(prefix, "//"):
		return fmt.Errorf("%w: prefix %.40q must not start or end with / nor hold //", ErrInvalid, prefix)
	}
	return nil
}

// validate checks a manifest read back against what Export writes: every
// chunk name the one Export gives its place, sizes within the caps, hashes
// of SHA-256's length.
func (m *manifest) validate(prefix string) error {
	if m.Format != formatID {
		return fmt.Errorf("%w: manifest format %.40q, want %q", ErrCorrupt, m.Format, formatID)
	}
	if len(m.Blobs) > maxPrefix {
		return fmt.Errorf("%w: manifest's blobs prefix is longer than %d bytes", ErrCorrupt, maxPrefix)
	}
	if len(m.Ranges) == 0 || len(m.Ranges) > maxRanges {
		return fmt.Errorf("%w: manifest has %d ranges", ErrCorrupt, len(m.Ranges))
	}
	for i, r := range m.Ranges {
		if r.Done && r.Next != "" {
			return fmt.Errorf("%w: range %d is done with a cursor", ErrCorrupt, i)
		}
		for j, c := range r.Chunks {
			if !isChunkName(c.Name, prefix, i, j+1) {
				return fmt.Errorf("%w: chunk %d of range %d is named %.80q, not %s/r%04d-%06d-<16 hex digits>.jsonl.gz", ErrCorrupt, j+1, i, c.Name, prefix, i, j+1)
			}
			if c.Bytes <= 0 || c.Bytes > maxChunk || c.RawBytes < 0 || c.RawBytes > maxChunkRaw || c.Entities < 0 || c.Entities > c.RawBytes {
				return fmt.Errorf("%w: chunk %s: sizes out of bounds", ErrCorrupt, c.Name)
			}
			if b, err := hex.DecodeString(c.SHA256); err != nil || len(b) != 32 {
				return fmt.Errorf("%w: chunk %s: SHA256 is not 64 hex digits", ErrCorrupt, c.Name)
			}
		}
	}
	return nil
}

// readBlob reads a blob of at most max bytes (checked against its length
// before allocating) and returns it with its ETag. It returns a nil slice
// for a missing blob when missingOK.
func readBlob(ctx context.Context, c *container.Client, name string, max int64, missingOK bool) ([]byte, azcore.ETag, error) {
	resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		if missingOK && bloberror.HasCode(err, bloberror.BlobNotFound) {
			return nil, "", nil
		}
		return nil, "", wrap(err, "reading blob %s", name)
	}
	defer resp.Body.Close()
	if resp.ContentLength == nil || *resp.ContentLength < 0 || *resp.ContentLength > max {
		return nil, "", fmt.Errorf("%w: blob %s is larger than %d bytes", ErrCorrupt, name, max)
	}
	buf := make([]byte, *resp.ContentLength)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return nil, "", wrap(err, "reading blob %s", name)
	}
	if n, _ := resp.Body.Read(make([]byte, 1)); n > 0 {
		return nil, "", fmt.Errorf("%w: blob %s is longer than its length", ErrCorrupt, name)
	}
	var etag azcore.ETag
	if resp.ETag != nil {
		etag = *resp.ETag
	}
	return buf, etag, nil
}

// readManifest reads and validates the manifest at prefix, with its ETag;
// nil when there is none.
func readManifest(ctx context.Context, c *container.Client, prefix string) (*manifest, azcore.ETag, error) {
	b, etag, err := readBlob(ctx, c, manifestName(prefix), maxManifest, true)
	if err != nil || b == nil {
		return nil, "", err
	}
	var m manifest
	if err := strictJSON(b, &m); err != nil {
		return nil, "", fmt.Errorf("%w: manifest %s: %v", ErrCorrupt, manifestName(prefix), err)
	}
	if err := m.validate(prefix); err != nil {
		return nil, "", err
	}
	return &m, etag, nil
}

// writeManifest writes m if the manifest is still the version etag names
// (none when etag is empty), and returns the new ETag. Another writer's
// version in between is errChanged.
func writeManifest(ctx context.Context, c *container.Client, prefix string, m *manifest, etag azcore.ETag) (azcore.ETag, error) {
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return "", fmt.Errorf("transfer: encoding manifest: %w", err)
	}
	newETag, err := putIf(ctx, c, manifestName(prefix), b, etag)
	if !errors.Is(err, errChanged) {
		return newETag, err
	}
	// A resend of a write whose response was lost finds its own write:
	// the manifest then holds exactly what was sent (Started makes every
	// export's manifest its own), and the write applied.
	got, gotETag, rerr := readManifest(ctx, c, prefix)
	if rerr != nil || got == nil {
		return "", errChanged
	}
	if again, _ := json.MarshalIndent(got, "", " "); !bytes.Equal(again, b) {
		return "", errChanged
	}
	return gotETag, nil
}

// putIf writes blob name if it is still the version etag names (none when
// etag is empty; any when azcore.ETagAny), and returns the new ETag.
// Another version (or, for none, any) is errChanged.
func putIf(ctx context.Context, c *container.Client, name string, b []byte, etag azcore.ETag) (azcore.ETag, error) {
	var cond *blob.ModifiedAccessConditions
	switch etag {
	case "":
		cond = &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}
	case azcore.ETagAny:
	default:
		cond = &blob.ModifiedAccessConditions{IfMatch: &etag}
	}
	resp, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, b, &blockblob.UploadBufferOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}})
	switch {
	case bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists):
		return "", errChanged
	case err != nil:
		return "", wrap(err, "writing blob %s", name)
	case resp.ETag == nil:
		return "", fmt.Errorf("transfer: writing blob %s: no ETag in the answer", name)
	}
	return *resp.ETag, nil
}

// mustJSON encodes v, of a type that always encodes (strings, ints).
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v) // strings and ints: cannot fail
	return b
}

// errChanged is a manifest or checkpoint write that found another
// version.
var errChanged = errors.New("transfer: the manifest was changed by another writer")

// clone returns a copy of m that can be changed without changing m.
func (m *manifest) clone() *manifest {
	c := *m
	c.Ranges = slices.Clone(m.Ranges)
	for i := range c.Ranges {
		c.Ranges[i].Chunks = slices.Clip(c.Ranges[i].Chunks)
	}
	return &c
}

// strictJSON decodes b into v, refusing unknown fields and trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

func writeBlob(ctx context.Context, c *container.Client, name string, b []byte) error {
	if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, b, nil); err != nil {
		return wrap(err, "writing blob %s", name)
	}
	return nil
}
