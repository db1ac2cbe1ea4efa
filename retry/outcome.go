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
// made with a context from Track: how many attempts were sent and whether
// any of them may have been applied without the client learning so. It is
// safe for concurrent use.
type Trace struct {
	seen      atomic.Bool
	attempts  atomic.Int32
	ambiguous atomic.Bool
}

type traceKey struct{}

// Track returns a context that carries a new Trace. Requests made with it by
// a client whose pipeline has this package's policy (ApplyTo) record their
// attempts in the Trace.
func Track(ctx context.Context) (context.Context, *Trace) {
	t := &Trace{}
	return context.WithValue(ctx, traceKey{}, t), t
}

// Tracked reports whether a policy installed by ApplyTo saw a request made
// with the Trace's context. When it did not (a client built without
// ApplyTo), Attempts and Ambiguous know nothing.
func (t *Trace) Tracked() bool { return t.seen.Load() }

// Attempts returns the number of attempts sent.
func (t *Trace) Attempts() int { return int(t.attempts.Load()) }

// Ambiguous reports whether an attempt of a write may have been applied
// although the client did not receive a success: its response was lost, it
// timed out, it answered 500, 502 or 504, or the context ended while it was
// in flight.
func (t *Trace) Ambiguous() bool { return t.ambiguous.Load() }

func traceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
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
