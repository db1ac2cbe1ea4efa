package retry

import (
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/retrycore"
)

// ApplyTo installs p in o in place of azcore's built-in retry: it disables
// the built-in policy (o.Retry.MaxRetries = -1, a single try) and adds p as a
// per-call policy, replacing any Policy an earlier ApplyTo installed, so
// retries are never stacked. Because per-call policies run before request
// signing, every attempt is rewound and re-signed (fresh x-ms-date and
// Authorization). A client built from o makes at most 1 + p.MaxRetries
// attempts per request. It works for aztables, azqueue and azblob clients:
// pass &opts.ClientOptions. A request that failed without an HTTP answer
// after it was retried (a transport failure) fails with an *Error whose
// Attempts are the HTTP attempts sent; the final HTTP answer of a request
// (a 503 after retries) is returned as the response, which the SDK turns
// into its *azcore.ResponseError.
//
// tablekit's read-modify-write loops (Policy.Do with RetryOn412 or another
// classifier of conflicts) retry conflicts only, never what this policy
// retries, so the budget of a request is spent once, not once per pass of a
// loop.
//
// The pipeline retries the transient failures of the package documentation
// ("What is retried"), by HTTP status and transport error; p.Retryable is
// not consulted. It retries every method, including inserts and batches:
// when a response is lost after the service applied the request, the retry
// answers 409 (insert) or 412 (conditional update) although the first
// attempt succeeded. The policy therefore tracks, for every write (any
// method but GET, HEAD and OPTIONS), whether an attempt's outcome was
// ambiguous (its response was lost, it timed out, it answered 500, 502 or
// 504, or the context ended while it was in flight); when one was and the
// final attempt did not succeed, the client returns an error that satisfies
// errors.Is(err, ErrOutcomeUnknown) and wraps the final answer, instead of
// the bare 409, 412 or 404, so no caller mistakes it for a rejection.
// tablekit's packages go further and resolve the question by reading.
func (p Policy) ApplyTo(o *azcore.ClientOptions) {
	o.Retry.MaxRetries = -1
	kept := o.PerCallPolicies[:0:0]
	for _, pol := range o.PerCallPolicies {
		if _, ours := pol.(*pipelinePolicy); !ours {
			kept = append(kept, pol)
		}
	}
	o.PerCallPolicies = append(kept, &pipelinePolicy{p: p})
}

// pipelinePolicy is p as an azcore pipeline policy.
type pipelinePolicy struct{ p Policy }

func (pp *pipelinePolicy) Do(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	tr := retrycore.Of(ctx)
	write := isWrite(req.Raw())
	ambiguous := false
	for attempt := 1; ; attempt++ {
		if err := req.RewindBody(); err != nil {
			return nil, fmt.Errorf("retry: rewinding the request body: %w", err)
		}
		if err := ctx.Err(); err != nil && attempt == 1 {
			return nil, err // never sent: certainly not applied
		}
		resp, err := req.Clone(ctx).Next()
		lost := write && attemptAmbiguous(resp, err)
		ambiguous = ambiguous || lost
		tr.Attempt(statusOf(resp), lost)
		if ctx.Err() != nil || attempt > pp.p.MaxRetries || !shouldRetry(resp, err) {
			if err != nil && attempt > 1 && ctx.Err() == nil {
				err = &Error{Attempts: attempt, Err: err, http: true} // its own count of HTTP attempts
			}
			return final(ambiguous, resp, err)
		}
		delay := max(pp.p.Delay(attempt), pp.p.retryAfter(resp))
		if pastDeadline(ctx, delay) {
			if err != nil && attempt > 1 {
				err = &Error{Attempts: attempt, Err: err, http: true}
			}
			return final(ambiguous, resp, err) // the caller sees the real failure, not a bare deadline
		}
		last := responseAsError(resp, err)
		pp.p.notify(attempt, delay, resp, last)
		if resp != nil {
			runtime.Drain(resp)
		}
		if cerr := retrycore.Sleep(ctx, delay); cerr != nil {
			// The last real failure, wrapped with the context's error.
			return final(ambiguous, nil, &Error{Attempts: attempt, Err: last, ctxErr: cerr, http: true})
		}
		tr.Retried()
	}
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// final is what the policy returns for a write whose attempts may have been
// applied: a success is returned as it is (for a conditional or
// create-only write it proves the earlier attempt had not been applied;
// for others, such as a queue message, the earlier attempt may have been
// applied too: that is the caller's at-least-once), anything else is a
// an error matching ErrOutcomeUnknown around the final answer.
func final(ambiguous bool, resp *http.Response, err error) (*http.Response, error) {
	err = redact.Error(err)
	switch {
	case !ambiguous:
		return resp, err
	case err != nil:
		return nil, &retrycore.OutcomeError{Err: err}
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp, nil
	}
	return nil, &retrycore.OutcomeError{Err: runtime.NewResponseError(resp)}
}

func shouldRetry(resp *http.Response, err error) bool {
	if err != nil {
		return isRetryable(err)
	}
	return retryableStatus(resp.StatusCode)
}

// responseAsError describes a failed response for the OnRetry hook without
// reading its body.
func responseAsError(resp *http.Response, err error) error {
	if err != nil || resp == nil {
		return err
	}
	code := resp.Header.Get("x-ms-error-code")
	return &azcore.ResponseError{StatusCode: resp.StatusCode, ErrorCode: code}
}
