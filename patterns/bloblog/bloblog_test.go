package bloblog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/bloblog"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// Request is the guide's log entry: one request served.
type Request struct {
	Path   string
	Status int
	Writer int
	Seq    int
}

// clock is a clock the test moves; each reading may also advance it by a
// step.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// fixture is a container seen through the rig's fault-injecting client
// (the log's) and through a clean one (the truth).
type fixture struct {
	r     *testrig.Rig
	ft    *faults.Transport // the rig's
	c     *container.Client
	clean *container.Client
}

// newFixture returns a fixture whose log client has the rig's retry
// policy, testrig.Fast, or policy if one is given.
func newFixture(t testing.TB, policy ...retry.Policy) *fixture {
	t.Helper()
	r := testrig.New(t)
	f := &fixture{r: r, ft: r.Faults}
	if len(policy) == 0 {
		f.c = r.Container()
	} else {
		o := &azblob.ClientOptions{}
		o.Transport = r.Faults
		policy[0].ApplyTo(&o.ClientOptions)
		f.c = r.Env.Container(o)
	}
	clean, err := container.NewClientFromConnectionString(r.ConnectionString, containerName(f.c), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.clean = clean
	f.ft.Reset()
	return f
}

func newLog[T any](t testing.TB, f *fixture) *bloblog.Log[T] {
	t.Helper()
	l, err := bloblog.New[T](f.c, &bloblog.Options{Prefix: "logs/web"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newWriter starts a writer and closes it when the test ends (if the test
// has not).
func newWriter[T any](t testing.TB, l *bloblog.Log[T], o *bloblog.WriterOptions) *bloblog.Writer[T] {
	t.Helper()
	w, err := l.NewWriter(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bloblog.SetHook(w, nil)
		_ = w.Close(context.Background())
	})
	return w
}

// blob is a stored blob: its content and metadata.
type blob struct {
	content string
	meta    map[string]string
}

// blobs returns every blob in the container.
func (f *fixture) blobs(t testing.TB) map[string]blob {
	t.Helper()
	ctx := context.Background()
	out := map[string]blob{}
	pager := f.clean.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Segment.BlobItems {
			resp, err := f.clean.NewBlobClient(*item.Name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			meta := map[string]string{}
			for k, v := range item.Metadata {
				meta[strings.ToLower(k)] = *v
			}
			out[*item.Name] = blob{string(b), meta}
		}
	}
	return out
}

func collect[T any](t testing.TB, l *bloblog.Log[T], from, to time.Time) []bloblog.Entry[T] {
	t.Helper()
	var out []bloblog.Entry[T]
	for e, err := range l.Range(context.Background(), from, to) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

var at1805 = time.Date(2014, 7, 31, 18, 5, 0, 0, time.UTC)

// TestNamesAndMetadata: the blobs are named as Storage Analytics names
// its logs, with the writer's sequence space, hold one line per entry,
// and record their first and last entry times; Append sends nothing, a
// flush creates the blob and appends once, Close records the last time.
func TestNamesAndMetadata(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	clk := &clock{}
	w := newWriter(t, l, &bloblog.WriterOptions{ID: "web1", FlushInterval: -1, Now: clk.Now})
	ctx := context.Background()
	f.ft.Reset()
	for i := range 3 {
		clk.Set(at1805.Add(time.Duration(i) * time.Millisecond))
		if err := w.Append(ctx, Request{Path: fmt.Sprint("/p", i), Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("Append sent %d requests", n)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 2 {
		t.Fatalf("the first flush sent %d requests, want 2 (create, append)", n)
	}
	f.ft.Reset()
	clk.Set(at1805.Add(3 * time.Millisecond))
	if err := w.Append(ctx, Request{Path: "/p3"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("the second flush sent %d requests, want 1 (append)", n)
	}
	if err := w.Flush(ctx); err != nil || f.ft.Count() != 1 {
		t.Fatalf("an empty flush: %v, %d requests", err, f.ft.Count()-1)
	}
	f.ft.Reset()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("Close sent %d requests, want 1 (the last time)", n)
	}
	if err := w.Append(ctx, Request{}); !errors.Is(err, bloblog.ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	all := f.blobs(t)
	const name = "logs/web/2014/07/31/1800/web1-000001.log"
	b, ok := all[name]
	if len(all) != 1 || !ok {
		t.Fatalf("blobs %v, want %s", slices.Collect(mapKeys(all)), name)
	}
	want := `2014-07-31T18:05:00.000000000Z {"Path":"/p0","Status":200,"Writer":0,"Seq":0}
2014-07-31T18:05:00.001000000Z {"Path":"/p1","Status":200,"Writer":0,"Seq":0}
2014-07-31T18:05:00.002000000Z {"Path":"/p2","Status":200,"Writer":0,"Seq":0}
2014-07-31T18:05:00.003000000Z {"Path":"/p3","Status":0,"Writer":0,"Seq":0}
`
	if b.content != want {
		t.Fatalf("content:\n%s\nwant:\n%s", b.content, want)
	}
	if b.meta["first"] != "2014-07-31T18:05:00.000000000Z" || b.meta["last"] != "2014-07-31T18:05:00.003000000Z" || b.meta["writer"] != "web1" {
		t.Fatalf("metadata %v", b.meta)
	}
	got := collect(t, l, at1805, at1805.Add(time.Hour))
	if len(got) != 4 || got[3].Value.Path != "/p3" || !got[1].Time.Equal(at1805.Add(time.Millisecond)) || got[0].Blob != name {
		t.Fatalf("Range = %+v", got)
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// steps returns a hook that reports each step on a channel.
func steps() (chan string, func(string) error) {
	ch := make(chan string, 100)
	return ch, func(s string) error { ch <- s; return nil }
}

// TestFlushTriggers: a flush starts when FlushSize bytes are buffered, on
// each tick of the interval, and on Close.
func TestFlushTriggers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	clk := &clock{t: at1805, step: time.Millisecond}
	line := len(`2014-07-31T18:05:00.000000000Z {"Path":"/a","Status":200,"Writer":0,"Seq":0}` + "\n")

	// By size: the third entry passes FlushSize; the flushing goroutine
	// (no interval) appends.
	w := newWriter(t, l, &bloblog.WriterOptions{ID: "size", FlushSize: 3 * line, FlushInterval: -1, Now: clk.Now})
	seen, hook := steps()
	bloblog.SetHook(w, hook)
	for range 2 {
		_ = w.Append(ctx, Request{Path: "/a", Status: 200})
	}
	if len(seen) != 0 {
		t.Fatal("a flush started below FlushSize")
	}
	_ = w.Append(ctx, Request{Path: "/a", Status: 200})
	if s := <-seen; s != "create" {
		t.Fatalf("first step %q", s)
	}
	if s := <-seen; s != "append" {
		t.Fatalf("second step %q", s)
	}
	if err := w.Flush(ctx); err != nil { // waits for the flush in progress
		t.Fatal(err)
	}
	if n := strings.Count(f.blobs(t)["logs/web/2014/07/31/1800/size-000001.log"].content, "\n"); n != 3 {
		t.Fatalf("%d entries stored after the size flush", n)
	}

	// By interval: each tick flushes; a second tick is received only
	// when the first one's flush is done.
	tick := make(chan time.Time)
	w2 := newWriter(t, l, &bloblog.WriterOptions{ID: "tick", Now: clk.Now, Tick: tick})
	_ = w2.Append(ctx, Request{Path: "/b"})
	tick <- time.Time{}
	tick <- time.Time{}
	if n := strings.Count(f.blobs(t)["logs/web/2014/07/31/1800/tick-000001.log"].content, "\n"); n != 1 {
		t.Fatalf("%d entries stored after a tick", n)
	}

	// On Close.
	w3 := newWriter(t, l, &bloblog.WriterOptions{ID: "close", FlushInterval: -1, Now: clk.Now})
	for range 5 {
		_ = w3.Append(ctx, Request{Path: "/c"})
	}
	if err := w3.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(f.blobs(t)["logs/web/2014/07/31/1800/close-000001.log"].content, "\n"); n != 5 {
		t.Fatalf("%d entries stored after Close", n)
	}
}

// TestRoll: a writer moves to its next sequence number before a blob's
// block count or size limit, and to the next hour's folder when the hour
// turns, recording each full blob's last entry time.
func TestRoll(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[[]byte](t, f)
	ctx := context.Background()
	clk := &clock{t: at1805}
	entry := bytes.Repeat([]byte("x"), 100) // a 132-byte line

	w := newWriter(t, l, &bloblog.WriterOptions{ID: "blocks", MaxBlocks: 2, FlushInterval: -1, Now: clk.Now})
	for range 5 {
		_ = w.Append(ctx, entry)
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w2 := newWriter(t, l, &bloblog.WriterOptions{ID: "size", MaxBlobSize: 1 << 10, FlushInterval: -1, Now: clk.Now})
	for range 10 {
		_ = w2.Append(ctx, entry)
	}
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Set(at1805.Add(time.Hour))
	_ = w2.Append(ctx, entry)
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	all := f.blobs(t)
	count := func(name string) int { return strings.Count(all[name].content, "\n") }
	for name, want := range map[string]int{
		"logs/web/2014/07/31/1800/blocks-000001.log": 2,
		"logs/web/2014/07/31/1800/blocks-000002.log": 2,
		"logs/web/2014/07/31/1800/blocks-000003.log": 1,
		"logs/web/2014/07/31/1800/size-000001.log":   7, // 7 x 132 bytes <= 1 KiB
		"logs/web/2014/07/31/1800/size-000002.log":   3,
		"logs/web/2014/07/31/1900/size-000001.log":   1,
	} {
		if got := count(name); got != want {
			t.Errorf("%s: %d entries, want %d", name, got, want)
		}
	}
	if len(all) != 6 {
		t.Errorf("%d blobs, want 6", len(all))
	}
	for _, name := range []string{"logs/web/2014/07/31/1800/blocks-000001.log", "logs/web/2014/07/31/1800/size-000002.log"} {
		if all[name].meta["last"] == "" {
			t.Errorf("%s: no last entry time after the roll", name)
		}
	}
	if got := collect(t, l, at1805, at1805.Add(2*time.Hour)); len(got) != 16 {
		t.Fatalf("Range: %d entries, want 16", len(got))
	}
}

// TestFourWriters: four writers append 10,000 entries each, concurrently,
// across an hour boundary; the range returns all 40,000, once each, in
// time order, each writer's in the order it appended them.
func TestFourWriters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 10, 59, 59, 980_000_000, time.UTC) // the hour turns after 20,000 µs
	clk := &clock{t: base, step: time.Microsecond}
	const writers, per = 4, 10_000
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wr := newWriter(t, l, &bloblog.WriterOptions{FlushSize: 64 << 10, Now: clk.Now})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if err := wr.Append(ctx, Request{Path: "/x", Status: 200, Writer: w, Seq: i}); err != nil {
					errs <- err
					return
				}
			}
			errs <- wr.Close(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, l, base.Add(-time.Hour), base.Add(time.Hour))
	if len(got) != writers*per {
		t.Fatalf("%d entries, want %d", len(got), writers*per)
	}
	next := make([]int, writers)
	hours := map[string]bool{}
	for i, e := range got {
		if i > 0 && e.Time.Before(got[i-1].Time) {
			t.Fatalf("entry %d at %v before entry %d at %v", i, e.Time, i-1, got[i-1].Time)
		}
		if e.Value.Seq != next[e.Value.Writer] {
			t.Fatalf("writer %d: entry %d where %d was next", e.Value.Writer, e.Value.Seq, next[e.Value.Writer])
		}
		next[e.Value.Writer]++
		hours[e.Blob[:len("logs/web/2024/01/01/1000")]] = true
	}
	if len(hours) != 2 {
		t.Fatalf("entries in hours %v, want 10:00 and 11:00", hours)
	}
}

// isAppend matches append requests; isCreate blob creates.
func isAppend(r *http.Request) bool {
	return r.Method == http.MethodPut && r.URL.Query().Get("comp") == "appendblock"
}
func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPut && r.URL.Query().Get("comp") == ""
}

// TestLostResponses loses the responses of creates, appends and the
// metadata update after the service applied them, and fails appends in
// ways that may or may not have applied: every entry is stored exactly
// once, and no flush reports a false failure.
func TestLostResponses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	clk := &clock{t: at1805, step: time.Millisecond}
	w := newWriter(t, l, &bloblog.WriterOptions{ID: "lossy", FlushInterval: -1, MaxBlocks: 3, Now: clk.Now})
	lose := func(m func(*http.Request) bool) { f.ft.Inject(faults.Fault{Match: m, LoseResponse: true}) }
	n := 0
	for round := range 8 {
		switch round % 4 {
		case 0:
			lose(isCreate)
			lose(isAppend)
		case 1:
			lose(isAppend)
			lose(isAppend)
		case 2:
			f.ft.Inject(faults.Fault{Match: isAppend, Status: http.StatusInternalServerError}) // not applied; resent
		case 3:
			lose(func(r *http.Request) bool { return r.URL.Query().Get("comp") == "metadata" })
		}
		for range 3 {
			if err := w.Append(ctx, Request{Seq: n}); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	injected := 0
	for _, r := range f.ft.Requests() {
		if r.Injected {
			injected++
		}
	}
	if injected != 12 {
		t.Fatalf("%d faults used, want all 12", injected)
	}
	got := collect(t, l, at1805, at1805.Add(time.Hour))
	if len(got) != n {
		t.Fatalf("%d entries stored, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Value.Seq != i {
			t.Fatalf("entry %d is %d", i, e.Value.Seq)
		}
	}

	// Without the retry policy's resend: a transport error that may have
	// applied is settled by reading the blob (not applied: sent again;
	// applied: not sent again).
	f2 := newFixture(t, retry.Policy{})
	l2 := newLog[Request](t, f2)
	w2 := newWriter(t, l2, &bloblog.WriterOptions{ID: "single", FlushInterval: -1, Now: clk.Now})
	f2.ft.Inject(faults.Fault{Match: isAppend, Err: faults.ErrLost}) // not forwarded: not applied
	_ = w2.Append(ctx, Request{Seq: 0})
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	f2.ft.Inject(faults.Fault{Match: isAppend, LoseResponse: true}) // applied
	_ = w2.Append(ctx, Request{Seq: 1})
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, l2, at1805, at1805.Add(time.Hour)); len(got) != 2 || got[0].Value.Seq != 0 || got[1].Value.Seq != 1 {
		t.Fatalf("entries %+v", got)
	}
}

// TestSameID: two writers with the same ID never append to one blob:
// each creates its blobs only if absent.
func TestSameID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	clk := &clock{t: at1805, step: time.Millisecond}
	a := newWriter(t, l, &bloblog.WriterOptions{ID: "dup", FlushInterval: -1, Now: clk.Now})
	b := newWriter(t, l, &bloblog.WriterOptions{ID: "dup", FlushInterval: -1, Now: clk.Now})
	for i := range 4 {
		w, id := a, 0
		if i%2 == 1 {
			w, id = b, 1
		}
		_ = w.Append(ctx, Request{Writer: id, Seq: i})
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all := f.blobs(t)
	if len(all) != 2 {
		t.Fatalf("%d blobs, want 2", len(all))
	}
	for name, bl := range all {
		want := `"Writer":0`
		if strings.HasSuffix(name, "-000002.log") {
			want = `"Writer":1`
		}
		if strings.Count(bl.content, want) != 2 {
			t.Fatalf("%s holds another writer's entries:\n%s", name, bl.content)
		}
	}
}

// TestCloseLosesNothing: entries accepted by Append are all stored once
// Close returns nil; a Close that fails keeps them, and a later Close
// stores them.
func TestCloseLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	clk := &clock{t: at1805, step: time.Millisecond}
	w := newWriter(t, l, &bloblog.WriterOptions{ID: "c", FlushInterval: -1, Now: clk.Now})
	failing := errors.New("storage down")
	bloblog.SetHook(w, func(s string) error {
		if s == "append" {
			return failing
		}
		return nil
	})
	for i := range 100 {
		if err := w.Append(ctx, Request{Seq: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); !errors.Is(err, failing) || !strings.Contains(err.Error(), "100 entries not written") {
		t.Fatalf("Close with storage down = %v", err)
	}
	bloblog.SetHook(w, nil)
	for range 3 {
		f.ft.Inject(faults.Fault{Match: isAppend, Status: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"})
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := collect(t, l, at1805, at1805.Add(time.Hour))
	if len(got) != 100 || got[99].Value.Seq != 99 {
		t.Fatalf("%d entries after the second Close", len(got))
	}
}

// TestBackpressure: Append waits while MaxBuffered bytes are buffered and
// storage does not take them, until its context ends; then it fails, the
// entry not accepted.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[[]byte](t, f)
	ctx := context.Background()
	w := newWriter(t, l, &bloblog.WriterOptions{FlushSize: 1 << 10, MaxBuffered: 2 << 10, FlushInterval: -1})
	down := errors.New("storage down")
	bloblog.SetHook(w, func(string) error { return down })
	entry := bytes.Repeat([]byte("y"), 500)
	for range 3 { // 3 x 532 bytes: under 2 KiB
		if err := w.Append(ctx, entry); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Append(cancelled, entry); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "buffer is full") {
		t.Fatalf("Append to a full buffer = %v", err)
	}
	bloblog.SetHook(w, nil)
	if err := w.Append(ctx, entry); err != nil { // the flush it asks for makes room
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, l, time.Now().Add(-time.Hour), time.Now().Add(time.Hour)); len(got) != 4 {
		t.Fatalf("%d entries, want 4", len(got))
	}
}

// TestRangeReadsOnlyWhatItNeeds: a range lists only its hours' prefixes
// and reads only the blobs whose metadata overlaps it.
func TestRangeReadsOnlyWhatItNeeds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	clk := &clock{t: base}
	w := newWriter(t, l, &bloblog.WriterOptions{ID: "r", MaxBlocks: 1, FlushInterval: -1, Now: clk.Now})
	// Three hours, an entry every 10 minutes, a blob per entry (MaxBlocks 1).
	for i := range 18 {
		clk.Set(base.Add(time.Duration(i) * 10 * time.Minute))
		_ = w.Append(ctx, Request{Seq: i})
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	from, to := base.Add(80*time.Minute), base.Add(105*time.Minute) // 11:20 to 11:45: entries 8, 9, 10
	got := collect(t, l, from, to)
	var seqs []int
	for _, e := range got {
		seqs = append(seqs, e.Value.Seq)
	}
	if !slices.Equal(seqs, []int{8, 9, 10}) {
		t.Fatalf("Range = %v", seqs)
	}
	var lists, reads []string
	for _, r := range f.ft.Requests() {
		if strings.Contains(r.URL, "comp=list") {
			lists = append(lists, r.URL)
		} else {
			reads = append(reads, r.URL)
		}
	}
	if len(lists) != 1 || !strings.Contains(lists[0], "prefix=logs%2Fweb%2F2024%2F03%2F01%2F1100%2F") {
		t.Fatalf("listings %v, want one of the 11:00 prefix", lists)
	}
	if len(reads) != 3 {
		t.Fatalf("%d blob reads, want the 3 blobs in range: %v", len(reads), reads)
	}
}

// TestCorruptBlob: a blob under the prefix that does not hold entries is
// ErrCorrupt, never skipped silently.
func TestCorruptBlob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	ctx := context.Background()
	for i, content := range []string{"not a log line\n", "2014-07-31T18:05:00.000000000Z {\"Path\":1}\n", "2014-07-31T18:05:00.000000000Z {}"} {
		name := fmt.Sprintf("logs/web/2014/07/31/1800/bad%d-000001.log", i)
		if _, err := f.clean.NewBlockBlobClient(name).UploadBuffer(ctx, []byte(content), nil); err != nil {
			t.Fatal(err)
		}
		var last error
		for _, err := range l.Range(ctx, at1805.Add(-time.Hour), at1805.Add(time.Hour)) {
			last = err
		}
		if !errors.Is(last, bloblog.ErrCorrupt) {
			t.Fatalf("content %q: Range = %v", content, last)
		}
		if _, err := f.clean.NewBlobClient(name).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// Bad input is refused before the network.
func TestInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		for _, want := range []error{bloblog.ErrInvalid, table.ErrInvalid} {
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", what, err, want)
			}
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error's text is not one line: %q", what, err)
		}
	}
	check("nil container", second(bloblog.New[Request](nil, &bloblog.Options{Prefix: "p"})))
	check("nil container, nil options", second(bloblog.New[Request](nil, nil)))
	for _, p := range []string{"/p", "p/", "a//b", "a b", "a/../b", "/", strings.Repeat("p", 513)} {
		check(fmt.Sprintf("Prefix %q", p), second(bloblog.New[Request](f.c, &bloblog.Options{Prefix: p})))
	}
	check("Concurrency -1", second(bloblog.New[Request](f.c, &bloblog.Options{Prefix: "p", Concurrency: -1})))
	l := newLog[Request](t, f)
	for what, o := range map[string]bloblog.WriterOptions{
		"ID with a slash":      {ID: "a/b"},
		"ID too long":          {ID: strings.Repeat("i", 65)},
		"FlushSize -1":         {FlushSize: -1},
		"FlushSize over 4 MiB": {FlushSize: bloblog.MaxBlockSize + 1},
		"MaxBuffered < Flush":  {FlushSize: 100, MaxBuffered: 99},
		"MaxBlobSize 1000":     {MaxBlobSize: 1000},
		"MaxBlocks 50,001":     {MaxBlocks: bloblog.MaxBlocks + 1},
	} {
		check(what, second(l.NewWriter(&o)))
	}
	raw := newLog[[]byte](t, f)
	rw := newWriter(t, raw, &bloblog.WriterOptions{MaxBlobSize: 1 << 10, FlushInterval: -1})
	check("a line break in bytes", rw.Append(ctx, []byte("a\nb")))
	check("an entry longer than a blob", rw.Append(ctx, bytes.Repeat([]byte("z"), 1<<10)))
	type bad struct{ C chan int }
	bl := newLog[bad](t, f)
	bw := newWriter(t, bl, &bloblog.WriterOptions{FlushInterval: -1})
	check("an entry json cannot encode", bw.Append(ctx, bad{make(chan int)}))
	for _, err := range l.Range(ctx, at1805, at1805) {
		check("an empty range", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range l.Range(cancelled, at1805, at1805.Add(time.Hour)) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Range with a cancelled context: %v", err)
		}
	}
	cw := newWriter(t, l, &bloblog.WriterOptions{FlushInterval: -1})
	if err := cw.Append(ctx, Request{Seq: 7}); err != nil {
		t.Fatal(err)
	}
	if err := cw.Flush(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a cancelled context: %v", err)
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if err := cw.Close(ctx); err != nil { // the entry Flush could not write
		t.Fatal(err)
	}
	if got := collect(t, l, time.Now().Add(-time.Hour), time.Now().Add(time.Hour)); len(got) != 1 || got[0].Value.Seq != 7 {
		t.Fatalf("after a cancelled Flush and Close: %+v", got)
	}
	f.ft.Reset()
	if err := rw.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func second[A, B any](_ A, b B) B { return b }

// TestUncertainAppendThenMore: a flush whose append was applied but whose
// context ended before the answer came back fails and keeps its entries;
// the next flush, with more entries, appends at the same position, finds
// the earlier block stored (a 412, then a read) and appends only the rest:
// every entry once.
func TestUncertainAppendThenMore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLog[Request](t, f)
	clk := &clock{t: at1805, step: time.Millisecond}
	w := newWriter(t, l, &bloblog.WriterOptions{ID: "u", FlushInterval: -1, Now: clk.Now})
	ctx := context.Background()
	for i := range 3 {
		_ = w.Append(ctx, Request{Seq: i})
	}
	fctx, cancel := context.WithCancel(ctx)
	f.ft.Inject(faults.Fault{Match: isAppend, LoseResponse: true, AfterServer: cancel})
	if err := w.Flush(fctx); err == nil {
		t.Fatal("a flush whose context ended in flight reported success")
	}
	for i := 3; i < 6; i++ {
		_ = w.Append(ctx, Request{Seq: i})
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := collect(t, l, at1805, at1805.Add(time.Hour))
	var seqs []int
	for _, e := range got {
		seqs = append(seqs, e.Value.Seq)
	}
	if !slices.Equal(seqs, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("entries %v, want 0..5 once each", seqs)
	}
	if n := len(f.blobs(t)); n != 1 {
		t.Fatalf("%d blobs, want 1", n)
	}
}

// TestDefaults: New with nil Options keeps the log at the container's
// root (YYYY/MM/DD/HH00/<writer>-<sequence>.log); a log under a Prefix in
// the same container and the root log never read each other's blobs.
func TestDefaults(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	root, err := bloblog.New[Request](f.c, nil)
	if err != nil {
		t.Fatal(err)
	}
	prefixed := newLog[Request](t, f)
	clk := &clock{}
	clk.Set(at1805)
	for i, l := range []*bloblog.Log[Request]{root, prefixed} {
		w := newWriter(t, l, &bloblog.WriterOptions{ID: "web1", Now: clk.Now})
		if err := w.Append(ctx, Request{Seq: i}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, root, at1805, at1805.Add(time.Minute))
	if len(got) != 1 || got[0].Value.Seq != 0 || got[0].Blob != "2014/07/31/1800/web1-000001.log" {
		t.Fatalf("the root log reads %+v", got)
	}
	got = collect(t, prefixed, at1805, at1805.Add(time.Minute))
	if len(got) != 1 || got[0].Value.Seq != 1 || got[0].Blob != "logs/web/2014/07/31/1800/web1-000001.log" {
		t.Fatalf("the prefixed log reads %+v", got)
	}
	if names := slices.Sorted(maps.Keys(f.blobs(t))); !slices.Equal(names, []string{"2014/07/31/1800/web1-000001.log", "logs/web/2014/07/31/1800/web1-000001.log"}) {
		t.Fatalf("blobs %v", names)
	}
}
