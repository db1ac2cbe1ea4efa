package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// This file is the direct path: the same REST requests the SDK sends,
// built from the codec's bytes and sent through tablekit's own pipeline
// for the service (see known.go: the SDK client's authentication, retry
// policy, logging and tracing), without the SDK's round trip of every
// entity through map[string]any. The SDK unmarshals each entity of a
// batch or a query page into a map and marshals it again; profiles showed
// most of the client's CPU there.
//
// Only clients tablekit built have the pipeline (aztables does not export
// its own). Other clients, and Cosmos DB Table API accounts (whose merge
// needs the SDK's rewriting), take the SDK's methods, with the same
// results.

// direct sends requests for one table.
type direct struct {
	pl       runtime.Pipeline
	endpoint string   // the service URL, such as https://acct.table.core.windows.net
	base     *url.URL // endpoint, parsed
	sas      string   // the endpoint's query string (a SAS client's token), or ""
	table    string
}

// directOf returns the direct path of the client a describes, or nil to
// use the SDK.
func directOf(a *about) *direct {
	// Table Storage by its endpoint and as described: Cosmos DB takes the
	// SDK's path, with its X-HTTP-Method rewrite.
	if a.acct == nil || a.name == "" || a.acct.profile != Storage || a.profile != Storage {
		return nil
	}
	return &direct{pl: a.acct.pl, endpoint: a.acct.endpoint, base: a.acct.base, sas: a.acct.sas, table: a.name}
}

const (
	minimalMetadata = "application/json;odata=minimalmetadata"
	serviceVersion  = "2019-02-02"
)

// url returns the URL of escaped path under the endpoint, with the
// endpoint's query string (a SAS), as a batch operation names it.
func (d *direct) url(path string) string {
	if d.sas != "" {
		return d.endpoint + path + "?" + d.sas
	}
	return d.endpoint + path
}

// entityPath is the path of one entity: keys quoted for OData (quotes
// doubled), then escaped for the path.
func (d *direct) entityPath(pk, rk string) string {
	return "/" + url.PathEscape(d.table) + "(PartitionKey='" + url.PathEscape(strings.ReplaceAll(pk, "'", "''")) +
		"',RowKey='" + url.PathEscape(strings.ReplaceAll(rk, "'", "''")) + "')"
}

// requestURL is the URL of escaped path under the endpoint with the
// endpoint's query string (a SAS) and then query, built without parsing.
func (d *direct) requestURL(path, query string) (*url.URL, error) {
	u := *d.base
	raw := d.base.EscapedPath() + path
	p, err := url.PathUnescape(raw)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawPath = p, raw
	switch {
	case d.sas != "" && query != "":
		u.RawQuery = d.sas + "&" + query
	case d.sas != "":
		u.RawQuery = d.sas
	default:
		u.RawQuery = query
	}
	return &u, nil
}

// Header values every request carries; never modified.
var (
	versionHeader  = []string{serviceVersion}
	dataSvcHeader  = []string{"3.0"}
	acceptHeader   = []string{minimalMetadata}
	noContentPrefr = []string{"return-no-content"}
)

// do sends one request through the pipeline and returns the response when
// its status is one of ok, else the service's error. path is escaped.
func (d *direct) do(ctx context.Context, method, path, query string, header http.Header, body []byte, contentType string, ok ...int) (*http.Response, error) {
	u, err := d.requestURL(path, query)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 8)
	h["x-ms-version"] = versionHeader
	h["DataServiceVersion"] = dataSvcHeader
	h["Accept"] = acceptHeader
	for k, v := range header {
		h[k] = v
	}
	raw := (&http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Host: u.Host}).WithContext(ctx)
	req, err := runtime.NewRequestFromRequest(raw)
	if err != nil {
		return nil, err
	}
	if body != nil {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), contentType); err != nil {
			return nil, err
		}
	}
	resp, err := d.pl.Do(req)
	if err != nil {
		return nil, err
	}
	if !runtime.HasStatusCode(resp, ok...) {
		return nil, runtime.NewResponseError(resp)
	}
	return resp, nil
}

// operation returns the method and escaped path of a write of kind to the
// entity (pk, rk), as the REST API and aztables' batches send it.
func (d *direct) operation(kind aztables.TransactionType, pk, rk string) (method, path string) {
	switch kind {
	case aztables.TransactionTypeAdd:
		return http.MethodPost, "/" + url.PathEscape(d.table)
	case aztables.TransactionTypeInsertMerge, aztables.TransactionTypeUpdateMerge:
		return http.MethodPatch, d.entityPath(pk, rk)
	case aztables.TransactionTypeDelete:
		return http.MethodDelete, d.entityPath(pk, rk)
	}
	return http.MethodPut, d.entityPath(pk, rk)
}

// write sends an insert (pk, rk empty), update, upsert or delete and
// returns the new ETag. The response body, if any, is not needed.
func (d *direct) write(ctx context.Context, kind aztables.TransactionType, pk, rk string, body []byte, etag azcore.ETag) (azcore.ETag, error) {
	method, path := d.operation(kind, pk, rk)
	h := make(http.Header, 2)
	switch kind {
	case aztables.TransactionTypeAdd:
		h["Prefer"] = noContentPrefr
	case aztables.TransactionTypeDelete:
		body = nil
	}
	if etag != "" {
		h["If-Match"] = []string{string(etag)}
	}
	resp, err := d.do(ctx, method, path, "", h, body, "application/json", http.StatusNoContent, http.StatusCreated, http.StatusOK)
	if err != nil {
		return "", err
	}
	runtime.Drain(resp)
	return azcore.ETag(resp.Header.Get("ETag")), nil
}

// get reads one entity's JSON and ETag.
func (d *direct) get(ctx context.Context, pk, rk string) ([]byte, azcore.ETag, error) {
	// No $format: the Accept header asks for minimal metadata, as the SDK's
	// GetEntity does, and the service has no query string to parse.
	resp, err := d.do(ctx, http.MethodGet, d.entityPath(pk, rk), "", nil, nil, "", http.StatusOK)
	if err != nil {
		return nil, "", err
	}
	body, err := runtime.Payload(resp) // already read by the pipeline: no copy
	return body, azcore.ETag(resp.Header.Get("ETag")), err
}

// query fetches one page: the entities' JSON objects and the continuation.
func (d *direct) query(ctx context.Context, o *aztables.ListEntitiesOptions) (entities [][]byte, nextPK, nextRK *string, err error) {
	q := url.Values{"$format": {minimalMetadata}}
	if o.Top != nil {
		q.Set("$top", strconv.Itoa(int(*o.Top)))
	}
	if o.Select != nil {
		q.Set("$select", *o.Select)
	}
	if o.Filter != nil {
		q.Set("$filter", *o.Filter)
	}
	if o.NextPartitionKey != nil {
		q.Set("NextPartitionKey", *o.NextPartitionKey)
	}
	if o.NextRowKey != nil {
		q.Set("NextRowKey", *o.NextRowKey)
	}
	resp, err := d.do(ctx, http.MethodGet, "/"+url.PathEscape(d.table)+"()", q.Encode(), nil, nil, "", http.StatusOK)
	if err != nil {
		return nil, nil, nil, err
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, nil, nil, err
	}
	if entities, err = splitPage(body); err != nil {
		return nil, nil, nil, err
	}
	if v := resp.Header.Get("x-ms-continuation-NextPartitionKey"); v != "" {
		nextPK = &v
	}
	if v := resp.Header.Get("x-ms-continuation-NextRowKey"); v != "" {
		nextRK = &v
	}
	return entities, nextPK, nextRK, nil
}

// splitPage returns the entity objects of a query response,
// {"odata.metadata":"...","value":[{...},{...}]}, as slices of body. Each
// is checked in full when it is decoded.
func splitPage(body []byte) ([][]byte, error) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, syntaxAt(body, i, "expected '{'")
	}
	var entities [][]byte
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] != '}' {
		name, _, _, next, err := scanString(body, i)
		if err != nil {
			return nil, err
		}
		i = skipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return nil, syntaxAt(body, i, "expected ':'")
		}
		i = skipSpace(body, i+1)
		if string(name) == "value" {
			if entities, i, err = splitArray(body, i); err != nil {
				return nil, err
			}
		} else if _, i, err = scanValue(body, i); err != nil {
			return nil, err
		}
		i = skipSpace(body, i)
		switch {
		case i < len(body) && body[i] == ',':
			i = skipSpace(body, i+1)
		case i < len(body) && body[i] == '}':
		default:
			return nil, syntaxAt(body, i, "expected ',' or '}'")
		}
	}
	if i >= len(body) {
		return nil, syntaxAt(body, i, "expected '}'")
	}
	if j := skipSpace(body, i+1); j < len(body) {
		return nil, syntaxAt(body, j, "data after the object")
	}
	return entities, nil
}

// splitArray splits the array of flat objects at body[i].
func splitArray(body []byte, i int) ([][]byte, int, error) {
	if i >= len(body) || body[i] != '[' {
		return nil, i, syntaxAt(body, i, "expected '['")
	}
	var out [][]byte
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] != ']' {
		if body[i] != '{' {
			return nil, i, syntaxAt(body, i, "expected '{'")
		}
		start := i
		for i++; i < len(body) && body[i] != '}'; i++ {
			switch body[i] {
			case '"':
				_, _, _, next, err := scanString(body, i)
				if err != nil {
					return nil, i, err
				}
				i = next - 1
			case '{', '[':
				return nil, i, syntaxAt(body, i, "nested value in an entity")
			}
		}
		if i >= len(body) {
			return nil, i, syntaxAt(body, i, "expected '}'")
		}
		i++
		out = append(out, body[start:i])
		i = skipSpace(body, i)
		switch {
		case i < len(body) && body[i] == ',':
			i = skipSpace(body, i+1)
		case i < len(body) && body[i] == ']':
		default:
			return nil, i, syntaxAt(body, i, "expected ',' or ']'")
		}
	}
	if i >= len(body) {
		return nil, i, syntaxAt(body, i, "expected ']'")
	}
	return out, i + 1, nil
}

// batch sends one transaction and returns its raw 202 response, or the
// service's error for the whole request. Inner failures are in the body.
func (d *direct) batch(ctx context.Context, ops []Op, tx txn, bodies [][]byte) (*http.Response, error) {
	batchID, changesetID := boundaryID(), boundaryID()
	var b bytes.Buffer
	b.Grow(512 + len(tx)*600)
	b.WriteString("--batch_" + batchID + "\r\nContent-Type: multipart/mixed; boundary=changeset_" + changesetID + "\r\n\r\n")
	for j, i := range tx {
		o := ops[i]
		b.WriteString("--changeset_" + changesetID + "\r\nContent-Transfer-Encoding: binary\r\nContent-Type: application/http\r\n\r\n")
		method, path := d.operation(o.kind, o.pk, o.rk)
		b.WriteString(method + " " + d.url(path) + " HTTP/1.1\r\nAccept: " + minimalMetadata + "\r\n")
		if o.kind != aztables.TransactionTypeDelete {
			b.WriteString("Content-Type: application/json\r\n")
		}
		b.WriteString("DataServiceVersion: 3.0\r\n")
		if o.etag != nil {
			b.WriteString("If-Match: " + string(*o.etag) + "\r\n")
		} else if o.kind == aztables.TransactionTypeDelete {
			b.WriteString("If-Match: *\r\n")
		}
		if o.kind == aztables.TransactionTypeAdd {
			b.WriteString("Prefer: return-no-content\r\n")
		}
		b.WriteString("\r\n")
		if o.kind != aztables.TransactionTypeDelete {
			b.Write(bodies[j])
		}
		b.WriteString("\r\n")
	}
	b.WriteString("--changeset_" + changesetID + "--\r\n\r\n--batch_" + batchID + "--\r\n")
	resp, err := d.do(ctx, http.MethodPost, "/$batch", "", nil, b.Bytes(), "multipart/mixed; boundary=batch_"+batchID, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	if _, err := runtime.Payload(resp); err != nil { // read and cache the body
		return nil, err
	}
	return resp, nil
}

// boundaryID returns a random UUID-shaped multipart boundary suffix: hex
// digits and dashes, as the SDK sends. (Azurite 3.37 answers 500 to a batch
// whose boundary suffix starts with '-', which a base64url id sometimes
// does.)
func boundaryID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return GUID(b).String()
}

// innerFailure reports whether a 202 batch response of n operations does
// not hold n successful answers: an inner status of 400 or more, or fewer
// answers than operations (a body the service answers with when the whole
// request failed).
func innerFailure(resp *http.Response, n int) bool {
	body, err := runtime.Payload(resp)
	if err != nil {
		return true
	}
	ok := 0
	for rest := body; ; {
		i := bytes.Index(rest, []byte("HTTP/1.1 "))
		if i < 0 || i+12 > len(rest) {
			return ok < n
		}
		if rest[i+9] >= '4' {
			return true
		}
		ok++
		rest = rest[i+12:]
	}
}
