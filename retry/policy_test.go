package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/retry"
)

// bounds returns the guide formula's range for retry x.
func bounds(p retry.Policy, x int) (lo, hi time.Duration) {
	g := float64(int64(1)<<x - 1)
	lo = p.Min + time.Duration(0.8*float64(p.Default)*g)
	hi = p.Min + time.Duration(1.2*float64(p.Default)*g)
	return min(lo, p.Max), min(hi, p.Max)
}

func TestDelayWithinFormulaAndCoversJitter(t *testing.T) {
	for _, p := range []retry.Policy{retry.Guide, retry.Default, {Default: time.Second, Min: 0, Max: time.Hour}} {
		for x := 1; x <= 8; x++ {
			lo, hi := bounds(p, x)
			seenLo, seenHi := time.Duration(math.MaxInt64), time.Duration(0)
			const n = 20000
			for i := 0; i < n; i++ {
				d := p.Delay(x)
				if d < lo || d > hi {
					t.Fatalf("%+v Delay(%d) = %v outside [%v, %v]", p, x, d, lo, hi)
				}
				seenLo, seenHi = min(seenLo, d), max(seenHi, d)
			}
			if lo == hi {
				if seenLo != lo {
					t.Fatalf("%+v Delay(%d): capped delays must equal Max %v, saw %v", p, x, lo, seenLo)
				}
				continue
			}
			// The samples must cover the jitter range: within 1% of each end.
			slack := (hi - lo) / 100
			if seenLo > lo+slack || seenHi < hi-slack {
				t.Fatalf("%+v Delay(%d): samples span [%v, %v], want nearly [%v, %v]", p, x, seenLo, seenHi, lo, hi)
			}
		}
	}
}

func TestDelayEdges(t *testing.T) {
	p := retry.Guide
	if d := p.Delay(0); d != 0 {
		t.Errorf("Delay(0) = %v, want 0", d)
	}
	if d := p.Delay(-3); d != 0 {
		t.Errorf("Delay(-3) = %v, want 0", d)
	}
	for _, x := range []int{30, 62, 63, 64, 100, 1 << 20, math.MaxInt} {
		if d := p.Delay(x); d != p.Max {
			t.Errorf("Delay(%d) = %v, want the ceiling %v", x, d, p.Max)
		}
		uncapped := retry.Policy{Default: time.Second}
		if d := uncapped.Delay(x); d <= 0 {
			t.Errorf("uncapped Delay(%d) = %v: must never wrap", x, d)
		}
	}
	var zero retry.Policy
	for x := 0; x < 100; x++ {
		if d := zero.Delay(x); d != 0 {
			t.Fatalf("zero Policy Delay(%d) = %v, want 0", x, d)
		}
	}
	onlyMin := retry.Policy{Min: time.Second}
	if d := onlyMin.Delay(2000); d != time.Second {
		t.Errorf("Policy{Min: 1s}.Delay(2000) = %v, want 1s", d)
	}
	fixed := retry.Policy{Default: 10 * time.Second, Min: time.Second, Max: time.Minute, Rand: func() float64 { return 0.5 }}
	if d := fixed.Delay(2); d != 31*time.Second {
		t.Errorf("Delay(2) with jitter at the midpoint = %v, want 1s + 10s*3 = 31s", d)
	}
}

func TestFullJitterBounds(t *testing.T) {
	p := retry.Default
	p.FullJitter = true
	for x := 1; x <= 10; x++ {
		hi := min(p.Min+time.Duration(float64(p.Default)*float64(int64(1)<<x-1)), p.Max)
		seenLo, seenHi := p.Max, time.Duration(0)
		for i := 0; i < 20000; i++ {
			d := p.Delay(x)
			if d < p.Min || d > hi {
				t.Fatalf("full jitter Delay(%d) = %v outside [%v, %v]", x, d, p.Min, hi)
			}
			seenLo, seenHi = min(seenLo, d), max(seenHi, d)
		}
		if slack := (hi - p.Min) / 50; seenLo > p.Min+slack || seenHi < hi-slack {
			t.Fatalf("full jitter Delay(%d) spans [%v, %v], want nearly [%v, %v]", x, seenLo, seenHi, p.Min, hi)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassification(t *testing.T) {
	for code := 100; code <= 599; code++ {
		want := code == 408 || code == 429 || (code >= 500 && code != 501 && code != 505)
		if got := retry.RetryableStatus(code); got != want {
			t.Errorf("RetryableStatus(%d) = %v, want %v", code, got, want)
		}
		err := fmt.Errorf("wrapped: %w", &azcore.ResponseError{StatusCode: code})
		if got := retry.IsRetryable(err); got != want {
			t.Errorf("IsRetryable(ResponseError %d) = %v, want %v", code, got, want)
		}
	}
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{io.ErrUnexpectedEOF, true},
		{&url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{syscall.EPIPE, true},
		{timeoutErr{}, true},
		{&net.DNSError{Err: "no such host", IsNotFound: true}, false},
		{&net.DNSError{Err: "server misbehaving", IsTemporary: true}, true},
	}
	for _, tt := range tests {
		if got := retry.IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	// RetryOn412 retries a loop's conflicts only: what IsRetryable retries
	// the client's pipeline has retried already.
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&azcore.ResponseError{StatusCode: 412}, true},
		{fmt.Errorf("x: %w", &azcore.ResponseError{StatusCode: 409}), true},
		{&retrycore.OutcomeError{Err: &azcore.ResponseError{StatusCode: 412}}, false},
		{&azcore.ResponseError{StatusCode: 503}, false},
		{&azcore.ResponseError{StatusCode: 429}, false},
		{&azcore.ResponseError{StatusCode: 404}, false},
		{&url.Error{Op: "Get", URL: "http://x", Err: syscall.ECONNREFUSED}, false},
		{io.ErrUnexpectedEOF, false},
		{nil, false},
	} {
		if got := retry.RetryOn412(tt.err); got != tt.want {
			t.Errorf("RetryOn412(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

var fast = retry.Policy{Default: time.Millisecond, Min: time.Millisecond, Max: 5 * time.Millisecond, MaxRetries: 4}

func status(code int) error {
	return &azcore.ResponseError{StatusCode: code, ErrorCode: http.StatusText(code)}
}

func TestDoRetriesThenSucceeds(t *testing.T) {
	calls := 0
	var events []retry.Event
	p := fast
	p.OnRetry = func(e retry.Event) { events = append(events, e) }
	err := p.Do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return status(503)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Do = %v after %d calls, want nil after 3", err, calls)
	}
	if len(events) != 2 || events[0].Attempt != 1 || events[1].Attempt != 2 {
		t.Fatalf("OnRetry saw %+v, want attempts 1 and 2", events)
	}
}

func TestDoStopsOnFinalError(t *testing.T) {
	calls := 0
	err := fast.Do(context.Background(), func(context.Context) error { calls++; return status(412) })
	var re *azcore.ResponseError
	var re2 *retry.Error
	if calls != 1 || !errors.As(err, &re) || re.StatusCode != 412 || errors.As(err, &re2) {
		t.Fatalf("Do = %v after %d calls; want the 412 itself (nothing was retried, so no *retry.Error)", err, calls)
	}
	// With RetryOn412 the same error is retried until MaxRetries.
	calls = 0
	p := fast
	p.Retryable = retry.RetryOn412
	err = p.Do(context.Background(), func(context.Context) error { calls++; return status(412) })
	if calls != 1+p.MaxRetries || !errors.As(err, &re2) || re2.Attempts != calls {
		t.Fatalf("RetryOn412: Do = %v after %d calls, want %d attempts", err, calls, 1+p.MaxRetries)
	}
}

func TestDoBoundsAttempts(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		p := fast
		p.MaxRetries = n
		calls := 0
		err := p.Do(context.Background(), func(context.Context) error { calls++; return status(500) })
		if calls != n+1 {
			t.Errorf("MaxRetries=%d: %d calls, want %d", n, calls, n+1)
		}
		if err == nil || !retry.IsRetryable(err) {
			t.Errorf("MaxRetries=%d: err = %v, want the last 500", n, err)
		}
	}
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := retry.Policy{Default: time.Hour, Max: time.Hour, MaxRetries: 3}
	// Cancel when Do is about to wait an hour before its first retry.
	p.OnRetry = func(retry.Event) { cancel() }
	calls := 0
	err := p.Do(ctx, func(context.Context) error { calls++; return status(503) })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Do = %v after %d calls, want context.Canceled after 1", err, calls)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 503 {
		t.Fatalf("Do = %v: must still wrap the last error", err)
	}
	// A wait that would overrun the deadline is not started.
	p.OnRetry = nil
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = p.Do(ctx, func(context.Context) error { return status(503) })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) {
		t.Fatalf("Do = %v, want DeadlineExceeded wrapping the 503 at once", err)
	}
}

func TestDoHonoursRetryAfter(t *testing.T) {
	p := retry.Policy{MaxRetries: 1}
	var delays []time.Duration
	p.OnRetry = func(e retry.Event) { delays = append(delays, e.Delay) }
	calls := 0
	_ = p.Do(context.Background(), func(context.Context) error {
		calls++
		if calls > 1 {
			return nil
		}
		resp := &http.Response{StatusCode: 503, Header: http.Header{"X-Ms-Retry-After-Ms": {"25"}}}
		return &azcore.ResponseError{StatusCode: 503, RawResponse: resp}
	})
	if len(delays) != 1 || delays[0] != 25*time.Millisecond {
		t.Fatalf("delays = %v, want [25ms] from x-ms-retry-after-ms", delays)
	}
	// Absurd hints are capped (MaxRetryAfter, else Max, else
	// DefaultMaxRetryAfter), never wrapped into negative waits.
	for _, c := range []struct {
		p    retry.Policy
		want time.Duration
	}{
		{retry.Policy{MaxRetries: 1}, retry.DefaultMaxRetryAfter},
		{retry.Policy{MaxRetries: 1, Max: 3 * time.Second}, 3 * time.Second},
		{retry.Policy{MaxRetries: 1, Max: 3 * time.Second, MaxRetryAfter: 7 * time.Second}, 7 * time.Second},
	} {
		for _, h := range []http.Header{{"Retry-After": {"99999999999999999"}}, {"X-Ms-Retry-After-Ms": {"1e300"}}} {
			delays = nil
			ctx, cancel := context.WithCancel(context.Background())
			p := c.p
			p.OnRetry = func(e retry.Event) { delays = append(delays, e.Delay); cancel() }
			_ = p.Do(ctx, func(context.Context) error {
				return &azcore.ResponseError{StatusCode: 503, RawResponse: &http.Response{StatusCode: 503, Header: h}}
			})
			cancel()
			if len(delays) != 1 || delays[0] != c.want {
				t.Fatalf("policy %+v, header %v: delays %v, want the %v cap", c.p, h, delays, c.want)
			}
		}
	}
}

// TestDoEndsWithLastFailureAndContext checks that a context ending during a
// back-off wait returns the last real failure wrapped with the context's
// error, not the context's error alone.
func TestDoEndsWithLastFailureAndContext(t *testing.T) {
	p := retry.Policy{Default: time.Hour, MaxRetries: 3}
	ctx, cancel := context.WithCancel(context.Background())
	p.OnRetry = func(retry.Event) { cancel() }
	busy := &azcore.ResponseError{StatusCode: 503, ErrorCode: "ServerBusy"}
	err := p.Do(ctx, func(context.Context) error { return busy })
	var re *azcore.ResponseError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || re != busy {
		t.Fatalf("Do = %v; want the 503 wrapped with context.Canceled", err)
	}
}

func TestLogHook(t *testing.T) {
	var buf strings.Builder
	p := fast
	p.MaxRetries = 1
	p.OnRetry = retry.Log(slog.New(slog.NewTextHandler(&buf, nil)))
	_ = p.Do(context.Background(), func(context.Context) error {
		return &url.Error{Op: "Get", URL: "https://a.table.core.windows.net/t?sig=SECRET", Err: syscall.ECONNRESET}
	})
	out := buf.String()
	if !strings.Contains(out, "attempt=1") || strings.Contains(out, "SECRET") {
		t.Fatalf("log %q: want attempt=1 and no SAS signature", out)
	}
}

// An error marked with Stop ends Do at once and comes back as it is, even
// when Retryable would retry it.
func TestStopEndsDo(t *testing.T) {
	p := retry.Policy{MaxRetries: 5, Retryable: func(error) bool { return true }}
	mine := errors.New("fn refused")
	calls := 0
	err := p.Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 2 {
			return fmt.Errorf("wrapped: %w", retrycore.Stop(mine))
		}
		return errors.New("transient")
	})
	if calls != 2 || err != mine {
		t.Fatalf("Do: %d calls, %v; want 2 and the stopped error itself", calls, err)
	}
	if retrycore.Stop(nil) != nil {
		t.Fatal("Stop(nil) is not nil")
	}
}

// TestThrottleFloor: a 429 that names no wait (Cosmos DB's Table API may
// send none) waits at least ThrottleFloor, capped by MaxRetryAfter or Max;
// a hint, when there is one, wins; other statuses keep the guide's delays.
func TestThrottleFloor(t *testing.T) {
	first := func(p retry.Policy, status int, h http.Header) time.Duration {
		t.Helper()
		var delays []time.Duration
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p.MaxRetries = 1
		p.OnRetry = func(e retry.Event) { delays = append(delays, e.Delay); cancel() }
		_ = p.Do(ctx, func(context.Context) error {
			return &azcore.ResponseError{StatusCode: status, RawResponse: &http.Response{StatusCode: status, Header: h}}
		})
		if len(delays) != 1 {
			t.Fatalf("%d retries, want 1", len(delays))
		}
		return delays[0]
	}
	fixed := func() float64 { return 0.5 }
	for _, c := range []struct {
		name   string
		p      retry.Policy
		status int
		h      http.Header
		want   time.Duration
	}{
		{"429, Default", retry.Default, 429, nil, retry.ThrottleFloor},
		{"429, capped by Max", retry.Policy{Default: time.Millisecond, Max: 40 * time.Millisecond}, 429, nil, 40 * time.Millisecond},
		{"429, capped by MaxRetryAfter", retry.Policy{Default: time.Millisecond, Max: 5 * time.Second, MaxRetryAfter: 300 * time.Millisecond}, 429, nil, 300 * time.Millisecond},
		{"429 with a hint", retry.Policy{Default: time.Millisecond, Max: 5 * time.Second, Rand: fixed}, 429, http.Header{"X-Ms-Retry-After-Ms": {"25"}}, 25 * time.Millisecond},
		{"503, no hint", retry.Policy{Default: time.Millisecond, Max: 5 * time.Second, Rand: fixed}, 503, nil, time.Millisecond},
	} {
		if got := first(c.p, c.status, c.h); got != c.want {
			t.Errorf("%s: first wait %v, want %v", c.name, got, c.want)
		}
	}
}
