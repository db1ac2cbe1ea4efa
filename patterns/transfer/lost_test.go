package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
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

// TestLateWriteOfACrashedRun: a manifest write of a crashed run that
// lands after the resume read the manifest (its request was on its way
// when the process died) has marked a range done: the resume's next write
// finds the manifest changed, reads it, and leaves that range alone
// rather than failing with "taken over by another process".
func TestLateWriteOfACrashedRun(t *testing.T) {
	r := testrig.New(t)
	ctx := context.Background()
	src, blobs := r.Table(), r.Container()
	seed(t, src, 40)
	var crashes testrig.Crashes
	crashes.At("manifest", 1)
	o := &transfer.Options{Ranges: 2, ChunkBytes: 4 << 10, Concurrency: 1}
	transfer.SetHook(o, crashes.Hook)
	if _, err := transfer.Export(ctx, src, blobs, "late", o); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("export: %v, want the crash", err)
	}
	manifestPut := func(q *http.Request) bool {
		return q.Method == http.MethodPut && strings.HasSuffix(q.URL.Path, "/late/manifest.json")
	}
	late := false
	r.Faults.Inject(faults.Fault{Match: nth(1, manifestPut), Respond: func(q *http.Request) *http.Response {
		// The crashed run's write lands first: range 1 done.
		var m map[string]any
		if err := json.Unmarshal(download(t, blobs, "late/manifest.json"), &m); err != nil {
			t.Error(err)
		}
		rng := m["ranges"].([]any)[1].(map[string]any)
		rng["done"] = true
		delete(rng, "next")
		b, _ := json.MarshalIndent(m, "", " ")
		upload(t, blobs, "late/manifest.json", b)
		late = true
		resp, err := http.DefaultClient.Do(q) // the resume's own write: 412
		if err != nil {
			t.Error(err)
		}
		return resp
	}})
	o.Resume = true
	transfer.SetHook(o, nil)
	if _, err := transfer.Export(ctx, src, blobs, "late", o); err != nil || !late {
		t.Fatalf("resume after a late write (landed: %v): %v", late, err)
	}
	var m struct {
		Complete bool
		Ranges   []struct{ Done bool }
	}
	if err := json.Unmarshal(download(t, blobs, "late/manifest.json"), &m); err != nil || !m.Complete || len(m.Ranges) != 2 {
		t.Fatalf("manifest after the resume: %+v, %v", m, err)
	}
}
