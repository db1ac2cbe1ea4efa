// Package cosmosim is a test transport that gives a table emulator
// (Azurite) the semantics of the Cosmos DB Table API where they differ from
// Table Storage's, so that tablekit's patterns can be proven correct (or
// shown to refuse) under the Cosmos profile without a Cosmos account.
//
// Clients are built on a Cosmos-looking endpoint
// (http://<account>.table.cosmos.azure.com/), so that aztables and tablekit
// take their Cosmos paths (the SDK's MERGE rewrite, table.Cosmos as the
// profile, no direct path); the Transport forwards each request to the
// emulator, rewriting the URL (and the URLs inside batch bodies), undoing
// the MERGE rewrite the emulator does not know, and signing again with the
// account key. On the way it does what Cosmos DB does and the emulator
// does not:
//
//   - query results come in no key order, within and across pages: each
//     query is read whole from the emulator, put in an order chosen by the
//     seed (reversed, so that the first page of n holds the largest keys,
//     or shuffled), and paged again with opaque continuation tokens;
//   - a RowKey over 255 bytes is 400, a transaction body over 2 MB is 413,
//     an entity's JSON over 2 MB is 413, the property names id, rid, etag
//     and resourceid are 400;
//   - a filter on Timestamp matches nothing;
//   - stored access policies (comp=acl) are 501;
//   - a listing of tables comes in no name order either;
//   - with Throttle > 0, that share of requests is answered 429 (with
//     x-ms-retry-after-ms when RetryAfter is set; the Table endpoint was
//     seen to send none) and Cosmos DB's {"Errors":[...]} body, without
//     reaching the emulator.
//
// Requests the transport refuses never reach the emulator, as Cosmos DB
// would not apply them. What the emulator itself refuses stays refused:
// Azurite takes no entity body over 1 MiB, so entities between 1 MiB and
// Cosmos DB's 2 MB cannot be stored under the simulation. Requests to other hosts (the queues and blobs of a
// Storage account beside the tables) pass through untouched.
package cosmosim

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Host returns the Cosmos-looking host of account's table endpoint.
func Host(account string) string { return account + hostSuffix }

const hostSuffix = ".table.cosmos.azure.com"

// IsHost reports whether host is one Host returns: the requests the
// transport gives Cosmos DB's semantics.
func IsHost(host string) bool { return strings.HasSuffix(strings.ToLower(host), hostSuffix) }

// Transport is a policy.Transporter; it is safe for concurrent use.
type Transport struct {
	// Next reaches the emulator. Default: http.DefaultClient.
	Next policy.Transporter
	// Target is the emulator's table endpoint, such as
	// http://127.0.0.1:10002/devstoreaccount1.
	Target *url.URL
	// Account and Key sign requests again for Target's path.
	Account string
	Key     []byte
	// Seed chooses the orders of query results.
	Seed uint64
	// Throttle is the share of requests answered 429 (0 to 1).
	Throttle float64
	// RetryAfter is the x-ms-retry-after-ms of a 429; 0 sends none.
	RetryAfter time.Duration

	once  sync.Once
	mu    sync.Mutex
	rnd   *rand.Rand
	pages map[string]pending // continuation token -> what is left
}

// pending is the rest of a query's results after a page.
type pending struct {
	top      int
	entities []json.RawMessage
	head     map[string]json.RawMessage // the page object's other members
	header   http.Header
}

// Limits of the Cosmos DB Table API that the transport enforces.
const (
	MaxRowKeyBytes = 255
	MaxBatchBody   = 2 << 20
	MaxEntityJSON  = 2 << 20
)

// reservedNames are the property names Cosmos DB keeps (any case).
var reservedNames = []string{"id", "rid", "etag", "resourceid"}

// Do implements policy.Transporter.
func (t *Transport) Do(req *http.Request) (*http.Response, error) {
	t.once.Do(func() {
		t.rnd = rand.New(rand.NewPCG(t.Seed, t.Seed^0x5eed))
		t.pages = map[string]pending{}
	})
	if !IsHost(req.URL.Hostname()) {
		return t.next().Do(req)
	}
	if t.Throttle > 0 && t.float() < t.Throttle {
		return t.throttled(req), nil
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	q := req.URL.Query()
	if q.Get("comp") == "acl" {
		return answer(req, http.StatusNotImplemented, "NotImplemented", nil), nil
	}
	if resp := t.refuse(req, body); resp != nil {
		return resp, nil
	}
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "()") {
		return t.query(req)
	}
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/Tables") {
		return t.tables(req)
	}
	return t.forward(req, body)
}

// refuse answers the requests Cosmos DB refuses: keys, entity and batch
// sizes, reserved property names.
func (t *Transport) refuse(req *http.Request, body []byte) *http.Response {
	if rk, ok := urlRowKey(req.URL); ok && len(rk) > MaxRowKeyBytes {
		return answer(req, http.StatusBadRequest, "InvalidInput", nil)
	}
	if strings.HasSuffix(req.URL.Path, "$batch") {
		if len(body) > MaxBatchBody {
			return answer(req, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", nil)
		}
		for _, m := range batchEntities.FindAllSubmatch(body, -1) {
			if code := checkEntity(m[1]); code != 0 {
				return answer(req, code, http.StatusText(code), nil)
			}
		}
		return nil
	}
	if len(body) > 0 && req.Method != http.MethodGet && req.Method != http.MethodDelete {
		if code := checkEntity(body); code != 0 {
			return answer(req, code, http.StatusText(code), nil)
		}
	}
	return nil
}

// mergePost and mergeHeader find the MERGE rewrite in a batch body.
var (
	mergePost   = regexp.MustCompile(`(?m)^POST (\S+\)) HTTP/1\.1`)
	mergeHeader = regexp.MustCompile(`(?mi)^X-HTTP-Method: MERGE\r\n`)
)

// batchEntities finds the JSON bodies of a batch's requests.
var batchEntities = regexp.MustCompile(`(?s)\r?\n\r?\n(\{.*?\})\r?\n--changeset`)

// checkEntity returns the status Cosmos DB answers for entity JSON, 0
// when it is accepted.
func checkEntity(e []byte) int {
	if len(e) > MaxEntityJSON {
		return http.StatusRequestEntityTooLarge
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(e, &props) != nil {
		return 0 // not an entity (a table create): the emulator decides
	}
	for name := range props {
		if slices.ContainsFunc(reservedNames, func(r string) bool { return strings.EqualFold(name, r) }) {
			return http.StatusBadRequest
		}
	}
	if rk, ok := props["RowKey"]; ok {
		var s string
		if json.Unmarshal(rk, &s) == nil && len(s) > MaxRowKeyBytes {
			return http.StatusBadRequest
		}
	}
	return 0
}

var keyInURL = regexp.MustCompile(`RowKey='((?:[^']|'')*)'\)$`)

// urlRowKey returns the RowKey a point request's path names.
func urlRowKey(u *url.URL) (string, bool) {
	m := keyInURL.FindStringSubmatch(u.Path)
	if m == nil {
		return "", false
	}
	return strings.ReplaceAll(m[1], "''", "'"), true
}

// forward sends req to the emulator: URL rewritten, MERGE restored,
// signed again.
func (t *Transport) forward(req *http.Request, body []byte) (*http.Response, error) {
	r := req.Clone(req.Context())
	from := req.URL.Scheme + "://" + req.URL.Host
	r.URL = t.rewrite(req.URL)
	r.Host = r.URL.Host
	if r.Method == http.MethodPost && strings.EqualFold(r.Header.Get("X-HTTP-Method"), "MERGE") {
		r.Method = http.MethodPatch
		r.Header.Del("X-HTTP-Method")
	}
	if body != nil {
		if strings.HasSuffix(r.URL.Path, "$batch") {
			body = bytes.ReplaceAll(body, []byte(from+"/"), []byte(t.Target.String()+"/"))
			// A merge is a POST to an entity's URL (an insert's has no
			// keys) with X-HTTP-Method: MERGE: the emulator wants PATCH.
			body = mergePost.ReplaceAll(body, []byte("PATCH $1"))
			body = mergeHeader.ReplaceAll(body, nil)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	t.sign(r)
	return t.next().Do(r)
}

// rewrite maps a Cosmos-looking URL onto the emulator's endpoint.
func (t *Transport) rewrite(u *url.URL) *url.URL {
	out := *u
	out.Scheme, out.Host = t.Target.Scheme, t.Target.Host
	out.Path = strings.TrimSuffix(t.Target.Path, "/") + u.Path
	if u.RawPath != "" {
		out.RawPath = strings.TrimSuffix(t.Target.EscapedPath(), "/") + u.RawPath
	}
	return &out
}

// sign signs r again with SharedKeyLite for its new path (a SAS request
// carries its signature in the query and is left alone).
func (t *Transport) sign(r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "SharedKeyLite ") {
		return
	}
	res := "/" + t.Account + r.URL.EscapedPath()
	if comp := r.URL.Query().Get("comp"); comp != "" {
		res += "?comp=" + comp
	}
	h := hmac.New(sha256.New, t.Key)
	h.Write([]byte(r.Header.Get("x-ms-date") + "\n" + res))
	r.Header.Set("Authorization", "SharedKeyLite "+t.Account+":"+base64.StdEncoding.EncodeToString(h.Sum(nil)))
}

func (t *Transport) next() policy.Transporter {
	if t.Next != nil {
		return t.Next
	}
	return http.DefaultClient
}

func (t *Transport) float() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rnd.Float64()
}

// token prefixes the continuation tokens the transport makes.
const token = "cosmosim-"

// query answers a query the way Cosmos DB may: the whole result, read from
// the emulator, in an order of no key, paged again.
func (t *Transport) query(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	top := 1000
	if s := q.Get("$top"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			top = n
		}
	}
	if next := q.Get("NextPartitionKey"); strings.HasPrefix(next, token) {
		t.mu.Lock()
		p, ok := t.pages[next] // kept: a token may be used again, as Cosmos DB's may
		t.mu.Unlock()
		if !ok {
			return answer(req, http.StatusBadRequest, "InvalidContinuationToken", nil), nil
		}
		p.top = top // each request's $top sizes its page
		return t.page(req, p)
	}
	if f := q.Get("$filter"); strings.Contains(f, "Timestamp") {
		// Cosmos DB's Timestamp is _ts: a filter on it matches nothing.
		return t.page(req, pending{top: top, head: map[string]json.RawMessage{}, header: http.Header{"Content-Type": {"application/json;odata=minimalmetadata"}}})
	}
	q.Set("$top", "1000")
	all, resp, err := t.readAll(req, q, "query", func(h http.Header) bool {
		npk, nrk := h.Get("x-ms-continuation-NextPartitionKey"), h.Get("x-ms-continuation-NextRowKey")
		q.Set("NextPartitionKey", npk)
		q.Set("NextRowKey", nrk)
		return npk != "" || nrk != ""
	})
	if resp != nil || err != nil {
		return resp, err
	}
	all.top = top
	t.reorder(all.entities)
	return t.page(req, all)
}

// reorder puts entities (or tables) in an order of no key: reversed (the
// largest keys first) or shuffled, as the seed decides.
func (t *Transport) reorder(es []json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rnd.IntN(2) == 0 {
		slices.Reverse(es) // the emulator's order is key (or name) order
		return
	}
	t.rnd.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
}

// page answers with the first top entities of p and keeps the rest under
// a fresh token.
func (t *Transport) page(req *http.Request, p pending) (*http.Response, error) {
	n := min(p.top, len(p.entities))
	h := p.header.Clone()
	h.Del("x-ms-continuation-NextPartitionKey")
	h.Del("x-ms-continuation-NextRowKey")
	if rest := p.entities[n:]; len(rest) > 0 {
		t.mu.Lock()
		tok := fmt.Sprintf("%s%016x", token, t.rnd.Uint64())
		t.pages[tok] = pending{top: p.top, entities: rest, head: p.head, header: p.header}
		t.mu.Unlock()
		h.Set("x-ms-continuation-NextPartitionKey", tok)
		h.Set("x-ms-continuation-NextRowKey", "RT:1")
	}
	obj := map[string]json.RawMessage{}
	for k, v := range p.head {
		obj[k] = v
	}
	value, _ := json.Marshal(p.entities[:n])
	obj["value"] = value
	b, _ := json.Marshal(obj)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req}, nil
}

// throttled is Cosmos DB's 429: its own body, not an OData error, and
// x-ms-retry-after-ms when RetryAfter is set.
func (t *Transport) throttled(req *http.Request) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {"TooManyRequests"}}
	if t.RetryAfter > 0 {
		h.Set("X-Ms-Retry-After-Ms", strconv.FormatInt(t.RetryAfter.Milliseconds(), 10))
	}
	body := `{"Errors":["Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later."]}`
	return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}

// tables answers a listing of tables in an order of no name: every page
// read from the emulator, reversed or shuffled, in one page.
func (t *Transport) tables(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	all, resp, err := t.readAll(req, q, "tables", func(h http.Header) bool {
		next := h.Get("x-ms-continuation-NextTableName")
		q.Set("NextTableName", next)
		return next != ""
	})
	if resp != nil || err != nil {
		return resp, err
	}
	t.reorder(all.entities)
	all.top = len(all.entities)
	all.header.Del("x-ms-continuation-NextTableName")
	return t.page(req, all)
}

// readAll reads every page of the listing req names, with query q, from
// the emulator: the pages' values in one pending (not yet reordered), the
// first page's other members and headers. more sets q for the next page
// from a page's headers and reports whether there is one. A response that
// is not 200 is returned as it is.
func (t *Transport) readAll(req *http.Request, q url.Values, what string, more func(http.Header) bool) (pending, *http.Response, error) {
	var all pending
	for {
		r := req.Clone(req.Context())
		r.URL = t.rewrite(req.URL)
		r.URL.RawQuery = q.Encode()
		r.Host = r.URL.Host
		t.sign(r)
		resp, err := t.next().Do(r)
		if err != nil {
			return all, nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return all, nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body = io.NopCloser(bytes.NewReader(b))
			return all, resp, nil
		}
		var obj map[string]json.RawMessage
		var value []json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return all, nil, fmt.Errorf("cosmosim: %s page: %w", what, err)
		}
		if err := json.Unmarshal(obj["value"], &value); err != nil {
			return all, nil, fmt.Errorf("cosmosim: %s page value: %w", what, err)
		}
		delete(obj, "value")
		if all.head == nil {
			all.head, all.header = obj, resp.Header.Clone()
		}
		all.entities = append(all.entities, value...)
		if !more(resp.Header) {
			return all, nil, nil
		}
	}
}

// answer is a service error response with an OData error body.
func answer(req *http.Request, status int, code string, extra http.Header) *http.Response {
	h := http.Header{}
	for k, v := range extra {
		h[k] = v
	}
	h.Set("x-ms-error-code", code)
	h.Set("Content-Type", "application/json")
	body := fmt.Sprintf(`{"odata.error":{"code":%q,"message":{"lang":"en-US","value":"cosmosim: %s"}}}`, code, code)
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}
