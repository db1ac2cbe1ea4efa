package table_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// canned answers every request at once with the answer of a successful
// insert (204) or point get (200 and one entity), so that a benchmark
// measures the client's own work per operation (build the request, sign
// it, run the pipeline's policies, encode or decode the entity) without
// the network and the scheduler's waiting, which BenchmarkPointOps
// includes. It stands in for no service behaviour: nothing is checked.
type canned struct{ entity string }

func (c canned) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	h := http.Header{"Etag": {`W/"datetime'2024-05-06T07%3A08%3A09.1234567Z'"`}, "X-Ms-Request-Id": {"r"}, "Date": {"Mon, 06 May 2024 07:08:09 GMT"}}
	if req.Method == http.MethodGet {
		h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(c.entity)), Request: req}, nil
	}
	return &http.Response{StatusCode: 204, Header: h, Body: http.NoBody, Request: req}, nil
}

// BenchmarkClientWork: the Go CPU and allocations of one point insert and
// one point get on the client's side alone, tablekit's Table (direct path,
// its own pipeline) beside the careful raw aztables code (the struct
// marshalled with encoding/json, AddEntity; GetEntity and json.Unmarshal),
// both with the same client options (retry.Default, Shared Key) over a
// transport that answers at once.
func BenchmarkClientWork(b *testing.B) {
	const cs = "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	ctx := context.Background()
	entity, err := json.Marshal(toRaw(newRow("p", 1)))
	if err != nil {
		b.Fatal(err)
	}
	opts := func() *aztables.ClientOptions {
		o := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Transport: canned{string(entity)}}}
		retry.Default.ApplyTo(&o.ClientOptions)
		return o
	}
	tkSvc, err := table.NewServiceClientFromConnectionString(cs, opts())
	if err != nil {
		b.Fatal(err)
	}
	tb, err := table.New[row](table.NewClient(tkSvc, "bench"), nil)
	if err != nil {
		b.Fatal(err)
	}
	rawSvc, err := aztables.NewServiceClientFromConnectionString(cs, opts())
	if err != nil {
		b.Fatal(err)
	}
	raw := rawSvc.NewClient("bench")
	r := newRow("p", 1)
	b.Run("insert/tablekit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tb.Insert(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("insert/raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body, err := json.Marshal(toRaw(r))
			if err == nil {
				_, err = raw.AddEntity(ctx, body, nil)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/tablekit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tb.Get(ctx, "p", r.RowKey, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := raw.GetEntity(ctx, "p", r.RowKey, nil)
			if err != nil {
				b.Fatal(err)
			}
			var v rawRow
			if err := json.Unmarshal(resp.Value, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
