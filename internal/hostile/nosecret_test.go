package hostile_test

import (
	"bytes"
	"context"
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
	"unicode"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/hostile"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/bloblog"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
	"github.com/tablekit/tablekit/retry"
)

// leakOp is one exported operation of a pattern that talks to storage.
type leakOp struct {
	name string
	run  func(ctx context.Context) error
	// quiet marks an operation that may succeed while every request
	// fails: it logs its failures, or leaves them to a later call.
	quiet bool
}

// leakRow is one pattern package: build makes its objects over the SAS
// clients of s (after any set-up through s.r's clean clients) and returns
// every exported operation that talks to storage.
type leakRow struct {
	name string
	// blobs runs the operations again with only blob requests failing:
	// the paths where a table read succeeded and a blob request fails.
	blobs bool
	build func(t *testing.T, s *leakRig) []leakOp
}

// leakRig is one row's storage: the rig's clean clients for set-up, and
// SAS clients of the same resources whose requests pass through ft, with
// plain SDK options or tablekit's retry policy. It collects the
// signatures of the SAS it mints and every log line, retry event and
// eventual.Event its clients and workers produce.
type leakRig struct {
	r        *testrig.Rig
	ft       *faults.Transport
	tablekit bool
	blobHost string

	failures chan struct{} // a worker logged a warning or an error

	mu       sync.Mutex
	sigs     []string
	captured bytes.Buffer
}

func (s *leakRig) capture(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&s.captured, format+"\n", args...)
}

// Write makes leakRig a log handler's writer.
func (s *leakRig) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("level=WARN")) || bytes.Contains(p, []byte("level=ERROR")) {
		select {
		case s.failures <- struct{}{}:
		default:
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.captured.Write(p)
}

// leaks reports whether text holds a signature s minted (holds).
func (s *leakRig) leaks(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sig := range s.sigs {
		if holds(text, sig) {
			return true
		}
	}
	return false
}

// holds reports whether text holds sig in any encoding, or a part of it:
// a run of 8 or more letters and digits of sig (a signature is base64: its
// '+', '/' and '=' change with each URL-encoding, the runs between them do
// not).
func holds(text, sig string) bool {
	for _, run := range strings.FieldsFunc(sig, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(run) >= 8 && strings.Contains(text, run) {
			return true
		}
	}
	return strings.Contains(text, sig)
}

func (s *leakRig) signature(t *testing.T, sasURL string) {
	t.Helper()
	u, err := url.Parse(sasURL)
	if err != nil || u.Query().Get("sig") == "" {
		t.Fatalf("no signature in %s (%v)", sasURL, err)
	}
	watch.addSig(u.Query().Get("sig"))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigs = append(s.sigs, u.Query().Get("sig"))
}

// options are the SAS clients' options: transport ft, and azcore's own
// retry policy (shortened) or tablekit's, whose retry events are captured.
func (s *leakRig) options() policy.ClientOptions {
	o := policy.ClientOptions{Transport: s.ft, TracingProvider: table.ClientOptions().TracingProvider}
	if s.tablekit {
		p := testrig.Fast
		p.OnRetry = func(e retry.Event) { s.capture("retry event: %+v (%v)", e, e.Err) }
		p.ApplyTo(&o)
	} else {
		o.Retry = policy.RetryOptions{MaxRetries: 2, RetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond}
	}
	return o
}

// tableSAS returns a client of c's table authorised by a table SAS
// (table.SASURL).
func (s *leakRig) tableSAS(t *testing.T, c *aztables.Client) *aztables.Client {
	t.Helper()
	serviceURL, cred, err := table.ParseConnectionString(s.r.ConnectionString)
	if err != nil {
		t.Fatal(err)
	}
	u, err := table.SASURL(serviceURL, cred, testrig.NewTable[table.Dynamic](t, c).Name(), table.SASOptions{
		Permissions: aztables.SASPermissions{Read: true, Add: true, Update: true, Delete: true}, Expiry: time.Now().Add(time.Hour), AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	s.signature(t, u)
	sc, err := table.NewClientFromSASURL(u, &aztables.ClientOptions{ClientOptions: s.options()})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// serviceSAS returns a table service client authorised by an account SAS.
func (s *leakRig) serviceSAS(t *testing.T) *aztables.ServiceClient {
	t.Helper()
	serviceURL, cred, err := table.ParseConnectionString(s.r.ConnectionString)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
		Permissions:   aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true}.String(),
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(), Services: "t",
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	u := strings.TrimSuffix(serviceURL, "/") + "/?" + qp.Encode()
	s.signature(t, u)
	svc, err := table.NewServiceClientFromConnectionString("TableEndpoint="+serviceURL+";SharedAccessSignature="+qp.Encode(), &aztables.ClientOptions{ClientOptions: s.options()})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// queueSAS returns a client of q's queue authorised by a queue SAS.
func (s *leakRig) queueSAS(t *testing.T, q *azqueue.QueueClient) *azqueue.QueueClient {
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
	s.signature(t, u)
	sq, err := azqueue.NewQueueClientWithNoCredential(u, &azqueue.ClientOptions{ClientOptions: s.options()})
	if err != nil {
		t.Fatal(err)
	}
	return sq
}

// containerSAS returns a client of c's container authorised by a
// container SAS.
func (s *leakRig) containerSAS(t *testing.T, c *container.Client) *container.Client {
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
	s.signature(t, u)
	s.blobHost = must(url.Parse(c.URL())).Host
	sc, err := container.NewClientWithNoCredential(u, &container.ClientOptions{ClientOptions: s.options()})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// workerOptions makes a worker log to and report its events to s, with
// short waits.
func (s *leakRig) workerOptions() *eventual.WorkerOptions {
	return &eventual.WorkerOptions{
		VisibilityTimeout: 2 * time.Second, MaxDeliveries: 2, Backoff: &retry.Policy{},
		Idle:      &retry.Policy{Default: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 1 << 20},
		Telemetry: &table.Telemetry{Logger: slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		OnEvent:   func(e eventual.Event) { s.capture("event: %+v (%v)", e, e.Err) },
	}
}

// errNoFailure: a worker ran without meeting a failure.
var errNoFailure = errors.New("the worker met no failure in 10 s")

// run returns an operation that runs w until it meets a failure (a failed
// or poisoned delivery, a failed dequeue: a warning or error logged), at
// most 10 s.
func (s *leakRig) run(w *eventual.Worker) func(context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-s.failures:
		default:
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		select {
		case err := <-done:
			return err
		case <-s.failures:
			cancel()
			return <-done
		case <-time.After(10 * time.Second):
			cancel()
			<-done
			return errNoFailure
		}
	}
}

// drainFor runs Drain for a moment, with w's Run running (Drain reads the
// queue only then).
func drainFor(w *eventual.Worker) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(rctx) }()
		err := w.Drain(ctx)
		stop()
		<-done
		return err
	}
}

// must returns v, or panics with err: for the rows' set-up, where
// TestNoSignatureInErrorsOrLogs recovers it as a failure.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// each drains seq, returning its first error.
func each[T any](seq func(func(T, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestNoSignatureInErrorsOrLogs: for every pattern package (one row
// each), its objects are built over clients authorised by SAS URLs (table,
// account, queue and container SAS), with plain SDK client options and
// with tablekit's retry policy, over a transport that fails every request
// with 403, with 500, or with a transport error whose text quotes the
// request URL (with tablekit's policy also with 404, 409 and 412); then
// with only its writes failing (reads succeed), and for packages with
// blobs with only its blob requests failing. Every exported operation that
// talks to storage is called (the workers' runs included); no error it
// returns (its text, %+v, or a *url.Error it wraps), no log line of a
// worker, no eventual.Event and no retry event holds a signature, raw or
// URL-encoded; nor does any span (of the operations, and of the SAS
// clients' requests), metric or log record of tablekit's telemetry (on
// the global providers and logger, for the test's duration: see
// telemetryWatch), which also never holds a RowKey (every RowKey and
// indexed value of the rows holds rowKey), nor, in a span, a query string.
// Adding a package is adding a row.
func TestNoSignatureInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	watch.install(t)
	for _, row := range leakRows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if p := recover(); p != nil { // must's, in a row's set-up
					t.Fatalf("set-up: %v", p)
				}
			}()
			for _, tablekit := range []bool{false, true} {
				s := &leakRig{r: testrig.New(t), ft: &faults.Transport{}, tablekit: tablekit, failures: make(chan struct{}, 1)}
				ops := row.build(t, s)
				scopes := []string{"all requests", "writes"}
				if row.blobs {
					scopes = append(scopes, "blob requests")
				}
				modes := []string{"403", "500", "transport error"}
				if tablekit {
					// The answers an operation may take in its stride (a
					// missing entity, a conflict, a changed ETag): their
					// paths' spans, which name keys in their errors.
					modes = append(modes, "404", "409", "412")
				}
				for _, scope := range scopes {
					for _, mode := range modes {
						testLeaks(t, s, ops, fmt.Sprintf("tablekit policy %v, %s fail with %s", tablekit, scope, mode), scope, mode)
					}
				}
			}
		})
	}
}

func testLeaks(t *testing.T, s *leakRig, ops []leakOp, what, scope, mode string) {
	t.Helper()
	ctx := context.Background()
	failed := 0
	for _, op := range ops {
		s.arm(scope, mode)
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
					t.Errorf("%s, %s: panicked: %v", what, op.name, p)
				}
			}()
			return op.run(ctx)
		}()
		if errors.Is(err, errNoFailure) {
			t.Errorf("%s, %s: %v", what, op.name, err)
		}
		if err != nil {
			failed++
			var ue *url.Error
			switch {
			case s.leaks(err.Error()), s.leaks(fmt.Sprintf("%+v", err)):
				t.Errorf("%s, %s: the error holds a signature: %v", what, op.name, err)
			case errors.As(err, &ue) && s.leaks(ue.URL):
				t.Errorf("%s, %s: the error's *url.Error holds a signature: %s", what, op.name, ue.URL)
			}
		}
		if scope == "all requests" {
			if err == nil && !op.quiet && !expected[mode] {
				t.Errorf("%s, %s: no error", what, op.name)
			}
			if s.ft.Count() == 0 {
				t.Errorf("%s, %s: no request sent", what, op.name)
			}
		}
	}
	if failed == 0 && !expected[mode] {
		t.Errorf("%s: no operation failed", what)
	}
	s.mu.Lock()
	captured := s.captured.String()
	s.captured.Reset()
	s.mu.Unlock()
	if s.leaks(captured) {
		t.Errorf("%s: a log line or event holds a signature:\n%s", what, captured)
	}
}

// expected are the fault modes an operation may answer with success (a
// delete of what is gone, an insert-if-absent that conflicts, a retried
// conditional write).
var expected = map[string]bool{"404": true, "409": true, "412": true}

// arm makes the requests of scope ("all requests", "writes": all but GET
// and HEAD, "blob requests") fail with mode, each a fault of its own
// (a transport error's *url.Error quotes the request's whole URL, or every
// other time a proxy's URL carrying it, encoded twice, as its upstream).
func (s *leakRig) arm(scope, mode string) {
	s.ft.Reset()
	in := func(q *http.Request) bool {
		switch scope {
		case "writes":
			return q.Method != http.MethodGet && q.Method != http.MethodHead
		case "blob requests":
			return q.URL.Host == s.blobHost
		}
		return true
	}
	for i := range 500 {
		f := faults.Fault{Match: in}
		switch mode {
		case "403":
			f.Status, f.ErrorCode = http.StatusForbidden, "AuthorizationFailure"
		case "500":
			f.Status, f.ErrorCode = http.StatusInternalServerError, "InternalError"
		case "404":
			f.Status, f.ErrorCode = http.StatusNotFound, "ResourceNotFound"
		case "409":
			f.Status, f.ErrorCode = http.StatusConflict, "EntityAlreadyExists"
		case "412":
			f.Status, f.ErrorCode = http.StatusPreconditionFailed, "UpdateConditionNotSatisfied"
		default:
			ue := &url.Error{Err: syscall.ECONNREFUSED}
			f.Err = ue
			f.Match = func(q *http.Request) bool {
				if !in(q) {
					return false
				}
				ue.Op, ue.URL = q.Method, q.URL.String()
				if i%2 == 1 {
					ue.URL = "http://proxy.example/fwd?upstream=" + url.QueryEscape(url.QueryEscape(ue.URL))
				}
				return true
			}
		}
		s.ft.Inject(f)
	}
}

// rowKey is in every RowKey the rows write or name, and in every value an
// index makes a RowKey (or a blob name) of: telemetry must never hold it.
const rowKey = "rk-SECRET-4711"

// The rows' entity types.
type (
	rec struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		N  int64
	}
	note struct {
		PK   string `table:",pk"`
		RK   string `table:",rk"`
		Text string
		Body []byte `largeentity:"always"`
	}
)

var leakRows = []leakRow{
	{name: "table", build: func(t *testing.T, s *leakRig) []leakOp {
		c := s.r.Table()
		sc := s.tableSAS(t, c)
		tb := testrig.NewTable[rec](t, sc)
		must(testrig.NewTable[rec](t, c).Insert(context.Background(), rec{PK: "p", RK: rowKey}))
		ts := must(table.NewTypes(sc, nil))
		typed := must(table.Register[rec](ts, "rec", nil))
		svc := s.serviceSAS(t)
		v := rec{PK: "p", RK: rowKey, N: 1}
		q := &table.Query{Filter: table.PartitionKey("p")}
		return []leakOp{
			{name: "Insert", run: func(ctx context.Context) error {
				_, err := tb.Insert(ctx, rec{PK: "p", RK: "new" + rowKey})
				return err
			}},
			{name: "Upsert", run: func(ctx context.Context) error { _, err := tb.Upsert(ctx, v, table.Merge); return err }},
			{name: "Update", run: func(ctx context.Context) error {
				_, err := tb.Update(ctx, v, azcore.ETagAny, table.Replace)
				return err
			}},
			{name: "Delete", run: func(ctx context.Context) error { return tb.Delete(ctx, "p", "x"+rowKey, azcore.ETagAny) }},
			{name: "Get", run: func(ctx context.Context) error { _, err := tb.Get(ctx, "p", rowKey, nil); return err }},
			{name: "Modify", run: func(ctx context.Context) error {
				_, err := tb.Modify(ctx, "p", rowKey, func(r *rec) error { r.N++; return nil }, &table.ModifyOptions{Retry: &testrig.Fast})
				return err
			}},
			{name: "Query", run: func(ctx context.Context) error { return each(tb.Query(ctx, q)) }},
			{name: "QueryPage", run: func(ctx context.Context) error { _, err := tb.QueryPage(ctx, q); return err }},
			{name: "Pages", run: func(ctx context.Context) error { return each(tb.Pages(ctx, q)) }},
			{name: "QueryEntities", run: func(ctx context.Context) error { return each(tb.QueryEntities(ctx, q)) }},
			{name: "FanOut", run: func(ctx context.Context) error { return each(tb.FanOut(ctx, []*table.Query{q, q}, nil)) }},
			{name: "FanOutEntities", run: func(ctx context.Context) error {
				return each(keycursor.FanOut(ctx, []keycursor.Source[rec]{{Table: tb, Query: q}}, nil))
			}},
			{name: "Upsert Replace (was eventual.Put)", run: func(ctx context.Context) error {
				_, err := tb.Upsert(ctx, rec{PK: "p", RK: rowKey}, table.Replace)
				return err
			}},
			{name: "Table.Submit", run: func(ctx context.Context) error {
				_, err := tb.Submit(ctx, []table.Op{tb.UpsertOp(v, table.Merge)}, nil)
				return err
			}},
			{name: "Types.Get", run: func(ctx context.Context) error { _, err := ts.Get(ctx, "p", rowKey); return err }},
			{name: "Types.Query", run: func(ctx context.Context) error { return each(ts.Query(ctx, q)) }},
			{name: "Types.QueryPage", run: func(ctx context.Context) error { _, err := ts.QueryPage(ctx, q); return err }},
			{name: "Types.Migrate", run: func(ctx context.Context) error { _, err := ts.Migrate(ctx, nil); return err }},
			{name: "Register's Table.Get", run: func(ctx context.Context) error { _, err := typed.Get(ctx, "p", rowKey, nil); return err }},
			{name: "SetAccessPolicy", run: func(ctx context.Context) error {
				return table.SetAccessPolicy(ctx, sc, table.AccessPolicy{ID: "p1", Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour)})
			}},
			{name: "GetAccessPolicy", run: func(ctx context.Context) error { _, err := table.GetAccessPolicy(ctx, sc); return err }},
			{name: "CreateTable", run: func(ctx context.Context) error { return table.CreateTable(ctx, svc, "leaks"+hostileSuffix()) }},
			{name: "DeleteTable", run: func(ctx context.Context) error { return table.DeleteTable(ctx, svc, "leaks"+hostileSuffix()) }},
			{name: "ListTables", run: func(ctx context.Context) error { return each(table.ListTables(ctx, svc, "leaks")) }},
		}
	}},
	{name: "secondaryindex", build: func(t *testing.T, s *leakRig) []leakOp {
		c := s.r.Table()
		sc := s.tableSAS(t, c)
		qc := s.r.CleanQueue()
		indexes := []secondaryindex.Index[emp]{
			{Name: "email", Unique: true, On: []string{"Email"}},
			{Name: "org", Where: secondaryindex.OtherPartition, Partition: func(string) string { return "everyone" }, On: []string{"Last"}},
		}
		newStore := func(c *aztables.Client, q *azqueue.QueueClient) *secondaryindex.Store[emp] {
			eq := must(eventual.New(q, s.r.CleanQueue(), &eventual.Options{Tables: []*aztables.Client{c}, CommitWindow: 2 * time.Second}))
			return must(secondaryindex.New(testrig.NewTable[table.Dynamic](t, c), &secondaryindex.Options[emp]{Primary: "emp", Indexes: indexes, Queue: eq, Retry: &testrig.Fast}))
		}
		e := emp{Dept: "HR", ID: "1" + rowKey, Email: rowKey + "@b", Last: "L" + rowKey}
		ctx := context.Background()
		must(newStore(c, qc).Insert(ctx, e))
		st := newStore(sc, s.queueSAS(t, qc))
		prev := must(newStore(c, qc).Get(ctx, "HR", "1"+rowKey))
		all := [2]string{"A", "z"}
		return []leakOp{
			{name: "Insert", run: func(ctx context.Context) error {
				_, err := st.Insert(ctx, emp{Dept: "HR", ID: "2" + rowKey, Email: "c" + rowKey + "@d"})
				return err
			}},
			{name: "Update", run: func(ctx context.Context) error { _, err := st.Update(ctx, e, prev.ETag); return err }},
			{name: "Update ETagAny", run: func(ctx context.Context) error { _, err := st.Update(ctx, e, azcore.ETagAny); return err }},
			{name: "Modify", run: func(ctx context.Context) error {
				_, err := st.Modify(ctx, "HR", "1"+rowKey, func(*emp) error { return nil })
				return err
			}},
			{name: "Delete", run: func(ctx context.Context) error { return st.Delete(ctx, "HR", "1"+rowKey, azcore.ETagAny) }},
			// Delete with the ETag read replaces DeleteEntity.
			{name: "Delete with the ETag read", run: func(ctx context.Context) error { return st.Delete(ctx, "HR", "1"+rowKey, prev.ETag) }},
			{name: "Get", run: func(ctx context.Context) error { _, err := st.Get(ctx, "HR", "1"+rowKey); return err }},
			{name: "Lookup", run: func(ctx context.Context) error {
				_, err := st.Lookup(ctx, "HR", "email", rowKey+"@b", &secondaryindex.LookupOptions{Fetch: true})
				return err
			}},
			{name: "Find", run: func(ctx context.Context) error { return each(st.Find(ctx, "HR", "org", "L"+rowKey, nil)) }},
			{name: "Range", run: func(ctx context.Context) error { return each(st.Range(ctx, "", "org", all[0], all[1], nil)) }},
			{name: "Verify", run: func(ctx context.Context) error { _, _, err := st.Verify(ctx, "email", prev); return err }},
			{name: "Check", run: func(ctx context.Context) error { _, err := st.Check(ctx, ""); return err }},
			{name: "Rebuild", run: func(ctx context.Context) error { _, err := st.Rebuild(ctx, "HR"); return err }},
		}
	}},
	{name: "indexentity", blobs: true, build: func(t *testing.T, s *leakRig) []leakOp {
		ctx := context.Background()
		c, cc, qc := s.r.Table(), s.r.Container(), s.r.CleanQueue()
		sc, scc, sq := s.tableSAS(t, c), s.containerSAS(t, cc), s.queueSAS(t, qc)
		value := func(p *person) string { return p.Last }
		same := func(c *aztables.Client) *indexentity.Index[person] {
			return must(indexentity.New(testrig.NewTable[person](t, c), "Same", value, &indexentity.Options{Retry: &testrig.Fast}))
		}
		blob := func(c *aztables.Client, cc *container.Client, q *azqueue.QueueClient) *indexentity.Index[person] {
			eq := must(eventual.New(q, s.r.CleanQueue(), &eventual.Options{Tables: []*aztables.Client{c}, CommitWindow: 2 * time.Second}))
			return must(indexentity.New(testrig.NewTable[person](t, c), "Blob", value, &indexentity.Options{Blobs: cc, Queue: eq, Retry: &testrig.Fast}))
		}
		must(same(c).Insert(ctx, person{Dept: "HR", ID: "1" + rowKey, Last: "Jones" + rowKey}))
		cleanBlob := blob(c, cc, qc)
		xs, xb := same(sc), blob(sc, scc, sq)
		w := must(eventual.NewWorker(must(eventual.New(sq, s.queueSAS(t, s.r.CleanQueue()), &eventual.Options{Tables: []*aztables.Client{sc}})), []eventual.Handler{xb.Handler()}, s.workerOptions()))
		var ops []leakOp
		for _, ix := range []struct {
			name string
			x    *indexentity.Index[person]
		}{{"same partition", xs}, {"blob store", xb}} {
			name, x := ix.name, ix.x
			ops = append(ops,
				leakOp{name: name + ", Insert", run: func(ctx context.Context) error {
					_, err := x.Insert(ctx, person{Dept: "HR", ID: "2" + rowKey, Last: "Smith" + rowKey})
					return err
				}},
				leakOp{name: name + ", Update", run: func(ctx context.Context) error {
					_, err := x.Update(ctx, person{Dept: "HR", ID: "1" + rowKey, Last: "Lee" + rowKey}, azcore.ETagAny)
					return err
				}},
				leakOp{name: name + ", Delete", run: func(ctx context.Context) error { return x.Delete(ctx, "HR", "1"+rowKey, azcore.ETagAny) }},
				leakOp{name: name + ", FindIDs", run: func(ctx context.Context) error { _, err := x.FindIDs(ctx, "HR", "Jones"+rowKey); return err }},
				leakOp{name: name + ", Find", run: func(ctx context.Context) error { return each(x.Find(ctx, "HR", "Jones"+rowKey)) }},
			)
		}
		return append(ops, leakOp{name: "worker's handler", quiet: true, run: func(ctx context.Context) error {
			// An intent committed through clean clients, run by a worker
			// over the SAS clients.
			if _, err := cleanBlob.Update(ctx, person{Dept: "HR", ID: "1" + rowKey, Last: "Jones" + rowKey + hostile.ID()[:4]}, azcore.ETagAny); err != nil {
				return fmt.Errorf("set-up: %w", err)
			}
			return s.run(w)(ctx)
		}})
	}},
	{name: "eventual", blobs: true, build: func(t *testing.T, s *leakRig) []leakOp {
		c, cc, qc, pc := s.r.Table(), s.r.Container(), s.r.CleanQueue(), s.r.CleanQueue()
		sc := s.tableSAS(t, c)
		q := must(eventual.New(s.queueSAS(t, qc), s.queueSAS(t, pc), &eventual.Options{Blobs: s.containerSAS(t, cc), Tables: []*aztables.Client{sc}, CommitWindow: time.Second}))
		clean := must(eventual.New(qc, pc, &eventual.Options{Blobs: cc, Tables: []*aztables.Client{c}, CommitWindow: time.Second}))
		k := eventual.NewKind[string]("k")
		big := strings.Repeat("x", 100<<10)
		w := must(eventual.NewWorker(q, []eventual.Handler{k.Handle(func(context.Context, eventual.Intent[string]) error { return nil })}, s.workerOptions()))
		tb := testrig.NewTable[rec](t, sc)
		return []leakOp{
			{name: "Enqueue", run: func(ctx context.Context) error { _, err := q.Enqueue(ctx, k.New("small")); return err }},
			{name: "Enqueue with a claim check", run: func(ctx context.Context) error { _, err := q.Enqueue(ctx, k.New(big)); return err }},
			{name: "Commit", run: func(ctx context.Context) error {
				_, err := q.Commit(ctx, sc, []table.Op{tb.InsertOp(rec{PK: "p", RK: rowKey + hostile.ID()})}, k.New(big))
				return err
			}},
			{name: "Pending", run: func(ctx context.Context) error { return each(q.Pending(ctx, nil)) }},
			{name: "Poisoned", run: func(ctx context.Context) error { _, err := q.Poisoned(ctx, 32); return err }},
			{name: "Sweep", run: func(ctx context.Context) error {
				_, err := q.Sweep(ctx, nil, &eventual.SweepOptions{OlderThan: time.Hour})
				return err
			}},
			{name: "Drain", quiet: true, run: drainFor(w)},
			{name: "Run", quiet: true, run: func(ctx context.Context) error {
				// A claim check enqueued through clean clients, for the
				// worker to fail to read (blob requests failing).
				if _, err := clean.Enqueue(ctx, k.New(big)); err != nil {
					return fmt.Errorf("set-up: %w", err)
				}
				return s.run(w)(ctx)
			}},
		}
	}},
	{name: "logtail", build: func(t *testing.T, s *leakRig) []leakOp {
		l := must(logtail.New(testrig.NewTable[rec](t, s.tableSAS(t, s.r.Table())), &logtail.Options{Buckets: 2}))
		now := time.Now()
		return []leakOp{
			{name: "Append", run: func(ctx context.Context) error { _, err := l.Append(ctx, "web", rec{N: 1}); return err }},
			{name: "AppendAt", run: func(ctx context.Context) error { _, err := l.AppendAt(ctx, "web", now, rec{N: 1}); return err }},
			{name: "Latest", run: func(ctx context.Context) error { _, err := l.Latest(ctx, "web", 10); return err }},
			{name: "Range", run: func(ctx context.Context) error { return each(l.Range(ctx, "web", now.Add(-time.Hour), now, nil)) }},
			{name: "Trim", run: func(ctx context.Context) error { _, err := l.Trim(ctx, "web", now); return err }},
		}
	}},
	{name: "dataseries", build: func(t *testing.T, s *leakRig) []leakOp {
		d := must(dataseries.New[int64](testrig.NewTable[table.Dynamic](t, s.tableSAS(t, s.r.Table())), dataseries.Hours(), &dataseries.Options{Retry: &testrig.Fast}))
		h := dataseries.Hours()[0]
		return []leakOp{
			{name: "Get", run: func(ctx context.Context) error { _, err := d.Get(ctx, "p", rowKey); return err }},
			{name: "Set", run: func(ctx context.Context) error { _, err := d.Set(ctx, "p", rowKey, h, 1); return err }},
			{name: "SetAll", run: func(ctx context.Context) error {
				_, err := d.SetAll(ctx, "p", rowKey, map[string]int64{h: 1}, azcore.ETagAny)
				return err
			}},
			{name: "Add", run: func(ctx context.Context) error { _, err := d.Add(ctx, "p", rowKey, h, 1); return err }},
		}
	}},
	{name: "wideentity", build: func(t *testing.T, s *leakRig) []leakOp {
		w := must(wideentity.New[rec](testrig.NewTable[table.Dynamic](t, s.tableSAS(t, s.r.Table())), &wideentity.Options[rec]{Parts: 2, Retry: &testrig.Fast}))
		v := rec{PK: "p", RK: rowKey, N: 1}
		return []leakOp{
			{name: "Insert", run: func(ctx context.Context) error { _, err := w.Insert(ctx, v); return err }},
			{name: "Update Replace", run: func(ctx context.Context) error { _, err := w.Update(ctx, v, azcore.ETagAny, table.Replace); return err }},
			{name: "Update Fields (was UpdateFields)", run: func(ctx context.Context) error {
				_, err := w.Update(ctx, v, azcore.ETagAny, table.Fields("N"))
				return err
			}},
			{name: "Update Merge", run: func(ctx context.Context) error { _, err := w.Update(ctx, v, azcore.ETagAny, table.Merge); return err }},
			{name: "Delete", run: func(ctx context.Context) error { return w.Delete(ctx, "p", rowKey, azcore.ETagAny) }},
			{name: "Get", run: func(ctx context.Context) error { _, err := w.Get(ctx, "p", rowKey); return err }},
			{name: "Modify", run: func(ctx context.Context) error {
				_, err := w.Modify(ctx, "p", rowKey, func(*rec) error { return nil })
				return err
			}},
		}
	}},
	{name: "largeentity", blobs: true, build: func(t *testing.T, s *leakRig) []leakOp {
		ctx := context.Background()
		c, cc := s.r.Table(), s.r.Container()
		newStore := func(c *aztables.Client, cc *container.Client) *largeentity.Store[note] {
			return must(largeentity.New[note](testrig.NewTable[table.Dynamic](t, c), cc, &largeentity.Options[note]{Retry: &testrig.Fast}))
		}
		clean := newStore(c, cc)
		for _, id := range []string{"1", "2"} {
			must(clean.Insert(ctx, note{PK: "p", RK: id + rowKey, Text: "t", Body: []byte("body")}))
		}
		st := newStore(s.tableSAS(t, c), s.containerSAS(t, cc))
		return []leakOp{
			{name: "Insert", run: func(ctx context.Context) error {
				_, err := st.Insert(ctx, note{PK: "p", RK: rowKey + hostile.ID(), Body: []byte("b")})
				return err
			}},
			{name: "Update", run: func(ctx context.Context) error {
				_, err := st.Update(ctx, note{PK: "p", RK: "1" + rowKey, Body: []byte("c")}, azcore.ETagAny)
				return err
			}},
			{name: "Get", run: func(ctx context.Context) error { _, err := st.Get(ctx, "p", "1"+rowKey, nil); return err }},
			{name: "Modify", run: func(ctx context.Context) error {
				_, err := st.Modify(ctx, "p", "1"+rowKey, func(n *note) error { n.Body = []byte(hostile.ID()); return nil })
				return err
			}},
			{name: "Range", run: func(ctx context.Context) error { return each(st.Range(ctx, "p", "", "", nil)) }},
			{name: "Sweep", run: func(ctx context.Context) error { _, err := st.Sweep(ctx); return err }},
			// Delete does not fail on its blob deletes (Sweep's orphans then).
			{name: "Delete", quiet: true, run: func(ctx context.Context) error {
				if _, err := clean.Insert(ctx, note{PK: "p", RK: "3" + rowKey, Body: []byte("d")}); err != nil && !errors.Is(err, table.ErrAlreadyExists) {
					return fmt.Errorf("set-up: %w", err)
				}
				return st.Delete(ctx, "p", "3"+rowKey, azcore.ETagAny)
			}},
		}
	}},
	{name: "bloblog", blobs: true, build: func(t *testing.T, s *leakRig) []leakOp {
		ctx := context.Background()
		cc := s.r.Container()
		cl := must(bloblog.New[rec](cc, &bloblog.Options{Prefix: "logs"}))
		cw := must(cl.NewWriter(&bloblog.WriterOptions{FlushInterval: -1}))
		if err := cw.Append(ctx, rec{N: 1}); err != nil {
			t.Fatal(err)
		}
		if err := cw.Close(ctx); err != nil {
			t.Fatal(err)
		}
		l := must(bloblog.New[rec](s.containerSAS(t, cc), &bloblog.Options{Prefix: "logs"}))
		now := time.Now()
		return []leakOp{
			{name: "Range", run: func(ctx context.Context) error { return each(l.Range(ctx, now.Add(-time.Hour), now.Add(time.Hour))) }},
			{name: "Append, Flush", run: func(ctx context.Context) error {
				w, err := l.NewWriter(&bloblog.WriterOptions{FlushInterval: -1})
				if err != nil {
					return err
				}
				if err := w.Append(ctx, rec{N: 2}); err != nil {
					return err
				}
				return w.Flush(ctx)
			}},
			{name: "Append, Close", run: func(ctx context.Context) error {
				w, err := l.NewWriter(&bloblog.WriterOptions{FlushInterval: -1})
				if err != nil {
					return err
				}
				if err := w.Append(ctx, rec{N: 3}); err != nil {
					return err
				}
				return w.Close(ctx)
			}},
		}
	}},
	{name: "rotation", build: func(t *testing.T, s *leakRig) []leakOp {
		svc := s.serviceSAS(t)
		prefix := "rot" + hostileSuffix() + "x" // a letter last
		r := must(rotation.New[rec](svc, prefix, &rotation.Options{Period: rotation.Day}))
		now := time.Now()
		return []leakOp{
			{name: "Prepare", run: func(ctx context.Context) error { return r.Prepare(ctx, now) }},
			{name: "Insert", run: func(ctx context.Context) error { _, err := r.Insert(ctx, now, rec{PK: "p", RK: rowKey}); return err }},
			{name: "Submit", run: func(ctx context.Context) error {
				tb := r.Table(now)
				_, err := r.Submit(ctx, now, []table.Op{tb.InsertOp(rec{PK: "p", RK: "s" + rowKey})}, nil)
				return err
			}},
			{name: "Periods", run: func(ctx context.Context) error { _, err := r.Periods(ctx); return err }},
			{name: "Range", run: func(ctx context.Context) error { return each(r.Range(ctx, now.Add(-time.Hour), now, nil)) }},
			{name: "Sweep", run: func(ctx context.Context) error {
				_, err := r.Sweep(ctx, &rotation.SweepOptions{Before: now.Add(-72 * time.Hour)})
				return err
			}},
		}
	}},
	{name: "buckets", build: func(t *testing.T, s *leakRig) []leakOp {
		b := must(buckets.New(testrig.NewTable[rec](t, s.tableSAS(t, s.r.Table())), &buckets.Options{Buckets: 4}))
		return []leakOp{
			{name: "Insert", run: func(ctx context.Context) error { _, err := b.Insert(ctx, rec{PK: "p", RK: rowKey, N: 1}); return err }},
			{name: "Upsert", run: func(ctx context.Context) error { _, err := b.Upsert(ctx, rec{PK: "p", RK: rowKey, N: 2}); return err }},
			{name: "Get", run: func(ctx context.Context) error { _, err := b.Get(ctx, "p", rowKey); return err }},
			{name: "Range", run: func(ctx context.Context) error { return each(b.Range(ctx, "p", "", "", nil)) }},
		}
	}},
	{name: "encryption", build: func(t *testing.T, s *leakRig) []leakOp {
		ks := must(encryption.NewStaticKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32)}))
		e := must(encryption.New[emp](testrig.NewTable[table.Dynamic](t, s.tableSAS(t, s.r.Table())), ks, []string{"SSN"},
			&encryption.Options{Indexes: []encryption.Index{{Field: "SSN"}}, IndexKey: bytes.Repeat([]byte{2}, 32)}))
		v := emp{Dept: "p", ID: rowKey, SSN: "078-05-1120"}
		q := &table.Query{Filter: table.PartitionKey("p")}
		return []leakOp{
			{name: "Insert", run: func(ctx context.Context) error { _, err := e.Insert(ctx, v); return err }},
			{name: "Upsert", run: func(ctx context.Context) error { _, err := e.Upsert(ctx, v, table.Replace); return err }},
			{name: "Update", run: func(ctx context.Context) error { _, err := e.Update(ctx, v, azcore.ETagAny, table.Replace); return err }},
			{name: "Delete", run: func(ctx context.Context) error { return e.Delete(ctx, "p", rowKey, azcore.ETagAny) }},
			{name: "Get", run: func(ctx context.Context) error { _, err := e.Get(ctx, "p", rowKey, nil); return err }},
			{name: "Modify", run: func(ctx context.Context) error {
				_, err := e.Modify(ctx, "p", rowKey, func(*emp) error { return nil }, &table.ModifyOptions{Retry: &testrig.Fast})
				return err
			}},
			{name: "Query", run: func(ctx context.Context) error { return each(e.Query(ctx, q)) }},
			{name: "QueryEntities", run: func(ctx context.Context) error { return each(e.QueryEntities(ctx, q)) }},
			{name: "QueryPage", run: func(ctx context.Context) error { _, err := e.QueryPage(ctx, q); return err }},
			{name: "Find (was Lookup)", run: func(ctx context.Context) error { return each(e.Find(ctx, "p", "SSN", "078-05-1120")) }},
			{name: "Reencrypt", run: func(ctx context.Context) error { _, err := e.Reencrypt(ctx, nil); return err }},
		}
	}},
}

// hostileSuffix is a fresh suffix for table names.
func hostileSuffix() string { return hostile.ID()[:12] }
