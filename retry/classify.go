package retry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/redact"
)

// retryableStatus reports whether an HTTP status is transient per the
// partitioning article: 408 Request Timeout, 429 Too Many Requests (the
// Cosmos DB Table API's throttling), and 5xx except 501 Not Implemented and
// 505 HTTP Version Not Supported. Every other status, including 400, 401,
// 403, 404, 409, 412 and 413, is final.
func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true
	case code == http.StatusNotImplemented, code == http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

// isRetryable reports whether err is a transient failure worth retrying:
// a *azcore.ResponseError whose status retryableStatus accepts, or a
// transient transport error (connection reset, refused or aborted, broken
// pipe, unexpected EOF, network timeouts, temporary DNS failures). Context
// cancellation and deadlines are never retryable, nor is an error whose
// outcome is unknown (ErrOutcomeUnknown: the write may have been applied),
// nor nil. It is what the pipeline policy of ApplyTo retries, and Do's
// default: for a function whose failures nothing else retries. A loop
// around a client's requests should not use it (their pipeline retried
// these failures already); it retries its conflicts only (RetryOn412).
func isRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrOutcomeUnknown) {
		return false
	}
	if re := responseErrorOf(err); re != nil {
		return retryableStatus(re.StatusCode)
	}
	return transientTransport(err)
}

// RetryOn412 is the Retryable classifier of optimistic-concurrency loops
// (Policy.Do around a read and a conditional write): it retries the loop's
// conflicts, 412 Precondition Failed (a stale ETag: re-read and try again)
// and 409 Conflict (a concurrent insert of the same key), and nothing else.
// Transient failures (see "What is retried") are not retried: the client's pipeline
// (ApplyTo's policy, or azcore's built-in retry) has already retried them
// with its own budget, and retrying the loop as well would multiply the
// attempts (1 + MaxRetries of the pipeline for each of 1 + MaxRetries passes
// of the loop). It never retries ErrOutcomeUnknown: a 412 or 409 that
// follows an attempt whose response was lost may be the answer to the
// loop's own earlier write, and running the loop again would apply it
// twice. (Package table's writes verify such answers by reading, so they
// return ErrPreconditionFailed only when the write was certainly not
// applied.)
func RetryOn412(err error) bool {
	if errors.Is(err, ErrOutcomeUnknown) {
		return false
	}
	re := responseErrorOf(err)
	return re != nil && (re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusConflict)
}

func responseErrorOf(err error) *azcore.ResponseError {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

func transientTransport(err error) bool {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryAfter returns the wait the service asked for in resp, or 0, capped
// by p's MaxRetryAfter. It reads x-ms-retry-after-ms, retry-after-ms and
// Retry-After (seconds or an HTTP date); a 429 without any of them asks
// for throttleFloor.
func (p Policy) retryAfter(resp *http.Response) time.Duration {
	hint := serviceHint(resp)
	if hint == 0 && resp != nil && resp.StatusCode == http.StatusTooManyRequests {
		hint = throttleFloor
	}
	return min(hint, p.maxRetryAfter())
}

// throttleFloor is the least wait after a 429 Too Many Requests that
// names no wait of its own, capped like a hint by the policy's
// MaxRetryAfter (Max by default). A 429 is the Cosmos DB Table API's
// throttling: the account's request units for the second are spent, and
// the Table endpoint was seen to send no x-ms-retry-after-ms, so the
// guide's first waits (Default's 0.3 s) would mostly be throttled again.
// Table Storage throttles with 503 Server Busy, which keeps the guide's
// delays.
const throttleFloor = time.Second

// maxRetryAfter is the cap on the service's hint: MaxRetryAfter when set,
// else Max when set, else DefaultMaxRetryAfter.
func (p Policy) maxRetryAfter() time.Duration {
	switch {
	case p.MaxRetryAfter > 0:
		return p.MaxRetryAfter
	case p.Max > 0:
		return p.Max
	}
	return DefaultMaxRetryAfter
}

// DefaultMaxRetryAfter caps the service's Retry-After hint for a Policy
// with neither MaxRetryAfter nor Max.
const DefaultMaxRetryAfter = time.Minute

func serviceHint(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	for _, h := range []string{"x-ms-retry-after-ms", "retry-after-ms"} {
		if v := resp.Header.Get(h); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
				return time.Duration(min(ms, float64(maxHint/time.Millisecond)) * float64(time.Millisecond))
			}
		}
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
		return time.Duration(min(s, int64(maxHint/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(0, time.Until(t)), maxHint)
	}
	return 0
}

// maxHint bounds the parsed hint so that absurd values cannot overflow a
// Duration; maxRetryAfter then caps it to the policy's limit.
const maxHint = 24 * time.Hour

// pastDeadline reports whether waiting d would end after ctx's deadline.
func pastDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < d
}

// notify calls the OnRetry hook, if any.
func (p Policy) notify(attempt int, delay time.Duration, resp *http.Response, err error) {
	if p.OnRetry == nil {
		return
	}
	ev := Event{Attempt: attempt, Delay: delay, Err: redact.Error(err)}
	if resp != nil {
		ev.StatusCode = resp.StatusCode
		ev.ErrorCode = resp.Header.Get("x-ms-error-code")
	}
	p.OnRetry(ev)
}

// Log returns an OnRetry hook that logs each retry to l at Warn level with
// the attributes attempt, delay, status, code and err.
func Log(l *slog.Logger) func(Event) {
	return func(e Event) {
		l.Warn("retrying", "attempt", e.Attempt, "delay", e.Delay, "status", e.StatusCode, "code", e.ErrorCode, "err", e.Err)
	}
}
