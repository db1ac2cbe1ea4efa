package hostile_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/hostile"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// secret marks every value of tenant A's data, in partition HR; nothing
// the attacker writes holds it, so a read of the attacker's partition
// (Sales) that holds it returned HR's data.
const secret = "HRSECRET"

// leaks reports whether v, as printed, holds HR's marker.
func leaks(v any) bool { return strings.Contains(fmt.Sprintf("%+v", v), secret) }

// trace is a model test's recent operations, named in its failures, and
// the counts of its outcomes, logged at its end.
type trace struct {
	t      *testing.T
	ops    []string
	mu     sync.Mutex
	counts map[string]int
}

func newTrace(t *testing.T) *trace {
	tr := &trace{t: t, counts: map[string]int{}}
	t.Cleanup(func() {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		t.Logf("outcomes: %v", tr.counts)
	})
	return tr
}

// count counts an outcome and returns its count so far. It is safe for
// concurrent use (a worker's events).
func (tr *trace) count(outcome string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.counts[outcome]++
	return tr.counts[outcome]
}

// outcome counts err's class for what: "ok", a sentinel's name, or
// "other error".
func (tr *trace) outcome(what string, err error, sentinels map[string]error) {
	if err == nil {
		tr.count(what + ": ok")
		return
	}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			tr.count(what + ": " + name)
			return
		}
	}
	if tr.count(what+": other error") == 1 {
		tr.t.Logf("first other error of %s: %v", what, err)
	}
}

// do records op of step and runs fn, failing the test when fn panics:
// nothing read from storage may make a pattern panic.
func (tr *trace) do(step int, op string, fn func()) {
	tr.t.Helper()
	tr.ops = append(tr.ops, fmt.Sprintf("%d: %s", step, op))
	if len(tr.ops) > 16 {
		tr.ops = tr.ops[1:]
	}
	defer func() {
		if p := recover(); p != nil {
			tr.fatalf("%s panicked: %v\n%s", op, p, debug.Stack())
		}
	}()
	fn()
}

// fatalf fails the test with the recent operations.
func (tr *trace) fatalf(format string, args ...any) {
	tr.t.Helper()
	tr.t.Fatalf("%s\nrecent operations:\n  %s", fmt.Sprintf(format, args...), strings.Join(tr.ops, "\n  "))
}

// worker starts a worker of q with handlers, fast to poison what fails
// (two deliveries, no backoff), counting its events in tr, until the test
// ends.
func worker(t *testing.T, tr *trace, q *eventual.Queue, opts *eventual.WorkerOptions, handlers ...eventual.Handler) *eventual.Worker {
	t.Helper()
	o := eventual.WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	o.VisibilityTimeout = 5 * time.Second
	o.MaxDeliveries = 2
	o.Backoff = &retry.Policy{}
	o.Idle = &retry.Policy{Default: 5 * time.Millisecond, Max: 50 * time.Millisecond, MaxRetries: 1 << 20}
	if tr != nil {
		o.OnEvent = func(e eventual.Event) { tr.count("worker: " + string(e.Type)) }
	}
	w, err := eventual.NewWorker(q, handlers, &o)
	if err != nil {
		t.Fatal(err)
	}
	testrig.Start(t, w.Run)
	return w
}

// queueRig is an eventual Queue of a rig (its clients through Faults)
// with the attacker's clean clients of the same queue and container.
type queueRig struct {
	q             *eventual.Queue
	raw           *azqueue.QueueClient // the attacker's client of the queue
	blobs         *container.Client    // the Queue's container, nil without
	rawBlobs      *container.Client
	tables        []string // the names of the Queue's tables
	foreignBlobs  []string // blobs a forged claim check may name
	forgedRecords []string // the ids of the commit records the attacker planted
}

// queue returns a Queue on a fresh queue of r (with a container for claim
// checks when withBlobs), committing to tables.
func queue(t *testing.T, r *testrig.Rig, withBlobs bool, tables ...*aztables.Client) *queueRig {
	t.Helper()
	qc := r.Queue()
	qr := &queueRig{raw: r.QueueService(nil).NewQueueClient(path.Base(qc.URL()))}
	o := &eventual.Options{Tables: tables, CommitWindow: 10 * time.Second}
	if withBlobs {
		qr.blobs = r.Container()
		qr.rawBlobs = r.BlobService(nil).ServiceClient().NewContainerClient(path.Base(qr.blobs.URL()))
		o.Blobs = qr.blobs
	}
	for _, c := range tables {
		qr.tables = append(qr.tables, testrig.NewTable[table.Dynamic](t, c).Name())
	}
	var err error
	if qr.q, err = eventual.New(qc, r.CleanQueue(), o); err != nil {
		t.Fatal(err)
	}
	return qr
}

// forge enqueues e on the queue as its attacker.
func (qr *queueRig) forge(t *testing.T, e hostile.Envelope) string {
	t.Helper()
	id, err := hostile.Forge(context.Background(), qr.raw, e)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// garbage enqueues one of the messages a queue writer can forge that no
// Queue writes (each must be poisoned or dropped, reading and deleting
// nothing it names), or a forged committed intent of kind with a commit
// record the attacker plants in its own partition Sales of table c.
func (qr *queueRig) garbage(t *testing.T, rnd *rand.Rand, kind string, c *aztables.Client) {
	t.Helper()
	ctx := context.Background()
	id := hostile.ID()
	env := hostile.Envelope{V: 1, ID: id, Kind: kind, Created: time.Now(), Payload: json.RawMessage(`{}`)}
	foreign := append([]string{"intents/" + hostile.ID() + "/" + hostile.ID(), "intents/" + id + "/../../secret", "intents/" + id + "/" + strings.ToUpper(hostile.ID())}, qr.foreignBlobs...)
	table0 := "nosuchtable"
	if len(qr.tables) > 0 {
		table0 = qr.tables[0]
	}
	switch rnd.IntN(12) {
	case 0:
		if _, err := hostile.Message(ctx, qr.raw, "%%% not base64"); err != nil {
			t.Fatal(err)
		}
		return
	case 1:
		if _, err := hostile.Message(ctx, qr.raw, base64.StdEncoding.EncodeToString([]byte(`{"v":1,"id":`))); err != nil {
			t.Fatal(err)
		}
		return
	case 2:
		env.V = 2
	case 3:
		env.ID = []string{"../x", strings.ToUpper(id), id[:31], ""}[rnd.IntN(4)]
	case 4:
		env.Kind = []string{"", "k\x00", strings.Repeat("k", 200)}[rnd.IntN(3)]
	case 5: // a claim check that is not its own
		env.Payload, env.Blob = nil, foreign[rnd.IntN(len(foreign))]
	case 6: // its own Commit's claim check, without a commit reference
		env.Payload, env.Blob = nil, hostile.ClaimCheck(id, true)
	case 7: // a commit reference to another table, or a bad partition
		env.Commit = &hostile.CommitRef{Table: []string{"nosuchtable", table0, ""}[rnd.IntN(3)], PartitionKey: []string{"HR", "a/b", ""}[rnd.IntN(3)]}
		env.Released = rnd.IntN(2) == 0
	case 8: // HR's partition: no record there, so the worker rules the id out
		env.Commit = &hostile.CommitRef{Table: table0, PartitionKey: "HR"}
		env.Released = rnd.IntN(2) == 0
		if rnd.IntN(2) == 0 {
			env.Payload, env.Blob = nil, hostile.ClaimCheck(id, true)
		}
	case 9:
		env.Abandoned = 99
	case 10: // an intent of no handled kind, with a long last error
		env.Kind, env.LastError = "nokind", strings.Repeat("e", 20<<10)
	default: // a committed intent in Sales, with the record the attacker plants for it
		if c == nil || len(qr.tables) == 0 {
			env.V = 3
			break
		}
		env.Commit = &hostile.CommitRef{Table: table0, PartitionKey: "Sales"}
		msg := qr.forge(t, env)
		if err := hostile.CommitRecord(ctx, c, "Sales", id, kind, "committed", msg); err != nil {
			t.Fatal(err)
		}
		qr.forgedRecords = append(qr.forgedRecords, id)
		return
	}
	qr.forge(t, env)
}

// rows returns the RowKeys of partition pk of c's table, reserved rows
// included, read with a clean client: what is really stored.
func rows(t *testing.T, r *testrig.Rig, c *aztables.Client, pk string) []string {
	t.Helper()
	tb := testrig.NewTable[table.Dynamic](t, r.Clean(c))
	var out []string
	for d, err := range tb.Query(context.Background(), &table.Query{Filter: table.PartitionKey(pk), Select: []string{"RowKey"}, IncludeReserved: true}) {
		if err != nil {
			t.Fatalf("reading partition %s: %v", pk, err)
		}
		out = append(out, d.RowKey)
	}
	return out
}

// split returns the RowKeys of rks that are not under reserved.Prefix,
// sorted, and those that are.
func split(rks []string) (own, kept []string) {
	for _, rk := range rks {
		if strings.HasPrefix(rk, reserved.Prefix) {
			kept = append(kept, rk)
		} else {
			own = append(own, rk)
		}
	}
	slices.Sort(own)
	return own, kept
}
