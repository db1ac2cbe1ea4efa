package eventual_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// sasQueue returns a SAS URL for queue q (http allowed, for the emulator)
// and its signature.
func sasQueue(t *testing.T, q *azqueue.QueueClient) (string, string) {
	t.Helper()
	cred, err := azqueue.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	perms := queuesas.QueuePermissions{Read: true, Add: true, Update: true, Process: true}
	qp, err := queuesas.QueueSignatureValues{Protocol: queuesas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), Permissions: perms.String(), QueueName: path.Base(q.URL())}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	u := q.URL() + "?" + qp.Encode()
	return u, signature(t, u)
}

// sasContainer returns a SAS URL for container c and its signature.
func sasContainer(t *testing.T, c *container.Client) (string, string) {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	perms := blobsas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}
	qp, err := blobsas.BlobSignatureValues{Protocol: blobsas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), Permissions: perms.String(), ContainerName: path.Base(c.URL())}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	u := c.URL() + "?" + qp.Encode()
	return u, signature(t, u)
}

func signature(t *testing.T, sasURL string) string {
	t.Helper()
	u, err := url.Parse(sasURL)
	if err != nil {
		t.Fatal(err)
	}
	sig := u.Query().Get("sig")
	if sig == "" {
		t.Fatalf("no signature in %s", sasURL)
	}
	return sig
}

// refused is a fault for the first request match accepts: the error
// net/http returns for a request that could not connect, a *url.Error
// quoting the request's whole URL, query string included.
func refused(match func(*http.Request) bool) faults.Fault {
	ue := &url.Error{Err: syscall.ECONNREFUSED}
	return faults.Fault{Err: ue, Match: func(q *http.Request) bool {
		if !match(q) {
			return false
		}
		ue.Op, ue.URL = q.Method, q.URL.String()
		return true
	}}
}

// Through queue and blob clients made from SAS URLs, with plain SDK options
// and with tablekit's retry policy, no error an exported operation returns,
// no log line, no Event, and nothing the worker stores (a message's last
// error, the poison queue, a commit record) holds a signature, raw or
// URL-encoded, when requests fail.
func TestNoSignatureLeaks(t *testing.T) {
	t.Parallel()
	for _, tablekitPolicy := range []bool{false, true} {
		name := "plain SDK options"
		if tablekitPolicy {
			name = "tablekit retry policy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testNoSignatureLeaks(t, tablekitPolicy)
		})
	}
}

func testNoSignatureLeaks(t *testing.T, tablekitPolicy bool) {
	r := testrig.New(t)
	ctx := context.Background()
	adminQ, adminP, adminC := r.CleanQueue(), r.CleanQueue(), r.Env.Container(nil)
	qURL, qSig := sasQueue(t, adminQ)
	pURL, pSig := sasQueue(t, adminP)
	cURL, cSig := sasContainer(t, adminC)
	sigs := []string{qSig, pSig, cSig}
	leaks := func(s string) bool {
		for _, sig := range sigs {
			if strings.Contains(s, sig) || strings.Contains(s, url.QueryEscape(sig)) || strings.Contains(s, url.PathEscape(sig)) {
				return true
			}
		}
		return false
	}
	ft := r.Faults
	attempts := 3
	co := clientOptions(ft, tablekitPolicy)
	if tablekitPolicy {
		attempts = 1 + testrig.Fast.MaxRetries
	}
	queue, err := azqueue.NewQueueClientWithNoCredential(qURL, &azqueue.ClientOptions{ClientOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	poison, err := azqueue.NewQueueClientWithNoCredential(pURL, &azqueue.ClientOptions{ClientOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := container.NewClientWithNoCredential(cURL, &container.ClientOptions{ClientOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	tc := r.Env.Table(nil)
	orders := testrig.NewTable[order](t, tc)
	q, err := eventual.New(queue, poison, &eventual.Options{Blobs: blobs, Tables: []*aztables.Client{tc}, CommitWindow: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// fail makes the next attempts of the requests match selects fail as
	// an unreachable endpoint does, each with its own *url.Error.
	fail := func(n int, match func(*http.Request) bool) {
		for range n {
			ft.Inject(refused(match))
		}
	}
	is := func(method, part string) func(*http.Request) bool {
		return func(q *http.Request) bool {
			return q.Method == method && strings.Contains(q.URL.Path, part) && !strings.Contains(q.URL.RawQuery, "peekonly")
		}
	}
	queueName, poisonName := adminQ.URL()[strings.LastIndex(adminQ.URL(), "/"):], adminP.URL()[strings.LastIndex(adminP.URL(), "/"):]
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if leaks(err.Error()) || leaks(fmt.Sprintf("%+v", err)) {
			t.Errorf("%s: the error holds a signature: %v", what, err)
		}
		var ue *url.Error
		if errors.As(err, &ue) && leaks(ue.URL) {
			t.Errorf("%s: the error's *url.Error holds a signature: %s", what, ue.URL)
		}
	}
	k := eventual.NewKind[string]("k")
	big := strings.Repeat("x", 100<<10)

	// The exported operations, each with its requests failing.
	fail(attempts, is(http.MethodPost, queueName+"/messages"))
	_, err = q.Enqueue(ctx, k.New("small"))
	check("Enqueue", err)
	ft.Reset()
	fail(attempts, is(http.MethodPut, "/intents/"))
	_, err = q.Enqueue(ctx, k.New(big))
	check("Enqueue of a claim check", err)
	ft.Reset()
	fail(attempts, is(http.MethodPost, queueName+"/messages"))
	_, err = q.Commit(ctx, tc, []table.Op{orders.InsertOp(order{Customer: "c0", ID: "o0"})}, k.New("small"))
	check("Commit", err)
	ft.Reset()
	fail(attempts, func(q *http.Request) bool {
		return q.Method == http.MethodGet && strings.Contains(q.URL.RawQuery, "peekonly")
	})
	_, err = q.Poisoned(ctx, 1)
	check("Poisoned", err)
	ft.Reset()
	fail(attempts, func(q *http.Request) bool {
		return q.Method == http.MethodGet && strings.Contains(q.URL.RawQuery, "comp=metadata")
	})
	w0, err := eventual.NewWorker(q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error { return nil })}, workerOptions())
	if err != nil {
		t.Fatal(err)
	}
	stopRun := testrig.Start(t, func(ctx context.Context) error { _ = w0.Run(ctx); return nil })
	check("Drain", w0.Drain(ctx)) // with Run running: it reads the queue
	stopRun()
	ft.Reset()
	fail(attempts, func(q *http.Request) bool {
		return q.Method == http.MethodGet && strings.Contains(q.URL.RawQuery, "comp=list")
	})
	_, err = q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: time.Hour})
	check("Sweep", err)
	ft.Reset()
	ft.Inject(faults.Fault{Match: is(http.MethodGet, queueName+"/messages"), Status: http.StatusForbidden, ErrorCode: "AuthorizationFailure"})
	check("Run", w0.Run(ctx))
	ft.Reset()

	// A worker whose requests fail: a dequeue (logged), a claim check's
	// download (twice: recorded in the message, then in the poison queue
	// and the commit record), the poison queue's enqueue (an event), and a
	// handler returning an SDK error (recorded, then given to the handler).
	var logged bytes.Buffer
	var mu sync.Mutex
	var events []eventual.Event
	var lastErrors []string
	opts := workerOptions()
	opts.MaxDeliveries = 2
	opts.Telemetry = &table.Telemetry{Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logged, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	opts.OnEvent = func(e eventual.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	leaky := eventual.NewKind[string]("leaky")
	w, err := eventual.NewWorker(q, []eventual.Handler{
		k.Handle(func(context.Context, eventual.Intent[string]) error { return nil }),
		leaky.Handle(func(ctx context.Context, in eventual.Intent[string]) error {
			if in.LastError != "" {
				mu.Lock()
				lastErrors = append(lastErrors, in.LastError)
				mu.Unlock()
				return nil
			}
			_, err := blobs.NewBlobClient("leaky").DownloadStream(ctx, nil)
			return err
		}),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Commit(ctx, tc, []table.Op{orders.InsertOp(order{Customer: "c1", ID: "o1"})}, k.New(big)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, leaky.New("x")); err != nil {
		t.Fatal(err)
	}
	fail(attempts, is(http.MethodGet, queueName+"/messages"))
	fail(2*attempts, is(http.MethodGet, "/intents/"))
	fail(attempts, is(http.MethodGet, "/leaky"))
	fail(attempts, is(http.MethodPost, poisonName+"/messages"))
	stop := start(t, w)
	drain(t, w)
	stop()

	mu.Lock()
	defer mu.Unlock()
	if leaks(logged.String()) {
		t.Errorf("the log holds a signature:\n%s", logged.String())
	}
	types := map[eventual.EventType]int{}
	for _, e := range events {
		types[e.Type]++
		if e.Err != nil && leaks(e.Err.Error()) {
			t.Errorf("a %s event's Err holds a signature: %v", e.Type, e.Err)
		}
	}
	if types[eventual.Failed] < 3 || types[eventual.Poisoned] != 1 {
		t.Errorf("events %v; want the failures and the claim check poisoned", types)
	}
	if len(lastErrors) != 1 || leaks(lastErrors[0]) {
		t.Errorf("the leaky intent's recorded errors: %q", lastErrors)
	}
	if !strings.Contains(logged.String(), "dequeue failed") {
		t.Errorf("no dequeue failure logged:\n%s", logged.String())
	}
	// What the worker stored.
	peek, err := adminP.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: ptrTo(int32(32))})
	if err != nil || len(peek.Messages) != 1 {
		t.Fatalf("poison queue: %+v, %v", peek, err)
	}
	raw, err := base64.StdEncoding.DecodeString(*peek.Messages[0].MessageText)
	if err != nil || leaks(string(raw)) {
		t.Errorf("the poison queue holds a signature: %s (%v)", raw, err)
	}
	dyn := testrig.NewTable[table.Dynamic](t, tc)
	recs, err := table.Collect(dyn.Query(ctx, &table.Query{IncludeReserved: true}))
	if err != nil {
		t.Fatal(err)
	}
	poisoned := 0
	for _, rec := range recs {
		if rec.Properties["State"] == "poisoned" {
			poisoned++
		}
		if leaks(fmt.Sprint(rec.Properties)) {
			t.Errorf("a commit record holds a signature: %v", rec.Properties)
		}
	}
	if poisoned != 1 {
		t.Errorf("%d poisoned commit records, want 1", poisoned)
	}
	ps, err := q.Poisoned(ctx, 32)
	if err != nil || len(ps) != 1 || leaks(fmt.Sprint(ps)) {
		t.Errorf("Poisoned: %+v, %v", ps, err)
	}
}

// clientOptions returns client options with transport ft and either tablekit's
// retry policy (testrig.Fast) or azcore's own retries, shortened.
func clientOptions(ft *faults.Transport, tablekitPolicy bool) policy.ClientOptions {
	o := policy.ClientOptions{Transport: ft}
	if tablekitPolicy {
		testrig.Fast.ApplyTo(&o)
	} else {
		o.Retry = policy.RetryOptions{MaxRetries: 2, RetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond}
	}
	return o
}

// syncWriter serialises a log handler's writes with the test's reads.
type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
