// Package faults is a fault-injecting HTTP transport for tests: it sits
// between an Azure SDK client and a real server (Azurite) as the client's
// azcore Transport, records every request that reaches it, and injects
// scripted faults: error statuses, transport errors, delays, and responses
// lost after the server applied the request.
package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/internal/retrycore"
)

// ErrLost is the transport error returned for a response lost by a
// LoseResponse fault. It wraps syscall.ECONNRESET, as a dropped connection
// would.
var ErrLost = fmt.Errorf("faults: response lost after the server handled the request: %w", syscall.ECONNRESET)

// Fault is one scripted failure. A Fault applies to the first request that
// Match accepts (any request when Match is nil) and is then used up.
type Fault struct {
	// Match selects the request the fault applies to. Nil matches any.
	Match func(*http.Request) bool
	// Delay is waited before anything else (honouring the request's context).
	Delay time.Duration
	// Status, if non-zero, answers with this status (and Header, and an
	// OData error body with code ErrorCode) without forwarding the request.
	Status    int
	ErrorCode string
	Header    http.Header
	// Err, if non-nil, is returned as a transport error without forwarding.
	Err error
	// LoseResponse forwards the request to the server, then drops the
	// response and returns ErrLost: the server applied the request but the
	// client does not know.
	LoseResponse bool
	// AfterServer, if set with LoseResponse, is called after the server
	// answered and before the loss is reported: a hook to cancel the
	// request's context between commit and response, or to let another
	// writer act before the client's next attempt.
	AfterServer func()
	// Respond, if set, answers with the response it builds, without
	// forwarding: for shapes of answers a real service gives and the
	// emulator does not.
	Respond func(*http.Request) *http.Response
}

// Request is what the transport recorded of one request that reached it.
type Request struct {
	Method, URL string
	Date, Auth  string // x-ms-date and Authorization headers
	Body        []byte
	Merge       bool // IsMerge: a PATCH, or the POST that stands for one on Cosmos DB
	Injected    bool // a fault answered (or lost) it
	Status      int  // the status returned to the client, 0 for a transport error
}

// Transport is a policy.Transporter. Its zero value forwards to
// http.DefaultClient. It is safe for concurrent use.
type Transport struct {
	// Next receives forwarded requests. Default: http.DefaultClient.
	Next policy.Transporter

	mu       sync.Mutex
	faults   []Fault
	requests []Request
}

// Inject queues faults; each is used by one matching request, in order.
func (t *Transport) Inject(f ...Fault) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults = append(t.faults, f...)
}

// Count returns how many requests reached the transport: the round trips
// the client attempted.
func (t *Transport) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.requests)
}

// Requests returns a copy of the recorded requests.
func (t *Transport) Requests() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Request(nil), t.requests...)
}

// Reset forgets recorded requests and pending faults.
func (t *Transport) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults, t.requests = nil, nil
}

// Do implements policy.Transporter.
func (t *Transport) Do(req *http.Request) (*http.Response, error) {
	rec := Request{Method: req.Method, URL: req.URL.String(), Date: req.Header.Get("x-ms-date"), Auth: req.Header.Get("Authorization"), Merge: IsMerge(req)}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		rec.Body = body
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	f, ok := t.take(req)
	resp, err := t.apply(req, f, ok)
	rec.Injected = ok
	if resp != nil {
		rec.Status = resp.StatusCode
	}
	t.mu.Lock()
	t.requests = append(t.requests, rec)
	t.mu.Unlock()
	return resp, err
}

func (t *Transport) take(req *http.Request) (Fault, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, f := range t.faults {
		if f.Match == nil || f.Match(req) {
			t.faults = append(t.faults[:i:i], t.faults[i+1:]...)
			return f, true
		}
	}
	return Fault{}, false
}

func (t *Transport) next() policy.Transporter {
	if t.Next != nil {
		return t.Next
	}
	return http.DefaultClient
}

func (t *Transport) apply(req *http.Request, f Fault, ok bool) (*http.Response, error) {
	if !ok {
		return t.next().Do(req)
	}
	if f.Delay > 0 {
		if err := retrycore.Sleep(req.Context(), f.Delay); err != nil {
			return nil, err
		}
	}
	switch {
	case f.Respond != nil:
		return f.Respond(req), nil
	case f.Err != nil:
		return nil, f.Err
	case f.Status != 0:
		return response(req, f), nil
	case f.LoseResponse:
		resp, err := t.next().Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if f.AfterServer != nil {
			f.AfterServer()
			if err := req.Context().Err(); err != nil {
				return nil, err
			}
		}
		return nil, ErrLost
	}
	return t.next().Do(req)
}

func response(req *http.Request, f Fault) *http.Response {
	h := http.Header{}
	for k, v := range f.Header {
		h[k] = append([]string(nil), v...)
	}
	code := f.ErrorCode
	if code == "" {
		code = "InjectedFault"
	}
	h.Set("x-ms-error-code", code)
	h.Set("Content-Type", "application/json")
	body := fmt.Sprintf(`{"odata.error":{"code":%q,"message":{"lang":"en-US","value":"injected by faults.Transport"}}}`, code)
	return &http.Response{
		StatusCode:    f.Status,
		Status:        fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// BodyContains matches requests whose body contains s (for Fault.Match).
func BodyContains(s string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if r.GetBody == nil {
			return false
		}
		body, err := r.GetBody()
		if err != nil {
			return false
		}
		defer body.Close()
		b, _ := io.ReadAll(body)
		return bytes.Contains(b, []byte(s))
	}
}

// IsMerge reports whether req is a merge (an update or upsert of some
// properties): PATCH, or the POST with X-HTTP-Method: MERGE that the SDK
// sends to Cosmos DB in its place.
func IsMerge(req *http.Request) bool {
	return req.Method == http.MethodPatch || req.Method == http.MethodPost && strings.EqualFold(req.Header.Get("X-HTTP-Method"), "MERGE")
}
