package table_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
)

// The http side of the benchmarks: requests a client cannot make much
// cheaper. Bodies are encoded before the clock starts, requests are built
// by hand, signed with SharedKeyLite and sent with a plain net/http client;
// responses are read and discarded (reads only count entities), and writes
// ask for no response body (Prefer: return-no-content). Its rate is the
// emulator's ceiling for the work, and its CPU per entity the floor of
// a Go client's.

// rawHTTP sends signed requests to one account's table service.
type rawHTTP struct {
	client  *http.Client
	service string // table service URL without a trailing slash
	account string
	key     []byte
}

// newRawHTTP reads the account name, key and table endpoint from a
// storage connection string.
func newRawHTTP(connStr string) (*rawHTTP, error) {
	service, _, err := table.ParseConnectionString(connStr)
	if err != nil {
		return nil, err
	}
	h := &rawHTTP{service: strings.TrimSuffix(service, "/"), client: &http.Client{Transport: &http.Transport{
		MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
	}}}
	for _, kv := range strings.Split(connStr, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "accountname":
			h.account = v
		case "accountkey":
			if h.key, err = base64.StdEncoding.DecodeString(v); err != nil {
				return nil, fmt.Errorf("account key: %w", err)
			}
		}
	}
	if h.account == "" || h.key == nil {
		return nil, fmt.Errorf("connection string has no AccountName or AccountKey")
	}
	return h, nil
}

// do signs req with SharedKeyLite (string to sign: the x-ms-date header,
// a newline, then "/" + account + the URL's escaped path; for the
// emulator's path-style URLs the path starts with the account again) and
// sends it. It returns the body when the status is want.
func (h *rawHTTP) do(req *http.Request, want int) ([]byte, http.Header, error) {
	date := time.Now().UTC().Format(http.TimeFormat)
	mac := hmac.New(sha256.New, h.key)
	mac.Write([]byte(date + "\n/" + h.account + req.URL.EscapedPath()))
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("DataServiceVersion", "3.0")
	req.Header.Set("Accept", "application/json;odata=minimalmetadata")
	req.Header.Set("Authorization", "SharedKeyLite "+h.account+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		return nil, nil, fmt.Errorf("%s %s: status %d: %.300s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return body, resp.Header, nil
}

// insert adds one entity, encoded as JSON, to tbl.
func (h *rawHTTP) insert(ctx context.Context, tbl string, entity []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.service+"/"+tbl, bytes.NewReader(entity))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "return-no-content")
	_, _, err = h.do(req, http.StatusNoContent)
	return err
}

// get reads one entity and discards it.
func (h *rawHTTP) get(ctx context.Context, tbl, pk, rk string) error {
	u := h.service + "/" + tbl + "(PartitionKey='" + url.PathEscape(pk) + "',RowKey='" + url.PathEscape(rk) + "')"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	_, _, err = h.do(req, http.StatusOK)
	return err
}

// scan reads every page of a query and returns how many entities it held
// (counted, not decoded).
func (h *rawHTTP) scan(ctx context.Context, tbl, filter, sel string) (int, error) {
	q := url.Values{"$filter": {filter}, "$select": {sel}}
	n := 0
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.service+"/"+tbl+"()?"+q.Encode(), nil)
		if err != nil {
			return n, err
		}
		body, hdr, err := h.do(req, http.StatusOK)
		if err != nil {
			return n, err
		}
		n += bytes.Count(body, []byte(`"RowKey":`))
		npk, nrk := hdr.Get("x-ms-continuation-NextPartitionKey"), hdr.Get("x-ms-continuation-NextRowKey")
		if npk == "" {
			return n, nil
		}
		q.Set("NextPartitionKey", npk)
		q.Set("NextRowKey", nrk)
	}
}

// batchBody builds the multipart body of one entity group transaction
// that inserts entities (JSON) into tbl, and its content type.
func (h *rawHTTP) batchBody(tbl string, entities [][]byte) ([]byte, string) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	batch, changeset := "batch_"+hex.EncodeToString(rnd[:4]), "changeset_"+hex.EncodeToString(rnd[4:])
	var b bytes.Buffer
	fmt.Fprintf(&b, "--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n", batch, changeset)
	for _, e := range entities {
		fmt.Fprintf(&b, "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n", changeset)
		fmt.Fprintf(&b, "POST %s/%s HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\n"+
			"Prefer: return-no-content\r\nDataServiceVersion: 3.0\r\n\r\n", h.service, tbl)
		b.Write(e)
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "--%s--\r\n\r\n--%s--\r\n", changeset, batch)
	return b.Bytes(), "multipart/mixed; boundary=" + batch
}

// submit sends a transaction built by batchBody and checks that no
// operation failed.
func (h *rawHTTP) submit(ctx context.Context, body []byte, contentType string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.service+"/$batch", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, _, err := h.do(req, http.StatusAccepted)
	if err != nil {
		return err
	}
	if bytes.Contains(resp, []byte("HTTP/1.1 4")) || bytes.Contains(resp, []byte("HTTP/1.1 5")) {
		return fmt.Errorf("transaction failed: %.500s", resp)
	}
	return nil
}

// httpBatches is a bulk load prepared for the http side: the bodies of
// 100-entity transactions, grouped by partition.
type httpBatches [][]struct {
	body        []byte
	contentType string
}

// prepareBatches encodes rows (outside the timed region) as transactions
// of at most 100 inserts each, per partition.
func (h *rawHTTP) prepareBatches(b *testing.B, tbl string, rows []row) httpBatches {
	b.Helper()
	var out httpBatches
	for _, part := range byPartition(rows) {
		var txs []struct {
			body        []byte
			contentType string
		}
		for len(part) > 0 {
			n := min(table.Storage.MaxBatchOps, len(part))
			entities := make([][]byte, n)
			for i, r := range part[:n] {
				entities[i] = mustJSON(b, toRaw(r))
			}
			body, ct := h.batchBody(tbl, entities)
			txs = append(txs, struct {
				body        []byte
				contentType string
			}{body, ct})
			part = part[n:]
		}
		out = append(out, txs)
	}
	return out
}

// load sends prepared transactions with conc partitions in flight at once,
// each partition's transactions in order.
func (h *rawHTTP) load(ctx context.Context, parts httpBatches, conc int) error {
	return eachPartition(len(parts), conc, func(p int) error {
		for _, tx := range parts[p] {
			if err := h.submit(ctx, tx.body, tx.contentType); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkCeiling measures the emulator's ceiling with the http side
// alone: single inserts (500 per iteration) and 100-entity transactions
// (10,000 entities over 10 partitions per iteration), with one and with
// four requests in flight. Every iteration writes into a fresh table.
func BenchmarkCeiling(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"insert", "batch"} {
		for _, conc := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/conc=%d", kind, conc), func(b *testing.B) {
				bn := newBench(b)
				if bn.probing() {
					return
				}
				n := 500
				if kind == "batch" {
					n = 10000
				}
				rows := benchRows(n, 10)
				run := func(tbl string, bodies [][]byte, batches httpBatches) error {
					if kind == "batch" {
						return bn.http.load(ctx, batches, conc)
					}
					var next atomic.Int64
					return eachPartition(conc, conc, func(int) error {
						for i := int(next.Add(1)) - 1; i < len(bodies); i = int(next.Add(1)) - 1 {
							if err := bn.http.insert(ctx, tbl, bodies[i]); err != nil {
								return err
							}
						}
						return nil
					})
				}
				prepare := func(tbl string) ([][]byte, httpBatches) {
					if kind == "batch" {
						return nil, bn.http.prepareBatches(b, tbl, rows)
					}
					bodies := make([][]byte, len(rows))
					for i, r := range rows {
						bodies[i] = mustJSON(b, toRaw(r))
					}
					return bodies, nil
				}
				warm := bn.table()
				bodies, batches := prepare(warm)
				if kind == "batch" {
					batches = batches[:1]
				} else {
					bodies = bodies[:20]
				}
				if err := run(warm, bodies, batches); err != nil {
					b.Fatal(err)
				}
				s := &side{name: "http"}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					tbl := bn.table()
					bodies, batches := prepare(tbl)
					bn.settle()
					b.StartTimer()
					s.measure(b, n, func() error { return run(tbl, bodies, batches) })
					b.StopTimer()
					bn.drop(tbl)
					b.StartTimer()
				}
				s.report(b)
			})
		}
	}
}

// eachPartition calls f(0), ..., f(n-1) with at most conc calls running at
// once, and returns the first error. After an error the calls not yet
// started are skipped.
func eachPartition(n, conc int, f func(p int) error) error {
	work := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				mu.Lock()
				failed := first != nil
				mu.Unlock()
				if failed {
					continue
				}
				if err := f(p); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for p := range n {
		work <- p
	}
	close(work)
	wg.Wait()
	return first
}
