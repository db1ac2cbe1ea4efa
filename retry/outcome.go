package retry

import (
	"errors"
	"net"
	"net/http"
	"syscall"

	"github.com/tablekit/tablekit/internal/retrycore"
)

// ErrOutcomeUnknown means a write may or may not have been applied: an
// attempt's response was lost (connection reset after the request was
// sent, a timeout, a 500/502/504 answer, the context ending while the
// request was in flight), and nothing later settled the question. The
// write must not be repeated blindly: re-read to find out, or report the
// uncertainty. Neither Policy.Do's default classifier nor RetryOn412
// retries such an error. A client built with ApplyTo returns it for a
// write whose attempt may have been applied and whose final attempt failed;
// the error unwraps to the final attempt's error, so errors.As(err,
// **azcore.ResponseError) still reports its status.
//
// Package table's writes resolve the question by reading where they can and
// return this error only when they cannot.
var ErrOutcomeUnknown = retrycore.ErrOutcomeUnknown

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
	return retrycore.MayHaveApplied(resp.StatusCode)
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
