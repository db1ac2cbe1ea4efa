package retry

import (
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// ApplyTo installs p in o in place of azcore's built-in retry: it disables
// the built-in policy (o.Retry.MaxRetries = -1, a single try) and adds p as a
// per-call policy, replacing any Policy an earlier ApplyTo installed, so
// retries are never stacked. Because per-call policies run before request
// signing, every attempt is rewound and re-signed (fresh x-ms-date and
// Authorization). A client built from o makes at most 1 + p.MaxRetries
// attempts per operation. It works for aztables, azqueue and azblob clients:
// pass &opts.ClientOptions.
//
// The pipeline retries by HTTP status (RetryableStatus) and transport error
// (IsRetryable); p.Retryable is not consulted. It retries every method,
// including inserts and batches: when a response is lost after the service
// applied the request, the retry answers 409 (insert) or 412 (conditional
// update) although the first attempt succeeded. tablekit's packages handle
// those answers; code using the raw client must too.
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
	for attempt := 1; ; attempt++ {
		if err := req.RewindBody(); err != nil {
			return nil, fmt.Errorf("retry: rewinding the request body: %w", err)
		}
		resp, err := req.Clone(ctx).Next()
		if ctx.Err() != nil || attempt > pp.p.MaxRetries || !shouldRetry(resp, err) {
			return resp, err
		}
		delay := max(pp.p.Delay(attempt), retryAfter(resp))
		if pastDeadline(ctx, delay) {
			return resp, err // the caller sees the real failure, not a bare deadline
		}
		pp.p.notify(attempt, delay, resp, responseAsError(resp, err))
		if resp != nil {
			runtime.Drain(resp)
		}
		if cerr := sleep(ctx, delay); cerr != nil {
			return nil, cerr
		}
	}
}

func shouldRetry(resp *http.Response, err error) bool {
	if err != nil {
		return IsRetryable(err)
	}
	return RetryableStatus(resp.StatusCode)
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
