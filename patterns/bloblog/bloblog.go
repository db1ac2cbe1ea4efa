package bloblog

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/table"
)

const (
	// MaxBlockSize is the most bytes one append writes (an append block),
	// and so the longest entry, with its time and line end.
	MaxBlockSize = 4 << 20
	// MaxBlocks is the most appends an append blob takes.
	MaxBlocks = 50_000
	// MaxBlobSize is the largest append blob: MaxBlocks blocks of
	// MaxBlockSize (about 195 GiB).
	MaxBlobSize = int64(MaxBlocks) * MaxBlockSize
	// defaultConcurrency is Options.Concurrency's default.
	defaultConcurrency = 8
)

var (
	// ErrInvalid is the sentinel for a request rejected before the
	// network: a nil container, bad Options or WriterOptions, an entry
	// that cannot be encoded, too long for one append or with a line break
	// in its bytes, a time range the wrong way round. It matches
	// table.ErrInvalid.
	ErrInvalid = invalid.New("bloblog: invalid request")
	// ErrClosed: Append after Close.
	ErrClosed = errors.New("bloblog: writer closed")
	// ErrCorrupt: a blob under the log's prefix holds a line that is not an
	// entry (a time, a space, the entry, a line break), or an entry its
	// type cannot decode.
	ErrCorrupt = errors.New("bloblog: malformed log entry")
	// ErrTooLarge: a blob under the log's prefix is larger than
	// Options.MaxBlobSize, or holds a line longer than one append, so no
	// writer of the log wrote it so: Range does not read it (a blob's size
	// is checked from the listing before it is downloaded, and again as it
	// is read).
	ErrTooLarge = errors.New("bloblog: a blob or line is larger than the log's writers write")
)

// timeLayout is every entry's time: UTC, nanoseconds, fixed width, so
// lines sort and parse without ambiguity.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Blob metadata the writers set: the writer's id and its instance's nonce
// (whose blob it is), and the times of the blob's first and last entries.
const (
	metaWriter = "writer"
	metaNonce  = "nonce"
	metaFirst  = "first"
	metaLast   = "last"
)

// Options configures a Log. A nil *Options means defaults.
type Options struct {
	// Prefix starts every blob name: <Prefix>/YYYY/MM/DD/HH00/<writer
	// id>-<sequence number>.log: letters, digits, '-', '_', '.' and '/'
	// between non-empty segments, at most 512 characters. Default: none,
	// the log's blobs are named YYYY/MM/DD/HH00/<writer id>-<sequence
	// number>.log at the container's root (the container is the log's).
	Prefix string
	// Concurrency is the most blobs Range reads at once. Default:
	// 8.
	Concurrency int
	// MaxBlobSize is the largest blob of the log, 1 KiB to MaxBlobSize:
	// writers roll to a new blob before it (WriterOptions.MaxBlobSize may
	// lower it for a writer), and Range, which holds each blob it reads in
	// memory, refuses a larger one with ErrTooLarge before reading it.
	// Use the same value wherever the log is written and read. Default:
	// 64 MiB.
	MaxBlobSize int64
	// Telemetry receives the spans, metrics and log records of the Log's
	// operations and its Writers' flushes (Append sends nothing and
	// records nothing). Default (nil): the global OpenTelemetry providers
	// and slog.Default().
	Telemetry *table.Telemetry
}

// Log is a log of entries of type T in time-named append blobs of one
// container, as Storage Analytics keeps its logs: NewWriter appends to it,
// Range reads a time range of it. T is encoded with encoding/json, one
// entry a line; a Log[[]byte] stores each entry's bytes as they are (they
// must not contain a line break). It is safe for concurrent use.
type Log[T any] struct {
	c       *container.Client
	prefix  string
	conc    int
	maxBlob int64 // Options.MaxBlobSize
	raw     bool  // T is []byte
	obs     *obs.Obs
}

// New returns a Log in container c (required; a nil opts means defaults).
// It sends nothing. It fails with ErrInvalid for a nil container or bad
// Options.
func New[T any](c *container.Client, opts *Options) (*Log[T], error) {
	if c == nil {
		return nil, fmt.Errorf("%w: a container is required", ErrInvalid)
	}
	if opts == nil {
		opts = &Options{}
	}
	if err := checkPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	conc := opts.Concurrency
	switch {
	case conc == 0:
		conc = defaultConcurrency
	case conc < 0:
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrInvalid, conc)
	}
	maxBlob := opts.MaxBlobSize
	switch {
	case maxBlob == 0:
		maxBlob = defaultMaxBlobSize
	case maxBlob < 1<<10 || maxBlob > MaxBlobSize:
		return nil, fmt.Errorf("%w: MaxBlobSize %d outside 1 KiB..%d", ErrInvalid, maxBlob, MaxBlobSize)
	}
	return &Log[T]{c: c, prefix: opts.Prefix, conc: conc, maxBlob: maxBlob, raw: reflect.TypeFor[T]() == reflect.TypeFor[[]byte](), obs: obs.New((*obs.Config)(opts.Telemetry))}, nil
}

func checkPrefix(p string) error {
	if p == "" {
		return nil
	}
	bad := len(p) > 512
	for _, seg := range strings.Split(p, "/") {
		bad = bad || seg == "" || seg == "." || seg == ".."
		for _, r := range seg {
			bad = bad || !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.')
		}
	}
	if bad {
		return fmt.Errorf("%w: Prefix %q: want letters, digits, '-', '_' and '.' in non-empty segments separated by '/', at most 512 characters", ErrInvalid, p)
	}
	return nil
}

// hourPrefix is the name prefix of the blobs of the hour starting at h.
func (l *Log[T]) hourPrefix(h time.Time) string {
	hour := h.UTC().Format("2006/01/02/1504") + "/"
	if l.prefix == "" {
		return hour
	}
	return l.prefix + "/" + hour
}

// encode returns v as an entry's text.
func (l *Log[T]) encode(v T) ([]byte, error) {
	if l.raw {
		b := any(v).([]byte)
		if bytes.IndexByte(b, '\n') >= 0 {
			return nil, fmt.Errorf("%w: an entry of bytes contains a line break", ErrInvalid)
		}
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding the entry: %v", ErrInvalid, err)
	}
	return b, nil
}

// decode is the reverse of encode.
func (l *Log[T]) decode(b []byte) (T, error) {
	var v T
	if l.raw {
		return any(b).(T), nil
	}
	err := json.Unmarshal(b, &v)
	return v, err
}

// appendLine appends the line of an entry at t.
func appendLine(buf []byte, t time.Time, payload []byte) []byte {
	buf = t.UTC().AppendFormat(buf, timeLayout)
	buf = append(buf, ' ')
	buf = append(buf, payload...)
	return append(buf, '\n')
}

// lineOverhead is what a line adds to its entry: the time, a space, the
// line break.
const lineOverhead = len(timeLayout) + 2

// maxLine is the longest line a writer of the log writes, line break
// included: one append, within one blob.
func (l *Log[T]) maxLine() int { return int(min(int64(MaxBlockSize), l.maxBlob)) }

// Entry is one entry of a log as read.
type Entry[T any] struct {
	// Time is when the entry was appended (the writer's clock, never
	// earlier than the writer's previous entry).
	Time time.Time
	// Value is the entry.
	Value T
	// Blob is the name of the blob holding it.
	Blob string
}

// listed is a blob of the log, with its entries' time bounds from its
// metadata.
type listed struct {
	name        string
	first, last time.Time // last is zero while the blob is open
}

// Range yields the entries appended in [from, to), in time order (entries
// of one time in the order of their blobs, sorted by first entry then
// name, then of their lines; so one writer's entries come in the order it
// appended them), lazily. For each hour of the range it lists that hour's
// blobs only (one request per 5,000 blobs), skips those whose metadata
// puts all their entries outside the range, and reads the others
// (Concurrency at a time, ahead of the loop, each whole), merging their
// entries as it goes: a blob is read only when the merge reaches its first
// entry's time, so memory holds the blobs open at that time (about one per
// writer) and the read-ahead, each at most Options.MaxBlobSize (a larger
// blob is ErrTooLarge, refused from its listed size before it is read).
// The first error ends the sequence.
func (l *Log[T]) Range(ctx context.Context, from, to time.Time) iter.Seq2[Entry[T], error] {
	return obs.Seq2(l.obs, ctx, opRange, "", "", func(ctx context.Context) iter.Seq2[Entry[T], error] {
		return l.rangeOf(ctx, from, to)
	})
}

// rangeOf is Range, without its span.
func (l *Log[T]) rangeOf(ctx context.Context, from, to time.Time) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		if !from.Before(to) {
			yield(Entry[T]{}, fmt.Errorf("%w: from %v is not before to %v", ErrInvalid, from, to))
			return
		}
		from, to = from.UTC(), to.UTC()
		for h := from.Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
			blobs, err := l.list(ctx, h, from, to)
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			if !l.merge(ctx, blobs, from, to, yield) {
				return
			}
		}
	}
}

// list returns the blobs of the hour starting at h that may hold entries
// in [from, to), sorted by first entry, then name.
func (l *Log[T]) list(ctx context.Context, h, from, to time.Time) ([]listed, error) {
	prefix := l.hourPrefix(h)
	pager := l.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}})
	var out []listed
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("bloblog: listing %s: %w", prefix, redact.Error(err))
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			b := listed{name: *item.Name, first: h}
			if t, err := time.Parse(timeLayout, metadata(item.Metadata, metaFirst)); err == nil && !t.Before(h) {
				b.first = t
			}
			if t, err := time.Parse(timeLayout, metadata(item.Metadata, metaLast)); err == nil {
				b.last = t
			}
			if !b.first.Before(to) || !b.last.IsZero() && b.last.Before(from) {
				continue
			}
			if item.Properties != nil && item.Properties.ContentLength != nil && *item.Properties.ContentLength > l.maxBlob {
				return nil, fmt.Errorf("%w: blob %s holds %d bytes, more than MaxBlobSize (%d); not read", ErrTooLarge, b.name, *item.Properties.ContentLength, l.maxBlob)
			}
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b listed) int {
		if c := a.first.Compare(b.first); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out, nil
}

// metadata returns the value of key, whatever the case the service gave
// it.
func metadata(m map[string]*string, key string) string {
	for k, v := range m {
		if strings.EqualFold(k, key) && v != nil {
			return *v
		}
	}
	return ""
}

// line is one entry of a blob as read.
type line struct {
	t       time.Time
	payload []byte
}

// cursor is a blob being merged: its entries in [from, to), from next on.
type cursor struct {
	blob  string
	order int // the blob's place in the sorted listing, for ties
	lines []line
	next  int
}

type cursors []*cursor

func (h cursors) Len() int { return len(h) }
func (h cursors) Less(i, j int) bool {
	a, b := h[i], h[j]
	if c := a.lines[a.next].t.Compare(b.lines[b.next].t); c != 0 {
		return c < 0
	}
	return a.order < b.order
}
func (h cursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// merge yields the entries of blobs (sorted by first entry) in time
// order, reading each blob when the merge reaches its first entry. It
// returns false when the loop stopped or an error was yielded.
func (l *Log[T]) merge(ctx context.Context, blobs []listed, from, to time.Time, yield func(Entry[T], error) bool) bool {
	if len(blobs) == 0 {
		return true
	}
	read := func(ctx context.Context, b listed) (*cursor, error) { return l.read(ctx, b.name, from, to) }
	next, stop := iter.Pull2(prefetch.Map(ctx, prefetch.Slice(blobs), l.conc, read))
	defer stop()
	var h cursors
	opened := 0
	for {
		// Open every blob whose first entry is not after the earliest
		// entry at hand: no unopened blob holds an earlier one.
		for opened < len(blobs) && (len(h) == 0 || !blobs[opened].first.After(h[0].lines[h[0].next].t)) {
			c, err, _ := next()
			if err != nil {
				yield(Entry[T]{}, err)
				return false
			}
			c.order = opened
			opened++
			if len(c.lines) > 0 {
				heap.Push(&h, c)
			}
		}
		if len(h) == 0 {
			return true
		}
		c := h[0]
		ln := c.lines[c.next]
		v, err := l.decode(ln.payload)
		if err != nil {
			yield(Entry[T]{}, fmt.Errorf("%w: blob %s, entry at %s: %v", ErrCorrupt, c.blob, ln.t.Format(timeLayout), err))
			return false
		}
		if c.next++; c.next == len(c.lines) {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if !yield(Entry[T]{Time: ln.t, Value: v, Blob: c.blob}, nil) {
			return false
		}
	}
}

// read downloads a blob whole and returns its entries in [from, to). It
// never holds more than MaxBlobSize bytes: a larger blob (grown since it
// was listed) is refused from its Content-Length, or as it is read.
func (l *Log[T]) read(ctx context.Context, name string, from, to time.Time) (*cursor, error) {
	resp, err := l.c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("bloblog: reading blob %s: %w", name, redact.Error(err))
	}
	defer resp.Body.Close()
	tooLarge := fmt.Errorf("%w: blob %s holds more than MaxBlobSize (%d bytes); not read", ErrTooLarge, name, l.maxBlob)
	var buf bytes.Buffer
	if resp.ContentLength != nil {
		if *resp.ContentLength > l.maxBlob {
			return nil, tooLarge
		}
		buf.Grow(int(max(*resp.ContentLength, 0)))
	}
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, l.maxBlob+1)); err != nil {
		return nil, fmt.Errorf("bloblog: reading blob %s: %w", name, redact.Error(err))
	}
	if int64(buf.Len()) > l.maxBlob {
		return nil, tooLarge
	}
	c := &cursor{blob: name}
	data := buf.Bytes()
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end+1 > l.maxLine() {
			return nil, fmt.Errorf("%w: blob %s, byte %d: a line longer than one append (%d bytes)", ErrTooLarge, name, off, l.maxLine())
		}
		if end < 0 {
			return nil, fmt.Errorf("%w: blob %s ends without a line break at byte %d", ErrCorrupt, name, off)
		}
		ln := data[off : off+end]
		if len(ln) < len(timeLayout)+1 || ln[len(timeLayout)] != ' ' {
			return nil, fmt.Errorf("%w: blob %s, byte %d: no time", ErrCorrupt, name, off)
		}
		t, err := time.Parse(timeLayout, string(ln[:len(timeLayout)]))
		if err != nil {
			return nil, fmt.Errorf("%w: blob %s, byte %d: %v", ErrCorrupt, name, off, err)
		}
		if !t.Before(from) && t.Before(to) {
			c.lines = append(c.lines, line{t, ln[len(timeLayout)+1:]})
		}
		off += end + 1
	}
	return c, nil
}

// The operations of this package, for telemetry.
var (
	opFlush = obs.Write("bloblog.Flush")
	opClose = obs.Write("bloblog.Close")
	opRange = obs.Read("bloblog.Range")
)
