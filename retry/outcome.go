package retry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
)

// ErrOutcomeUnknown means a write may or may not have been applied: an
// attempt's response was lost (connection reset after the request was
// sent, a timeout, a 500/502/504 answer, the context ending while the
// request was in flight), and nothing later settled the question. The
// write must not be repeated blindly: re-read to find out, or report the
// uncertainty. Neither IsRetryable nor RetryOn412 retries such an error.
//
// Package table's writes resolve the question by reading where they can and
// return this error only when they cannot.
var ErrOutcomeUnknown = errors.New("outcome unknown: the write may or may not have been applied")

// OutcomeError is what a client built with ApplyTo returns for a write
// (any method but GET, HEAD and OPTIONS) when an attempt's outcome was
// ambiguous and the final attempt did not succeed: typically a resend after
// a lost response answered 409 (insert), 412 (conditional update) or 404
// (delete) because the first attempt had already been applied. It satisfies
// errors.Is(err, ErrOutcomeUnknown) and unwraps to the final attempt's
// error, so errors.As(err, **azcore.ResponseError) still reports the status.
type OutcomeError struct {
	// Err is the final attempt's error: a *azcore.ResponseError, a transport
	// error, or the context's error.
	Err error
}

// Error says that the outcome is unknown and what the final attempt got.
func (e *OutcomeError) Error() string {
	return "outcome unknown: an earlier attempt may have been applied; the last attempt failed: " + e.Err.Error()
}

// Unwrap returns the final attempt's error.
func (e *OutcomeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrOutcomeUnknown.
func (e *OutcomeError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Trace records what the pipeline policy of ApplyTo did with the requests
// made with a context from Track: how many attempts were sent, how many of
// them were resends, which throttling answers came back, and whether any
// attempt of a write may have been applied without the client learning so.
// Traces nest: a Trace made by Track under another's context records its
// requests in the enclosing Traces too, so an operation made of several
// requests (a pattern's, or a read-modify-write) counts all of them while
// each request's own Trace still knows only its own. Policy.Do's retries
// count as resends in the Trace of its context. It is safe for concurrent
// use.
type Trace struct {
	parent    *Trace
	seen      atomic.Bool
	attempts  atomic.Int32
	retries   atomic.Int32
	throttled [3]atomic.Int32 // 429, 500, 503 answers
	ambiguous atomic.Bool
}

type traceKey struct{}

// Track returns a context that carries a new Trace, nested in the Trace
// ctx carries, if any. Requests made with it by a client whose pipeline
// has this package's policy (ApplyTo) record their attempts in the Trace
// and in every enclosing one.
func Track(ctx context.Context) (context.Context, *Trace) {
	t := &Trace{parent: traceOf(ctx)}
	return context.WithValue(ctx, traceKey{}, t), t
}

// Tracked reports whether a policy installed by ApplyTo saw a request made
// with the Trace's context. When it did not (a client built without
// ApplyTo), Attempts and Ambiguous know nothing.
func (t *Trace) Tracked() bool { return t.seen.Load() }

// Attempts returns the number of attempts sent.
func (t *Trace) Attempts() int { return int(t.attempts.Load()) }

// Retries returns how many of the attempts were resends, by the pipeline
// policy (a transient failure) or by a Policy.Do loop run with the
// Trace's context (such as a read-modify-write's conflict).
func (t *Trace) Retries() int { return int(t.retries.Load()) }

// Throttled returns how many attempts were answered with status, for the
// answers with which the service sheds load: 429 Too Many Requests, 503
// Server Busy and 500 (an operation timeout). Other statuses count 0.
func (t *Trace) Throttled(status int) int {
	if i := throttleIndex(status); i >= 0 {
		return int(t.throttled[i].Load())
	}
	return 0
}

// ThrottleStatuses are the statuses Trace.Throttled counts.
var ThrottleStatuses = [3]int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}

func throttleIndex(status int) int {
	switch status {
	case http.StatusTooManyRequests:
		return 0
	case http.StatusInternalServerError:
		return 1
	case http.StatusServiceUnavailable:
		return 2
	}
	return -1
}

// Ambiguous reports whether an attempt of a write may have been applied
// although the client did not receive a success: its response was lost, it
// timed out, it answered 500, 502 or 504, or the context ended while it was
// in flight.
func (t *Trace) Ambiguous() bool { return t.ambiguous.Load() }

func traceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// attempt records one attempt sent, answered with status (0 for none), in
// t and the Traces enclosing it; t may be nil.
func (t *Trace) attempt(status int, ambiguous bool) {
	i := throttleIndex(status)
	for ; t != nil; t = t.parent {
		t.seen.Store(true)
		t.attempts.Add(1)
		if i >= 0 {
			t.throttled[i].Add(1)
		}
		if ambiguous {
			t.ambiguous.Store(true)
		}
	}
}

// retried records one resend in t and the Traces enclosing it; t may be
// nil.
func (t *Trace) retried() {
	for ; t != nil; t = t.parent {
		t.retries.Add(1)
	}
}

// isWrite reports whether a request may change state.
func isWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// attemptAmbiguous reports whether an attempt of a write may have been
// applied without a success reaching the client: any transport error except
// those raised before the request left (a refused or failed dial), and the
// statuses with which the service says an operation may have completed
// (500 OperationTimedOut or InternalError, 502, 504).
func attemptAmbiguous(resp *http.Response, err error) bool {
	if err != nil {
		return !unsent(err)
	}
	return MayHaveApplied(resp.StatusCode)
}

// MayHaveApplied reports whether a write answered with status may still
// have been applied: 500 (OperationTimedOut, InternalError), 502 and 504.
// Every other status is the service's definite answer.
func MayHaveApplied(status int) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// unsent reports whether a transport error proves the request never reached
// the server.
func unsent(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
