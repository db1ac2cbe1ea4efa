package retry

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/tablekit/tablekit/internal/retrycore"
)

// Policy is the partitioning article's jittered exponential backoff as a
// value. A Policy is immutable once in use and safe for concurrent use.
//
// The zero Policy makes one attempt and never retries (MaxRetries is 0); all
// its delays are 0.
type Policy struct {
	// Default is z, the default backoff: the unit of the exponential part.
	Default time.Duration
	// Min is zmin, added to every delay.
	Min time.Duration
	// Max is zmax, the ceiling of every delay. Zero or negative means no
	// ceiling (delays still never overflow).
	Max time.Duration
	// MaxRetries is the number of retries after the first attempt; 0 means
	// no retries. At most 1 + MaxRetries attempts are ever made.
	MaxRetries int

	// FullJitter draws each delay uniformly from [Min, Min + min(z(2^x-1),
	// Max-Min)) instead of the guide's ±20%. It spreads contending clients
	// further apart; see the package documentation for measurements.
	// Default: false (the guide's formula).
	FullJitter bool
	// Rand returns uniform random numbers in [0, 1) for the jitter. Default
	// (nil): math/rand/v2's Float64. Set it in tests for reproducible delays;
	// it must be safe for concurrent use if the Policy is.
	Rand func() float64
	// Retryable decides which errors Do retries. Default (nil): the
	// transient failures of the package documentation ("What is retried"),
	// for a function whose failures nothing else retries. A loop around a
	// client's requests (an optimistic-concurrency read-modify-write) uses
	// RetryOn412 or its own classifier of its conflicts only: the client's
	// pipeline has retried transient failures already, and retrying them
	// again would stack the two budgets. The pipeline policy of ApplyTo
	// classifies HTTP responses itself and ignores this field.
	Retryable func(error) bool
	// MaxRetryAfter caps how long a service's Retry-After hint (or
	// x-ms-retry-after-ms) may make a wait: the wait is the larger of
	// Delay(x) and the capped hint. Default (0): Max, or
	// DefaultMaxRetryAfter (1 minute) when Max is not set either.
	MaxRetryAfter time.Duration
	// OnRetry, if set, is called before each retry's wait, with what failed
	// and how long the wait will be. It must be safe for concurrent use; it
	// is never given request bodies, keys or SAS tokens.
	OnRetry func(Event)
}

// Event describes one retry, for OnRetry hooks and logging.
type Event struct {
	Attempt    int           // the attempt that failed, 1 for the first
	Delay      time.Duration // the wait before the next attempt
	StatusCode int           // the failed attempt's HTTP status, 0 if none
	ErrorCode  string        // the service's error code (x-ms-error-code), if any
	Err        error         // the failure; for transport errors the URL is removed
}

// Guide is the partitioning article's sample policy: z = 30 s, zmin = 3 s,
// zmax = 90 s. The article gives no retry count; Guide uses 5, which with
// these numbers waits about 33 s, then 90 s four times: over six minutes in
// all, a policy for background work, not for requests a user waits on.
var Guide = Policy{Default: 30 * time.Second, Min: 3 * time.Second, Max: 90 * time.Second, MaxRetries: 5}

// Default is the policy tablekit's clients use unless told otherwise, for
// interactive applications: z = 200 ms, zmin = 100 ms, zmax = 5 s,
// 5 retries. Its waits are about 0.3, 0.7, 1.5, 3.1 and 5 s (±20% of the
// exponential part), about 10.6 s in all: long enough to ride through the few
// seconds a partition is offline while it is moved between servers, short
// enough to fail a user's request within seconds when the service is really
// down. The first retry comes after ~0.3 s, about the latency budget of one
// interactive request, instead of azcore's 0.8 s.
var Default = Policy{Default: 200 * time.Millisecond, Min: 100 * time.Millisecond, Max: 5 * time.Second, MaxRetries: 5}

const maxDuration = time.Duration(math.MaxInt64)

// Delay returns the wait before retry number x (1 for the first retry):
//
//	y = Rand(0.8z, 1.2z) * (2^x - 1)
//	y = Min(zmin + y, zmax)
//
// For x < 1 (no retry yet) it returns 0. Large x never overflow: the result
// stays at zmax (or the largest Duration when there is no ceiling).
func (p Policy) Delay(x int) time.Duration {
	if x < 1 {
		return 0
	}
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	ceiling := maxDuration
	if p.Max > 0 {
		ceiling = p.Max
	}
	// z(2^x - 1), as a float: it may reach +Inf for huge x, which the
	// comparison with the ceiling below handles; bounding x keeps a zero z
	// at zero (0 * 2^1000, not 0 * Inf = NaN).
	expo := float64(p.Default) * (math.Exp2(float64(min(x, 1000))) - 1)
	var y float64
	if p.FullJitter {
		y = float64(p.Min) + r()*math.Max(0, math.Min(expo, float64(ceiling-p.Min)))
	} else {
		y = float64(p.Min) + (0.8+0.4*r())*expo
	}
	if y >= float64(ceiling) { // compare as floats: converting a huge y would wrap
		return ceiling
	}
	return max(0, time.Duration(y))
}

// Error is the final error of a retry loop that retried: of Do, where
// Attempts counts the calls of its function, and of the pipeline policy of
// ApplyTo, for a request that failed without an HTTP answer (a transport
// failure, or the context ending during a wait) after it was retried, where
// Attempts counts the HTTP attempts sent. It wraps the last error and tells
// how many attempts were made, so no count is claimed but the loop's own:
// a read-modify-write that made one pass, whose request the pipeline tried
// six times, fails with the pipeline's Error (6 HTTP attempts), not the
// loop's. errors.Is and errors.As see through it to the last error (and to
// the context's error when the context ended).
type Error struct {
	Attempts int
	Err      error // the last error of the function or request
	ctxErr   error // set when the context ended the loop
	http     bool  // the pipeline's: Attempts counts HTTP attempts
}

// Error gives the last error and the number of attempts: "(after 3
// attempt(s))" for Do, "(after 6 HTTP attempts)" for the pipeline.
func (e *Error) Error() string {
	unit := "attempt(s)"
	if e.http {
		unit = "HTTP attempts"
	}
	if e.ctxErr != nil {
		return fmt.Sprintf("%v after %d %s; last error: %v", e.ctxErr, e.Attempts, unit, e.Err)
	}
	return fmt.Sprintf("%v (after %d %s)", e.Err, e.Attempts, unit)
}

// Unwrap returns the last error and, if the context ended the loop, the
// context's error.
func (e *Error) Unwrap() []error {
	if e.ctxErr != nil {
		return []error{e.ctxErr, e.Err}
	}
	return []error{e.Err}
}

// Do calls fn until it succeeds, returns an error that is not retryable (see
// Retryable), or 1 + MaxRetries attempts have failed, waiting Delay(x) (or
// longer when the service asked for it with Retry-After) before retry x. It
// stops at once when ctx ends, and does not start a wait that would end after
// ctx's deadline; the error then satisfies errors.Is(err, ctx.Err()) (or
// context.DeadlineExceeded). A failure after retries, or one the context
// ended, is returned as *Error, which wraps fn's last error so
// errors.As(err, **azcore.ResponseError) still works; the error of a first
// attempt that is not retried is returned as it is.
func (p Policy) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	retryable := p.Retryable
	if retryable == nil {
		retryable = isRetryable
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return &Error{Attempts: attempt - 1, Err: err, ctxErr: err}
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if err, ok := retrycore.Stopped(err); ok {
			return err // tablekit's own loops: the error of their making, as it is
		}
		if ctx.Err() != nil {
			return &Error{Attempts: attempt, Err: err, ctxErr: ctx.Err()}
		}
		if attempt > p.MaxRetries || !retryable(err) {
			if attempt == 1 {
				return err // nothing was retried: the loop adds nothing to say
			}
			return &Error{Attempts: attempt, Err: err}
		}
		var resp *http.Response
		if re := responseErrorOf(err); re != nil {
			resp = re.RawResponse
		}
		delay := max(p.Delay(attempt), p.retryAfter(resp))
		if pastDeadline(ctx, delay) {
			return &Error{Attempts: attempt, Err: err, ctxErr: context.DeadlineExceeded}
		}
		p.notify(attempt, delay, resp, err)
		if cerr := retrycore.Sleep(ctx, delay); cerr != nil {
			return &Error{Attempts: attempt, Err: err, ctxErr: cerr}
		}
		retrycore.Of(ctx).Retried()
	}
}
