package transfer_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// nth matches the n-th request (from 1) that match matches.
func nth(n int64, match func(*http.Request) bool) func(*http.Request) bool {
	var seen atomic.Int64
	return func(q *http.Request) bool { return match(q) && seen.Add(1) == n }
}

// blobPut matches an upload to the blob service (a chunk, the manifest,
// the checkpoint).
func blobPut(q *http.Request) bool {
	return q.Method == http.MethodPut && strings.Contains(q.URL.Path, "/")
}

// tableBatch matches an entity group transaction.
func tableBatch(q *http.Request) bool {
	return q.Method == http.MethodPost && strings.HasSuffix(q.URL.Path, "$batch")
}

// TestLostResponses loses the response of each of an export's first
// uploads (the request reached the service; the retry policy sends it
// again), and of an import's first transaction and checkpoint write: each
// run ends without an error, and the restored table equals the source.
func TestLostResponses(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 40)
	for n := int64(1); n <= 4; n++ {
		prefix := fmt.Sprintf("lost/%d", n)
		r.Faults.Reset()
		r.Faults.Inject(faults.Fault{Match: nth(n, blobPut), LoseResponse: true})
		if _, err := transfer.Export(ctx, src, blobs, prefix, &transfer.Options{ChunkBytes: 4 << 10}); err != nil {
			t.Fatalf("export, response of upload %d lost: %v", n, err)
		}
		if sum, err := transfer.VerifyExport(ctx, blobs, prefix, src, nil); err != nil {
			t.Fatalf("export, response of upload %d lost: %v (missing %v, extra %v, changed %v)", n, err, sum.Missing, sum.Extra, sum.Changed)
		}
	}
	for _, tc := range []struct {
		what  string
		match func(*http.Request) bool
	}{
		{"the first transaction", nth(1, tableBatch)},
		{"the second transaction", nth(2, tableBatch)},
		{"the first checkpoint write", nth(2, blobPut)},
	} {
		dst := r.Table()
		r.Faults.Reset()
		r.Faults.Inject(faults.Fault{Match: tc.match, LoseResponse: true})
		if _, err := transfer.Import(ctx, blobs, "lost/1", dst, &transfer.Options{ChunkBytes: 4 << 10}); err != nil {
			t.Fatalf("import, response of %s lost: %v", tc.what, err)
		}
		if n := r.Faults.Count(); n == 0 {
			t.Fatalf("import, %s: no request", tc.what)
		}
		verifyEqual(t, src, dst)
	}
}
