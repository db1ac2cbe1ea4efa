package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// tableWithFaults returns a table client whose requests pass through a
// fault transport, with p installed by ApplyTo.
func tableWithFaults(t *testing.T, p retry.Policy) (*aztables.Client, *faults.Transport) {
	t.Helper()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := &aztables.ClientOptions{}
	opts.Transport = ft
	p.ApplyTo(&opts.ClientOptions)
	c := env.Table(opts)
	ft.Reset() // forget the CreateTable request
	return c, ft
}

func entity(rk string) []byte {
	return []byte(fmt.Sprintf(`{"PartitionKey":"p","RowKey":%q,"V":"x"}`, rk))
}

func TestPipelineRetries503ThenWrites(t *testing.T) {
	t.Parallel()
	c, ft := tableWithFaults(t, fast)
	ft.Inject(faults.Fault{Status: 503, ErrorCode: "ServerBusy"}, faults.Fault{Status: 503, ErrorCode: "ServerBusy"})
	ctx := context.Background()
	if _, err := c.AddEntity(ctx, entity("a"), nil); err != nil {
		t.Fatalf("AddEntity: %v", err)
	}
	if n := ft.Count(); n != 3 {
		t.Fatalf("%d attempts reached the transport, want 3", n)
	}
	reqs := ft.Requests()
	for i, r := range reqs {
		if !bytes.Equal(r.Body, reqs[0].Body) || len(r.Body) == 0 {
			t.Fatalf("attempt %d sent body %q, want %q", i+1, r.Body, reqs[0].Body)
		}
	}
	if _, err := c.GetEntity(ctx, "p", "a", nil); err != nil {
		t.Fatalf("the entity was not written: %v", err)
	}
}

func TestPipelineClassification(t *testing.T) {
	t.Parallel()
	p := fast
	p.MaxRetries = 2
	c, ft := tableWithFaults(t, p)
	ctx := context.Background()
	for _, code := range []int{400, 401, 403, 404, 408, 409, 412, 413, 429, 500, 501, 502, 503, 504, 505} {
		ft.Reset()
		// More faults than attempts: every attempt fails with code.
		for i := 0; i < 5; i++ {
			ft.Inject(faults.Fault{Status: code})
		}
		_, err := c.GetEntity(ctx, "p", "missing", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != code {
			t.Fatalf("status %d: err = %v, want a ResponseError with that status", code, err)
		}
		want := 1
		if retry.RetryableStatus(code) {
			want = 1 + p.MaxRetries
		}
		if n := ft.Count(); n != want {
			t.Errorf("status %d: %d attempts, want %d", code, n, want)
		}
	}
}

func TestPipelineTransportErrors(t *testing.T) {
	t.Parallel()
	c, ft := tableWithFaults(t, fast)
	ctx := context.Background()
	// A lost response on an idempotent upsert: the retry succeeds.
	ft.Inject(faults.Fault{LoseResponse: true})
	if _, err := c.UpsertEntity(ctx, entity("u"), nil); err != nil {
		t.Fatalf("UpsertEntity after a lost response: %v", err)
	}
	if n := ft.Count(); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
	// A lost response on an insert: the first attempt was applied, so the
	// retry answers 409, which callers must treat as "maybe mine" (the
	// design's rule 4). This pins the behaviour tablekit's packages handle.
	ft.Reset()
	ft.Inject(faults.Fault{LoseResponse: true})
	_, err := c.AddEntity(ctx, entity("i"), nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusConflict {
		t.Fatalf("AddEntity after a lost response = %v, want 409", err)
	}
	// A non-transient transport error is not retried.
	ft.Reset()
	ft.Inject(faults.Fault{Err: errors.New("certificate signed by unknown authority")})
	if _, err := c.GetEntity(ctx, "p", "u", nil); err == nil || ft.Count() != 1 {
		t.Fatalf("GetEntity = %v after %d attempts, want the error after 1", err, ft.Count())
	}
}

func TestPipelineBoundsAttemptsAndIsNotStacked(t *testing.T) {
	t.Parallel()
	p := fast
	p.MaxRetries = 3
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := &aztables.ClientOptions{}
	opts.Transport = ft
	opts.Retry.MaxRetries = 10 // a user's setting must not multiply attempts
	p.ApplyTo(&opts.ClientOptions)
	p.ApplyTo(&opts.ClientOptions) // applying twice replaces, never stacks
	c := env.Table(opts)
	ft.Reset()
	for i := 0; i < 20; i++ {
		ft.Inject(faults.Fault{Status: 503})
	}
	if _, err := c.GetEntity(context.Background(), "p", "x", nil); err == nil {
		t.Fatal("GetEntity succeeded through endless 503s")
	}
	if n := ft.Count(); n != 1+p.MaxRetries {
		t.Fatalf("%d attempts, want exactly %d", n, 1+p.MaxRetries)
	}
}

func TestPipelineStopsAtDeadline(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Default: 50 * time.Millisecond, Min: 50 * time.Millisecond, Max: time.Second, MaxRetries: 10}
	c, ft := tableWithFaults(t, p)
	for i := 0; i < 20; i++ {
		ft.Inject(faults.Fault{Status: 503})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.GetEntity(ctx, "p", "x", nil)
	var re *azcore.ResponseError
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &re) && re.StatusCode == 503) {
		t.Fatalf("GetEntity = %v, want a deadline or the last 503", err)
	}
	// Delays are at least 0.1, 0.2, 0.4 s: no more than 3 attempts fit.
	if n := ft.Count(); n > 3 || n < 1 {
		t.Fatalf("%d attempts within a 300 ms deadline, want 1 to 3", n)
	}
}

// Every attempt is signed anew: a retry more than a second later carries a
// new x-ms-date and Authorization, and Azurite accepts it.
func TestPipelineReSignsEachAttempt(t *testing.T) {
	t.Parallel()
	c, ft := tableWithFaults(t, fast)
	ft.Inject(faults.Fault{Status: 503, Delay: 1100 * time.Millisecond})
	if _, err := c.AddEntity(context.Background(), entity("s"), nil); err != nil {
		t.Fatalf("AddEntity: %v (Azurite rejected the retried signature?)", err)
	}
	reqs := ft.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d attempts, want 2", len(reqs))
	}
	if reqs[0].Date == "" || reqs[0].Date == reqs[1].Date || reqs[0].Auth == reqs[1].Auth {
		t.Fatalf("attempts share x-ms-date %q/%q or Authorization: not re-signed", reqs[0].Date, reqs[1].Date)
	}
}

// ApplyTo works for queue and blob clients too.
func TestPipelineQueueAndBlob(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ctx := context.Background()

	ft := &faults.Transport{}
	qopts := &azqueue.ClientOptions{}
	qopts.Transport = ft
	fast.ApplyTo(&qopts.ClientOptions)
	q := env.Queue(qopts)
	ft.Reset()
	ft.Inject(faults.Fault{Status: 503}, faults.Fault{Status: 500})
	if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil || ft.Count() != 3 {
		t.Fatalf("EnqueueMessage = %v after %d attempts, want success after 3", err, ft.Count())
	}

	bt := &faults.Transport{}
	bopts := &azblob.ClientOptions{}
	bopts.Transport = bt
	fast.ApplyTo(&bopts.ClientOptions)
	cont := env.Container(bopts)
	bt.Reset()
	bt.Inject(faults.Fault{Status: 503})
	if _, err := cont.NewBlockBlobClient("b").UploadBuffer(ctx, []byte("hello"), nil); err != nil || bt.Count() != 2 {
		t.Fatalf("UploadBuffer = %v after %d attempts, want success after 2", err, bt.Count())
	}
}

func TestPipelineOnRetryHook(t *testing.T) {
	t.Parallel()
	p := fast
	var seen atomic.Int32
	var last atomic.Value
	p.OnRetry = func(e retry.Event) { seen.Add(1); last.Store(e) }
	c, ft := tableWithFaults(t, p)
	ft.Inject(faults.Fault{Status: 503, ErrorCode: "ServerBusy"})
	if _, err := c.GetEntity(context.Background(), "p", "nope", nil); err == nil {
		t.Fatal("want 404 after the retry")
	}
	e, _ := last.Load().(retry.Event)
	if seen.Load() != 1 || e.Attempt != 1 || e.StatusCode != 503 || e.ErrorCode != "ServerBusy" {
		t.Fatalf("OnRetry saw %d events, last %+v", seen.Load(), e)
	}
}

// TestPipelineTracksAmbiguousWrites: a write whose response is lost is
// resent; the resend's 409 comes back as ErrOutcomeUnknown around the 409,
// the Trace says so, and neither IsRetryable nor RetryOn412 retries it. A
// read is never ambiguous; a write answered definitely is not either.
func TestPipelineTracksAmbiguousWrites(t *testing.T) {
	t.Parallel()
	c, ft := tableWithFaults(t, fast)
	ft.Inject(faults.Fault{LoseResponse: true})
	ctx, tr := retrycore.Track(context.Background())
	_, err := c.AddEntity(ctx, entity("a"), nil)
	var re *azcore.ResponseError
	if !errors.Is(err, retry.ErrOutcomeUnknown) || !errors.As(err, &re) || re.StatusCode != 409 {
		t.Fatalf("AddEntity after a lost response = %v; want ErrOutcomeUnknown around 409", err)
	}
	if !tr.Tracked() || !tr.Ambiguous() || tr.Attempts() != 2 {
		t.Fatalf("trace: tracked %v, ambiguous %v, %d attempts", tr.Tracked(), tr.Ambiguous(), tr.Attempts())
	}
	if retry.IsRetryable(err) || retry.RetryOn412(err) {
		t.Fatal("an unknown outcome must not be retried")
	}
	// A lost response to a GET: resent, never ambiguous.
	ft.Inject(faults.Fault{LoseResponse: true})
	ctx, tr = retrycore.Track(context.Background())
	if _, err := c.GetEntity(ctx, "p", "a", nil); err != nil || tr.Ambiguous() || tr.Attempts() != 2 {
		t.Fatalf("GetEntity: %v, ambiguous %v, %d attempts", err, tr.Ambiguous(), tr.Attempts())
	}
	// 503 then 409: the 503 proves nothing was applied; the 409 is definite.
	ft.Inject(faults.Fault{Status: 503, ErrorCode: "ServerBusy"})
	ctx, tr = retrycore.Track(context.Background())
	_, err = c.AddEntity(ctx, entity("a"), nil)
	if errors.Is(err, retry.ErrOutcomeUnknown) || !errors.As(err, &re) || re.StatusCode != 409 || tr.Ambiguous() {
		t.Fatalf("AddEntity after a 503 = %v (ambiguous %v); want a definite 409", err, tr.Ambiguous())
	}
	// A 500 may have been applied: ambiguous, and the resend succeeds.
	ft.Inject(faults.Fault{Status: 500, ErrorCode: "OperationTimedOut"})
	ctx, tr = retrycore.Track(context.Background())
	if _, err := c.AddEntity(ctx, entity("b"), nil); err != nil || !tr.Ambiguous() {
		t.Fatalf("AddEntity after a 500: %v, ambiguous %v", err, tr.Ambiguous())
	}
	// A context without a Trace works as before.
	if _, err := c.GetEntity(context.Background(), "p", "b", nil); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineRefusedIsNotAmbiguous: a refused connection proves the
// request never left, so the final error is the transport's, not
// ErrOutcomeUnknown.
func TestPipelineRefusedIsNotAmbiguous(t *testing.T) {
	t.Parallel()
	opts := &aztables.ClientOptions{}
	fast.ApplyTo(&opts.ClientOptions)
	c, err := aztables.NewClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1/nowhere", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, tr := retrycore.Track(context.Background())
	_, err = c.AddEntity(ctx, entity("a"), nil)
	if err == nil || errors.Is(err, retry.ErrOutcomeUnknown) || tr.Ambiguous() || tr.Attempts() != 1+fast.MaxRetries {
		t.Fatalf("AddEntity to a closed port = %v (ambiguous %v, %d attempts)", err, tr.Ambiguous(), tr.Attempts())
	}
	// The error names the attempts the policy made: the true count.
	var re *retry.Error
	want := fmt.Sprintf("(after %d HTTP attempts)", 1+fast.MaxRetries)
	if !errors.As(err, &re) || re.Attempts != 1+fast.MaxRetries || !strings.HasSuffix(err.Error(), want) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("AddEntity to a closed port = %v, want a *retry.Error of %d attempts ending %q", err, 1+fast.MaxRetries, want)
	}
	// Without retries there is nothing to count.
	one := &aztables.ClientOptions{}
	retry.Policy{}.ApplyTo(&one.ClientOptions)
	if c, err = aztables.NewClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1/nowhere", one); err != nil {
		t.Fatal(err)
	}
	if _, err = c.AddEntity(context.Background(), entity("a"), nil); err == nil || errors.As(err, &re) {
		t.Fatalf("AddEntity to a closed port without retries = %v, want the transport's error alone", err)
	}
}

// TestPipelineContextEndsDuringBackOff: the context ends while the policy
// waits before a retry; the error is the last real failure (here a 503)
// wrapped with the context's error, not the context's error alone.
func TestPipelineContextEndsDuringBackOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := retry.Policy{Default: time.Hour, MaxRetries: 3, OnRetry: func(retry.Event) { cancel() }}
	c, ft := tableWithFaults(t, p)
	ft.Inject(faults.Fault{Status: 503, ErrorCode: "ServerBusy"})
	_, err := c.GetEntity(ctx, "p", "a", nil)
	var re *azcore.ResponseError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || re.StatusCode != 503 {
		t.Fatalf("GetEntity = %v; want the 503 wrapped with context.Canceled", err)
	}
}

// TestTraceCountsNestedRetriesAndThrottling: an operation's Trace counts
// the attempts, resends and throttling answers of every request made under
// it, also through a nested Trace (a write's own), and the resends of a
// Policy.Do loop; the nested Trace knows only its own requests.
func TestTraceCountsNestedRetriesAndThrottling(t *testing.T) {
	t.Parallel()
	c, ft := tableWithFaults(t, fast)
	ft.Inject(faults.Fault{Status: 503, ErrorCode: "ServerBusy"}, faults.Fault{Status: 429}, faults.Fault{Status: 500, ErrorCode: "OperationTimedOut"})
	octx, op := retrycore.Track(context.Background())
	wctx, w := retrycore.Track(octx)
	if _, err := c.AddEntity(wctx, entity("a"), nil); err != nil {
		t.Fatalf("AddEntity: %v", err)
	}
	if w.Attempts() != 4 || w.Retries() != 3 || w.Throttled(503) != 1 || w.Throttled(429) != 1 || w.Throttled(500) != 1 || w.Throttled(404) != 0 {
		t.Fatalf("the write's trace: %d attempts, %d retries, throttled 503 %d, 429 %d, 500 %d", w.Attempts(), w.Retries(), w.Throttled(503), w.Throttled(429), w.Throttled(500))
	}
	// A read-modify-write's conflict, retried by Policy.Do: one more resend
	// of the operation.
	calls := 0
	err := fast.Do(octx, func(ctx context.Context) error {
		calls++
		_, err := c.GetEntity(ctx, "p", "a", nil)
		if calls == 1 {
			return &azcore.ResponseError{StatusCode: 503}
		}
		return err
	})
	if err != nil || calls != 2 {
		t.Fatalf("Do: %v after %d calls", err, calls)
	}
	if !op.Tracked() || op.Attempts() != 6 || op.Retries() != 4 || op.Throttled(503) != 1 || !op.Ambiguous() {
		t.Fatalf("the operation's trace: tracked %v, %d attempts, %d retries, throttled 503 %d, ambiguous %v", op.Tracked(), op.Attempts(), op.Retries(), op.Throttled(503), op.Ambiguous())
	}
	if w.Attempts() != 4 {
		t.Fatalf("the write's trace counted the operation's later requests: %d attempts", w.Attempts())
	}
}
