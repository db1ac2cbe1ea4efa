package eventual_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/faults"
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

// rig is a queue, a poison queue, an orders table and an index table on
// Azurite, with fault-injecting transports between the clients and it.
type rig struct {
	env      *tabletest.Env
	q        *eventual.Queue
	queue    *azqueue.QueueClient
	poison   *azqueue.QueueClient
	qft, tft *faults.Transport
	orders   *table.Table[order]
	index    *table.Table[byEmail]

	mu      sync.Mutex
	crash   map[string]int // step -> crash at its n-th pass (1-based)
	seen    map[string]int
	runs    map[string]int // intent id -> handler runs
	crashed map[string]int // step -> crashes injected
	crashP  float64        // random crashes: probability per step (model test)
	rnd     func() float64
}

// fast is the retry policy of the rig's clients: real retries, short waits.
var fast = retry.Policy{Default: time.Millisecond, Max: 5 * time.Millisecond, MaxRetries: 5}

func newRig(t *testing.T, opts *eventual.Options) *rig {
	t.Helper()
	env := tabletest.New(t)
	r := &rig{env: env, qft: &faults.Transport{}, tft: &faults.Transport{}, crash: map[string]int{}, seen: map[string]int{}, runs: map[string]int{}, crashed: map[string]int{}}
	qo := &azqueue.ClientOptions{}
	qo.Transport = r.qft
	fast.ApplyTo(&qo.ClientOptions)
	r.queue, r.poison = env.Queue(qo), env.Queue(nil)
	to := &aztables.ClientOptions{}
	to.Transport = r.tft
	fast.ApplyTo(&to.ClientOptions)
	oc, ic := env.Table(to), env.Table(to)
	var err error
	if r.orders, err = table.New[order](oc); err != nil {
		t.Fatal(err)
	}
	if r.index, err = table.New[byEmail](ic); err != nil {
		t.Fatal(err)
	}
	var o eventual.Options
	if opts != nil {
		o = *opts
	}
	o.Poison, o.Tables = r.poison, []*aztables.Client{oc}
	if o.CommitWindow == 0 {
		o.CommitWindow = 2 * time.Second // short, yet long enough on a loaded 2-core machine
	}
	if r.q, err = eventual.New(r.queue, &o); err != nil {
		t.Fatal(err)
	}
	eventual.SetHook(r.q, r.hook)
	r.qft.Reset()
	r.tft.Reset()
	return r
}

var errCrash = errors.New("crash")

// crashAt makes the n-th pass through step crash.
func (r *rig) crashAt(step string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.crash[step] = r.seen[step] + n
}

func (r *rig) hook(step string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[step]++
	if r.crash[step] == r.seen[step] || r.crashP > 0 && r.rnd() < r.crashP {
		r.crashed[step]++
		return errCrash
	}
	return nil
}

// handle reconciles an order's index row from the order (design rule 3):
// the row exists with the order's total when the order does, and not
// otherwise.
func (r *rig) handle(ctx context.Context, in eventual.Intent[indexOrder]) error {
	r.mu.Lock()
	r.runs[in.ID]++
	r.mu.Unlock()
	p := in.Payload
	o, err := r.orders.Get(ctx, p.Customer, p.ID, nil)
	switch {
	case errors.Is(err, table.ErrNotFound):
		return eventual.DeleteIfExists(ctx, r.index, p.Email, p.Customer+"_"+p.ID, azcore.ETagAny)
	case err != nil:
		return err
	}
	_, err = eventual.Put(ctx, r.index, byEmail{Email: o.Email, Order: o.Customer + "_" + o.ID, Total: o.Total})
	return err
}

// workerOptions are quick: 2 s leases, short idle waits, immediate retries.
func workerOptions() *eventual.WorkerOptions {
	return &eventual.WorkerOptions{VisibilityTimeout: 2 * time.Second, Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 200 * time.Millisecond}, Backoff: &retry.Policy{}, Grace: 5 * time.Second}
}

func (r *rig) worker(t *testing.T, opts *eventual.WorkerOptions) *eventual.Worker {
	t.Helper()
	if opts == nil {
		opts = workerOptions()
	}
	w, err := eventual.NewWorker(r.q, opts, indexKind.Handle(r.handle))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// start runs w until the returned stop is called; stop checks that Run
// returned nil.
func start(t *testing.T, w *eventual.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// drain waits for w to empty the queue, at most 60 s.
func drain(t *testing.T, w *eventual.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
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
	dyn, err := table.New[table.Dynamic](r.orders.Client())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := table.Collect(dyn.Query(ctx, &table.Query{Filter: table.RowKeyRange(table.ReservedPrefix, table.ReservedPrefix+"\x7f"), IncludeReserved: true}))
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
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "eventual.(*Worker)") && !strings.Contains(g, "eventual.(*Worker).Run(") {
			t.Errorf("a worker goroutine outlived Run:\n%s", g)
		}
	}
}

func (r *rig) runsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

var _ = azblob.Client{}
