// Package retrycore is what package retry shares with tablekit's other
// packages and no user needs: the per-operation Trace of the requests the
// pipeline policy (retry.Policy.ApplyTo) sent, the outcome-unknown error
// that policy returns for a write, the statuses after which a write may
// still have been applied, the interruptible wait, and the marker by which
// a read-modify-write's own error ends a retry.Policy.Do loop. Being
// internal, it is tablekit's own; users see its effects through package
// retry (retry.ErrOutcomeUnknown, retry.Error) and the telemetry of the
// patterns (the tablekit.round_trips and tablekit.retries span attributes,
// the tablekit.retries and tablekit.throttled metrics).
package retrycore

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrOutcomeUnknown is retry.ErrOutcomeUnknown (documented there): a write
// may or may not have been applied.
var ErrOutcomeUnknown = errors.New("outcome unknown: the write may or may not have been applied")

// OutcomeError is what a client built with retry.Policy.ApplyTo returns for
// a write (any method but GET, HEAD and OPTIONS) when an attempt's outcome
// was ambiguous and the final attempt did not succeed: typically a resend
// after a lost response answered 409 (insert), 412 (conditional update) or
// 404 (delete) because the first attempt had already been applied. It
// satisfies errors.Is(err, ErrOutcomeUnknown) and unwraps to the final
// attempt's error, so errors.As(err, **azcore.ResponseError) still reports
// the status. tablekit's packages take Err out of it (errors.As) to settle
// the question by reading.
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

// Trace records what the pipeline policy of retry.Policy.ApplyTo did with
// the requests made with a context from Track: how many attempts were sent,
// how many of them were resends, which throttling answers came back, and
// whether any attempt of a write may have been applied without the client
// learning so. Traces nest: a Trace made by Track under another's context
// records its requests in the enclosing Traces too, so an operation made of
// several requests (a pattern's, or a read-modify-write) counts all of them
// while each request's own Trace still knows only its own. retry.Policy.Do's
// retries count as resends in the Trace of its context. It is safe for
// concurrent use; a nil *Trace records nothing.
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
// has retry's policy (ApplyTo) record their attempts in the Trace and in
// every enclosing one.
func Track(ctx context.Context) (context.Context, *Trace) {
	t := &Trace{parent: Of(ctx)}
	return context.WithValue(ctx, traceKey{}, t), t
}

// Of returns the Trace ctx carries, or nil.
func Of(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// Tracked reports whether a policy installed by ApplyTo saw a request made
// with the Trace's context. When it did not (a client built without
// ApplyTo), Attempts and Ambiguous know nothing.
func (t *Trace) Tracked() bool { return t.seen.Load() }

// Attempts returns the number of attempts sent.
func (t *Trace) Attempts() int { return int(t.attempts.Load()) }

// Retries returns how many of the attempts were resends, by the pipeline
// policy (a transient failure) or by a retry.Policy.Do loop run with the
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

// Attempt records one attempt sent, answered with status (0 for none), in
// t and the Traces enclosing it; ambiguous marks an attempt of a write that
// may have been applied. t may be nil.
func (t *Trace) Attempt(status int, ambiguous bool) {
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

// Retried records one resend in t and the Traces enclosing it; t may be
// nil.
func (t *Trace) Retried() {
	for ; t != nil; t = t.parent {
		t.retries.Add(1)
	}
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

// Sleep waits d, or until ctx ends and then returns ctx's error (at once
// for d <= 0 when ctx has ended): the interruptible wait of retry loops,
// workers polling an empty queue, and delays injected in tests.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop marks err as final for retry.Policy.Do: Do returns err itself, not
// retried and not wrapped in *retry.Error, whatever the policy's Retryable
// would say of it. tablekit's read-modify-writes mark the errors of their
// own making with it, such as the error of the caller's modify function.
// Stop(nil) is nil.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return &stopError{err}
}

type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// Stopped returns the error err marks with Stop, and whether it does.
func Stopped(err error) (error, bool) {
	var stop *stopError
	if errors.As(err, &stop) {
		return stop.err, true
	}
	return nil, false
}
