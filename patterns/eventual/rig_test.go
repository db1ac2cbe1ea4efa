package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// order is a primary entity; its intent keeps an index row in another
// table (the inter-partition secondary index of the guide).
type order struct {
	table.Meta
	Customer string `table:",pk"`
	ID       string `table:",rk"`
	Email    string
	Total    int64
}

// byEmail is the index row of an order: partition = email.
type byEmail struct {
	table.Meta
	Email string `table:",pk"`
	Order string `table:",rk"` // customer + "_" + id
	Total int64
}

type indexOrder struct {
	Customer, ID, Email string
}

var indexKind = eventual.NewKind[indexOrder]("index-order")

// rig is the package's test fixture on testrig's: a queue (through the
// rig's fault-injecting transport), a clean poison queue, an orders table
// and an index table, the Queue over them with testrig crash points, and
// the reconciling handler of the index.
type rig struct {
	*testrig.Rig
	q      *eventual.Queue
	queue  *azqueue.QueueClient
	poison *azqueue.QueueClient
	orders *table.Table[order]
	index  *table.Table[byEmail]
	crash  testrig.Crashes
	// queueHost and blobHost are the hosts of the queue and blob services.
	queueHost, blobHost string
	// blobBytes counts the bytes read from blob responses.
	blobBytes atomic.Int64

	mu   sync.Mutex
	runs map[string]int // intent id -> handler runs
}

func newRig(t *testing.T, opts *eventual.Options) *rig {
	t.Helper()
	return newRigOn(t, testrig.New(t), opts)
}

// newRigOn is newRig on base (one of testrig.Services').
func newRigOn(t *testing.T, base *testrig.Rig, opts *eventual.Options) *rig {
	t.Helper()
	r := &rig{Rig: base, runs: map[string]int{}}
	r.Faults.Next = blobCounter{r, r.Faults.Next}
	r.queue, r.poison = r.Queue(), r.CleanQueue()
	r.queueHost, r.blobHost = hostOf(r.queue.URL()), hostOf(r.BlobService(nil).URL())
	r.orders = testrig.NewTable[order](t, r.Table())
	r.index = testrig.NewTable[byEmail](t, r.Table())
	// Short, for the tests that wait for a window to end, yet long enough
	// for a batch to arrive within its three quarters on a loaded 2-core
	// machine (2 s was not: TestCompetingWorkers beside another make test).
	o := eventual.Options{CommitWindow: 5 * time.Second}
	if opts != nil && opts.CommitWindow != 0 {
		o.CommitWindow = opts.CommitWindow
	}
	if opts != nil {
		o.Telemetry, o.Profile = opts.Telemetry, opts.Profile
	}
	o.Tables = append(o.Tables, r.orders.Client())
	var err error
	if r.q, err = eventual.New(r.queue, r.poison, &o); err != nil {
		t.Fatal(err)
	}
	eventual.SetHook(r.q, r.crash.Hook)
	r.Faults.Reset()
	return r
}

// blobCounter forwards to the service (through next, the rig's Cosmos DB
// simulation, when it has one) and counts the bytes of blob responses as
// they are read.
type blobCounter struct {
	r    *rig
	next policy.Transporter
}

func (c blobCounter) Do(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if c.next != nil {
		resp, err = c.next.Do(req)
	} else {
		resp, err = http.DefaultClient.Do(req)
	}
	if resp != nil && c.r.isBlob(req.URL.String()) {
		resp.Body = &countedBody{resp.Body, &c.r.blobBytes}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// hostOf is the host (and port) of u.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// isQueue, isBlob and isTable tell the services' requests apart (the rig
// has one transport for all): the emulator serves each on its own port, an
// account on its own host.
func (r *rig) isQueue(u string) bool { return hostOf(u) == r.queueHost }
func (r *rig) isBlob(u string) bool  { return hostOf(u) == r.blobHost }
func (r *rig) isTable(u string) bool { return !r.isQueue(u) && !r.isBlob(u) }

// onQueue and onTable restrict a fault's match to one service.
func (r *rig) onQueue(match func(*http.Request) bool) func(*http.Request) bool {
	return func(q *http.Request) bool { return r.isQueue(q.URL.String()) && (match == nil || match(q)) }
}

func (r *rig) onTable(match func(*http.Request) bool) func(*http.Request) bool {
	return func(q *http.Request) bool { return r.isTable(q.URL.String()) && (match == nil || match(q)) }
}

// requests returns the recorded requests to one service.
func (r *rig) requests(on func(string) bool) []faults.Request {
	var out []faults.Request
	for _, q := range r.Faults.Requests() {
		if on(q.URL) {
			out = append(out, q)
		}
	}
	return out
}

// handle reconciles an order's index row from the order (design rule 3):
// the row exists with the order's total when the order does, and not
// otherwise. Then it reads the order again and goes round when it
// changed: another intent's run for the same order may overlap this one,
// and the run that read the older version must not be the last to write.
func (r *rig) handle(ctx context.Context, in eventual.Intent[indexOrder]) error {
	r.mu.Lock()
	r.runs[in.ID]++
	r.mu.Unlock()
	p := in.Payload
	for range 4 {
		o, err := r.orders.Get(ctx, p.Customer, p.ID, nil)
		if err != nil && !errors.Is(err, table.ErrNotFound) {
			return err
		}
		if err != nil { // no order: no index row (gone already is done)
			if err := r.index.Delete(ctx, p.Email, p.Customer+"_"+p.ID, azcore.ETagAny); err != nil && !errors.Is(err, table.ErrNotFound) {
				return err
			}
		} else if _, err := r.index.Upsert(ctx, byEmail{Email: o.Value.Email, Order: o.Value.Customer + "_" + o.Value.ID, Total: o.Value.Total}, table.Replace); err != nil {
			return err
		}
		again, err := r.orders.Get(ctx, p.Customer, p.ID, nil)
		if err != nil && !errors.Is(err, table.ErrNotFound) {
			return err
		}
		if again.ETag == o.ETag { // both empty when there is no order
			return nil
		}
	}
	return fmt.Errorf("order %s/%s changed at each of 4 rounds", p.Customer, p.ID)
}

// workerOptions are quick: 2 s leases, short idle waits, immediate retries.
func workerOptions() *eventual.WorkerOptions {
	return &eventual.WorkerOptions{VisibilityTimeout: 2 * time.Second, Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 200 * time.Millisecond}, Backoff: &retry.Policy{}, Grace: 5 * time.Second}
}

// longLease is workerOptions with a 30 s lease, for tests that count a
// delivery's requests or spans exactly: a 2 s lease can end before its
// first renewal on a loaded machine, and the message is then delivered
// again (rightly).
func longLease() *eventual.WorkerOptions {
	o := workerOptions()
	o.VisibilityTimeout = 30 * time.Second
	return o
}

func (r *rig) worker(t *testing.T, opts *eventual.WorkerOptions) *eventual.Worker {
	t.Helper()
	if opts == nil {
		opts = workerOptions()
	}
	w, err := eventual.NewWorker(r.q, []eventual.Handler{indexKind.Handle(r.handle)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// start runs w until the returned stop is called; stop checks that Run
// returned nil.
func start(t *testing.T, w *eventual.Worker) (stop func()) {
	t.Helper()
	return testrig.Start(t, w.Run)
}

// drain waits for w to empty the queue, at most a minute.
func drain(t *testing.T, w *eventual.Worker) {
	t.Helper()
	testrig.Drain(t, w.Drain)
}

// indexRows returns the index: order key -> total.
func (r *rig) indexRows(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := table.Collect(r.index.Query(context.Background(), nil))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, row := range rows {
		out[row.Email+"/"+row.Order] = row.Total
	}
	return out
}

// wantIndex is the index the orders table calls for.
func (r *rig) wantIndex(t *testing.T) map[string]int64 {
	t.Helper()
	all, err := table.Collect(r.orders.Query(context.Background(), nil))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, o := range all {
		if o.Email != "marker" { // the model test's markers of applied batches
			out[o.Email+"/"+o.Customer+"_"+o.ID] = o.Total
		}
	}
	return out
}

// leftovers counts the commit records (any state) still in the orders
// table, and the messages on the queue.
func (r *rig) leftovers(t *testing.T) (records int, messages int32) {
	t.Helper()
	ctx := context.Background()
	dyn := testrig.NewTable[table.Dynamic](t, r.orders.Client())
	rows, err := table.Collect(dyn.Query(ctx, &table.Query{Filter: table.RowKeyRange(reserved.Prefix, reserved.Prefix+"\x7f"), IncludeReserved: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.Properties["State"] != "aborted" {
			records++
		}
	}
	props, err := r.queue.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return records, *props.ApproximateMessagesCount
}

// noLeaks fails the test if a goroutine of a Worker survives its Run.
// Run joins every goroutine it starts before it returns, so this needs no
// waiting. Only a test that is not parallel may call it (parallel tests
// run after the others, so no other worker runs then).
func noLeaks(t *testing.T) {
	t.Helper()
	// A handler goroutine that has called wg.Done in its deferred
	// function may still be on its way out when Run returns: give such
	// goroutines a few scheduling rounds to exit before calling one a
	// leak (a leaked one stays).
	var leaked []string
	for range 50 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = leaked[:0]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "eventual.(*Worker)") && !strings.Contains(g, "eventual.(*Worker).Run(") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	for _, g := range leaked {
		t.Errorf("a worker goroutine outlived Run:\n%s", g)
	}
}

func (r *rig) runsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}
