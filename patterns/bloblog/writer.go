package bloblog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/retry"
)

const (
	// defaultFlushSize is WriterOptions.FlushSize's default.
	defaultFlushSize = 1 << 20
	// defaultFlushInterval is WriterOptions.FlushInterval's default.
	defaultFlushInterval = time.Second
	// defaultMaxBlobSize is Options.MaxBlobSize's default: blobs roll at
	// 64 MiB, which bounds what a reader holds per blob.
	defaultMaxBlobSize = 64 << 20
)

// WriterOptions configures a Writer. A nil *WriterOptions means defaults.
type WriterOptions struct {
	// ID names the writer in its blobs' names (<ID>-<sequence>.log), so
	// that each writer has its own sequence space: 1 to 64 letters,
	// digits, '-' or '_'. Default: 8 random hex digits. Writers sharing an
	// ID (a process restarted with a fixed ID, or a mistake) still never
	// write into one blob: a writer creates each blob only if absent and
	// appends only to blobs it created.
	ID string
	// FlushSize starts a flush when this many bytes are buffered, 1 to
	// MaxBlockSize. Default: 1 MiB.
	FlushSize int
	// FlushInterval flushes what is buffered at least this often, so an
	// entry waits at most about this long. Default: 1 s;
	// negative: only by size, Flush and Close.
	FlushInterval time.Duration
	// MaxBuffered makes Append wait while this many bytes wait to be
	// written (storage slower than the appends, or failing), at least
	// FlushSize. Default: 4 × FlushSize.
	MaxBuffered int
	// MaxBlobSize rolls to the next blob (sequence number) before a blob
	// passes this size, 1 KiB to the Log's Options.MaxBlobSize. Default:
	// the Log's Options.MaxBlobSize.
	MaxBlobSize int64
	// MaxBlocks rolls to the next blob before a blob takes more appends,
	// 1 to MaxBlocks. Default: MaxBlocks.
	MaxBlocks int
	// Now is the clock that times entries. Default: time.Now.
	Now func() time.Time
	// Tick, if set, replaces the FlushInterval timer: the writer flushes
	// on each value received (for tests).
	Tick <-chan time.Time
}

// Writer appends entries to a Log: Append buffers, and a flush writes the
// buffered entries to the append blob of their hour, one append per up
// to MaxBlockSize bytes. Flushes happen when FlushSize bytes are
// buffered, every FlushInterval, on Flush and on Close. It is safe for
// concurrent use.
type Writer[T any] struct {
	log         *Log[T]
	id, nonce   string
	flushSize   int
	maxBuffered int
	maxBlob     int64
	maxBlocks   int
	maxLine     int
	now         func() time.Time

	mu      sync.Mutex
	buf     []byte
	lines   []pending
	last    time.Time // the latest entry's time: times never go back
	closed  bool
	lastErr error         // the last background flush's error
	space   chan struct{} // closed (and replaced) when a flush makes room

	flushMu sync.Mutex // one flush at a time; guards what follows
	cur     *open      // the blob appended to, nil before the first
	seqHour time.Time  // the hour seq counts in
	seq     int        // the next sequence number to create in seqHour

	hook   func(step string) error // tests: a crash at a step boundary
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc
}

// pending is a buffered entry: its time and its line's length.
type pending struct {
	t time.Time
	n int
}

// open is the blob a writer appends to.
type open struct {
	c           *appendblob.Client
	name        string
	hour        time.Time
	size        int64 // the bytes this writer knows it stored
	blocks      int
	first, last time.Time
	foreign     bool // another writer's bytes follow this one's: roll
}

// NewWriter starts a writer of the log, with its flushing goroutine; Close
// stops it. It sends nothing until the first flush.
func (l *Log[T]) NewWriter(opts *WriterOptions) (*Writer[T], error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	w := &Writer[T]{log: l, id: o.ID, flushSize: o.FlushSize, maxBuffered: o.MaxBuffered, maxBlob: o.MaxBlobSize, maxBlocks: o.MaxBlocks, now: o.Now,
		space: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if w.id == "" {
		w.id = randomHex(4)
	} else if !validID(w.id) {
		return nil, fmt.Errorf("%w: writer ID %q: want 1 to 64 letters, digits, '-' or '_'", ErrInvalid, w.id)
	}
	w.nonce = randomHex(16)
	switch {
	case w.flushSize == 0:
		w.flushSize = defaultFlushSize
	case w.flushSize < 0 || w.flushSize > MaxBlockSize:
		return nil, fmt.Errorf("%w: FlushSize %d outside 1..%d", ErrInvalid, w.flushSize, MaxBlockSize)
	}
	switch {
	case w.maxBuffered == 0:
		w.maxBuffered = 4 * w.flushSize
	case w.maxBuffered < w.flushSize:
		return nil, fmt.Errorf("%w: MaxBuffered %d is less than FlushSize %d", ErrInvalid, w.maxBuffered, w.flushSize)
	}
	switch {
	case w.maxBlob == 0:
		w.maxBlob = l.maxBlob
	case w.maxBlob < 1<<10 || w.maxBlob > l.maxBlob:
		return nil, fmt.Errorf("%w: MaxBlobSize %d outside 1 KiB..%d (the Log's Options.MaxBlobSize)", ErrInvalid, w.maxBlob, l.maxBlob)
	}
	switch {
	case w.maxBlocks == 0:
		w.maxBlocks = MaxBlocks
	case w.maxBlocks < 0 || w.maxBlocks > MaxBlocks:
		return nil, fmt.Errorf("%w: MaxBlocks %d outside 1..%d", ErrInvalid, w.maxBlocks, MaxBlocks)
	}
	w.maxLine = int(min(int64(MaxBlockSize), w.maxBlob))
	if w.now == nil {
		w.now = time.Now
	}
	tick := o.Tick
	interval := o.FlushInterval
	if interval == 0 {
		interval = defaultFlushInterval
	}
	var ticker *time.Ticker
	if tick == nil && interval > 0 {
		ticker = time.NewTicker(interval)
		tick = ticker.C
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx, tick, ticker)
	return w, nil
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ID returns the writer's ID.
func (w *Writer[T]) ID() string { return w.id }

// run is the flushing goroutine: it flushes when Append finds FlushSize
// bytes buffered, and on every tick.
func (w *Writer[T]) run(ctx context.Context, tick <-chan time.Time, ticker *time.Ticker) {
	defer close(w.done)
	if ticker != nil {
		defer ticker.Stop()
	}
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		case <-tick:
		}
		err := w.background(ctx)
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
	}
}

// Append adds v to the buffer, timed by the writer's clock (never before
// the writer's previous entry), and returns: it sends nothing itself. It
// waits while MaxBuffered bytes are buffered, until a flush makes room or
// ctx ends. An entry Append accepted is written by a later flush, or
// reported by Close. ErrInvalid for an entry json cannot encode, too long
// for one append, or (a Log[[]byte]) with a line break; ErrClosed after
// Close.
func (w *Writer[T]) Append(ctx context.Context, v T) error {
	payload, err := w.log.encode(v)
	if err != nil {
		return err
	}
	n := len(payload) + lineOverhead
	if n > w.maxLine {
		return fmt.Errorf("%w: an entry of %d bytes, more than one append or blob holds (%d with its time)", ErrInvalid, n, w.maxLine)
	}
	w.mu.Lock()
	for len(w.buf) > 0 && len(w.buf)+n > w.maxBuffered && !w.closed {
		space, lastErr := w.space, w.lastErr
		w.mu.Unlock()
		w.signal()
		select {
		case <-space:
		case <-ctx.Done():
			return fmt.Errorf("bloblog: append: the buffer is full (last flush error: %v): %w", lastErr, ctx.Err())
		}
		w.mu.Lock()
	}
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	t := w.now().UTC()
	if t.Before(w.last) {
		t = w.last
	}
	w.last = t
	w.buf = appendLine(w.buf, t, payload)
	w.lines = append(w.lines, pending{t, n})
	if len(w.buf) >= w.flushSize {
		w.signal()
	}
	return nil
}

// signal asks the flushing goroutine for a flush.
func (w *Writer[T]) signal() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Flush writes every entry buffered so far and returns when they are
// stored, or with the error that stopped it (the entries not written stay
// buffered, in order, for the next flush). One append per up to
// MaxBlockSize bytes of each hour; +1 request to create a blob when an
// hour starts or a blob is full, +1 to record the full blob's last entry
// time.
func (w *Writer[T]) Flush(ctx context.Context) (err error) {
	ctx, sp := w.log.obs.Start(ctx, opFlush, "", "")
	defer func() { sp.EndWrite(err, false) }()
	return w.flush(ctx)
}

// background is a flush of the flushing goroutine: traced (as Flush) only
// when entries are buffered, so that idle ticks record nothing.
func (w *Writer[T]) background(ctx context.Context) error {
	w.mu.Lock()
	n := len(w.lines)
	w.mu.Unlock()
	if n == 0 {
		return w.flush(ctx)
	}
	return w.Flush(ctx)
}

// Close stops the writer: Append then fails with ErrClosed, and Close
// flushes everything buffered and records the last entry time of the
// writer's blob. A nil error means every entry Append accepted is stored.
// On an error the entries not written stay buffered, and Close may be
// called again to retry.
func (w *Writer[T]) Close(ctx context.Context) (err error) {
	ctx, sp := w.log.obs.Start(ctx, opClose, "", "")
	defer func() { sp.EndWrite(err, false) }()
	w.mu.Lock()
	first := !w.closed
	w.closed = true
	close(w.space) // wake waiting Appends: they fail with ErrClosed
	w.space = make(chan struct{})
	w.mu.Unlock()
	if first {
		close(w.stop)
		select {
		case <-w.done:
		case <-ctx.Done():
			w.cancel() // the background flush in progress, if any
			<-w.done
		}
		w.cancel()
	}
	if err := w.flush(ctx); err != nil {
		w.mu.Lock()
		n := len(w.lines)
		w.mu.Unlock()
		return fmt.Errorf("bloblog: close: %d entries not written: %w", n, err)
	}
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.seal(ctx)
	return nil
}

// step runs the test hook at a step boundary; an error is a crash there.
func (w *Writer[T]) step(name string) error {
	if w.hook != nil {
		return w.hook(name)
	}
	return nil
}

// flush writes the buffer; what it cannot write goes back to the front of
// the buffer.
func (w *Writer[T]) flush(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	buf, lines := w.buf, w.lines
	w.buf, w.lines = nil, nil
	w.mu.Unlock()
	written, off, err := w.write(ctx, buf, lines)
	w.mu.Lock()
	if written < len(lines) {
		w.buf = append(buf[off:], w.buf...)
		w.lines = append(lines[written:], w.lines...)
	}
	if written > 0 {
		close(w.space)
		w.space = make(chan struct{})
	}
	w.mu.Unlock()
	if err == nil && w.cur != nil && w.now().UTC().Truncate(time.Hour).After(w.cur.hour) {
		w.seal(ctx) // the hour is over
	}
	return err
}

// write appends lines (whose text is buf) to the blobs of their hours and
// returns how many lines, and bytes, it wrote.
func (w *Writer[T]) write(ctx context.Context, buf []byte, lines []pending) (int, int, error) {
	off := 0
	for i := 0; i < len(lines); {
		h := lines[i].t.Truncate(time.Hour)
		if w.cur == nil || w.cur.foreign || !w.cur.hour.Equal(h) || w.cur.blocks >= w.maxBlocks || w.cur.size+int64(lines[i].n) > w.maxBlob {
			w.seal(ctx)
			if err := w.create(ctx, h, lines[i].t); err != nil {
				return i, off, err
			}
		}
		room := int(min(int64(MaxBlockSize), w.maxBlob-w.cur.size))
		j, n := i, 0
		for j < len(lines) && n+lines[j].n <= room && lines[j].t.Truncate(time.Hour).Equal(h) {
			n += lines[j].n
			j++
		}
		err := w.append(ctx, buf[off:off+n], lines[j-1].t)
		if errors.Is(err, errForeign) {
			w.cur = nil // another writer appended to this blob: roll, write the block again
			continue
		}
		if err != nil {
			return i, off, err
		}
		off += n
		i = j
	}
	return len(lines), off, nil
}

// create starts the next blob of the hour starting at h, whose first
// entry is at first: created only if absent, with the writer's nonce in
// its metadata. A name taken by another writer (a 409 whose blob has
// another nonce) moves to the next sequence number; a 409 whose blob has
// this writer's nonce is its own create, resent after a lost response.
func (w *Writer[T]) create(ctx context.Context, h, first time.Time) error {
	if !w.seqHour.Equal(h) {
		w.seqHour, w.seq = h, 1
	}
	for {
		if err := w.step("create"); err != nil {
			return err
		}
		name := fmt.Sprintf("%s%s-%06d.log", w.log.hourPrefix(h), w.id, w.seq)
		c := w.log.c.NewAppendBlobClient(name)
		w.seq++
		meta := map[string]*string{metaWriter: &w.id, metaNonce: &w.nonce, metaFirst: ptr(first.Format(timeLayout))}
		_, err := c.Create(ctx, &appendblob.CreateOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptr(azcore.ETagAny)}},
			Metadata:         meta,
		})
		if err == nil {
			w.cur = &open{c: c, name: name, hour: h, first: first}
			return nil
		}
		if !bloberror.HasCode(err, bloberror.BlobAlreadyExists) {
			return fmt.Errorf("bloblog: creating blob %s: %w", name, redact.Error(err))
		}
		props, perr := c.GetProperties(ctx, nil)
		if perr != nil {
			return fmt.Errorf("bloblog: blob %s exists; reading whose it is: %w", name, redact.Error(perr))
		}
		if metadata(props.Metadata, metaNonce) == w.nonce {
			w.cur = &open{c: c, name: name, hour: h, first: first, size: deref(props.ContentLength), blocks: int(deref(props.BlobCommittedBlockCount))}
			return nil
		}
	}
}

// errForeign: the blob holds bytes this writer did not append where its
// block was to go; the block was not appended.
var errForeign = errors.New("bloblog: another writer appended to the blob")

// append appends data (whole lines, the last of them timed last) at the
// end of the current blob, conditioned on the blob's length being what
// this writer wrote (AppendPosition), so no attempt can apply twice or
// after another writer's bytes. When an attempt may have been applied
// without the writer learning so (a lost response, whose resend answers
// 412 AppendPositionConditionNotMet; a 500; a transport error), or a
// 412 shows the blob longer than the writer knew (an earlier flush's
// append that failed uncertainly, then applied), it reads what the blob
// holds at the position: the block, or a first part of it ending at a
// line break (stored: it appends the rest), nothing (it appends again,
// under the same condition), or other bytes (errForeign). On an error the
// writer's idea of the blob's length stays where it was, so the next
// flush, appending the same lines there, finds and skips what was stored.
func (w *Writer[T]) append(ctx context.Context, data []byte, last time.Time) error {
	cur := w.cur
	pos, rest := cur.size, data
	for attempt := 1; ; attempt++ {
		if err := w.step("append"); err != nil {
			return err
		}
		_, err := cur.c.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(rest)), &appendblob.AppendBlockOptions{
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: &pos},
		})
		if err == nil {
			cur.size, cur.last = pos+int64(len(rest)), last
			cur.blocks++
			return nil
		}
		if !mayHaveApplied(err) || ctx.Err() != nil {
			return fmt.Errorf("bloblog: appending %d bytes to blob %s at %d: %w", len(rest), cur.name, pos, redact.Error(err))
		}
		k, blocks, more, err := w.stored(ctx, pos, rest)
		if err != nil {
			return err
		}
		pos, rest = pos+int64(k), rest[k:]
		if len(rest) == 0 {
			cur.size, cur.blocks, cur.last, cur.foreign = pos, blocks, last, more
			return nil
		}
		if attempt == 3 {
			return fmt.Errorf("bloblog: appending to blob %s: %d bytes still not stored after %d attempts", cur.name, len(rest), attempt)
		}
	}
}

// mayHaveApplied reports whether a failed append may have been applied,
// or the blob may hold an earlier one: the retry policy's
// ErrOutcomeUnknown, a 412 to the append position, a 500, 502 or 504, or
// a transport error.
func mayHaveApplied(err error) bool {
	var re *azcore.ResponseError
	switch {
	case errors.Is(err, retry.ErrOutcomeUnknown), bloberror.HasCode(err, bloberror.AppendPositionConditionNotMet):
		return true
	case errors.As(err, &re):
		return retrycore.MayHaveApplied(re.StatusCode)
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// stored returns how many bytes of data the current blob holds at pos: 0
// when it ends at pos, or a first part of data ending at a line break (or
// all of it). It also returns the blob's committed block count, and
// whether other bytes follow data's (the blob must not be appended to
// again). Anything else at pos is errForeign.
func (w *Writer[T]) stored(ctx context.Context, pos int64, data []byte) (k, blocks int, more bool, err error) {
	cur := w.cur
	props, err := cur.c.GetProperties(ctx, nil)
	if err != nil {
		return 0, 0, false, fmt.Errorf("bloblog: reading what blob %s holds: %w", cur.name, redact.Error(err))
	}
	size, blocks := deref(props.ContentLength), int(deref(props.BlobCommittedBlockCount))
	switch {
	case size == pos:
		return 0, blocks, false, nil
	case size < pos:
		return 0, 0, false, errForeign
	}
	n := min(size-pos, int64(len(data)))
	resp, err := cur.c.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: pos, Count: n}})
	if err != nil {
		return 0, 0, false, fmt.Errorf("bloblog: reading what blob %s holds: %w", cur.name, redact.Error(err))
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, n)) // n <= len(data): at most one append
	if err != nil {
		return 0, 0, false, fmt.Errorf("bloblog: reading what blob %s holds: %w", cur.name, redact.Error(err))
	}
	if !bytes.Equal(got, data[:n]) || data[n-1] != '\n' {
		return 0, 0, false, errForeign
	}
	return int(n), blocks, size > pos+n, nil
}

// seal records the current blob's last entry time in its metadata (a
// reader then skips it for ranges after it) and forgets it. Best effort:
// without it, a reader reads the blob for every range of its hour from
// its first entry on.
func (w *Writer[T]) seal(ctx context.Context) {
	cur := w.cur
	w.cur = nil
	if cur == nil || cur.last.IsZero() || w.step("seal") != nil {
		return
	}
	meta := map[string]*string{metaWriter: &w.id, metaNonce: &w.nonce, metaFirst: ptr(cur.first.Format(timeLayout)), metaLast: ptr(cur.last.Format(timeLayout))}
	_, _ = cur.c.SetMetadata(ctx, meta, nil)
}

func ptr[V any](v V) *V { return &v }

func deref[V int32 | int64](p *V) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}
