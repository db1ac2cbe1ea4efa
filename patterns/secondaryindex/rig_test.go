package secondaryindex_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// Employee is the guide's running example.
type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
	Age        int64
}

// intra: the guide's pattern 1 (email unique, whole copies; last name
// non-unique, keys only), all in the employee's partition.
func intraIndexes() []secondaryindex.Index[Employee] {
	return []secondaryindex.Index[Employee]{
		{Name: "email", Unique: true, Key: func(e *Employee) []string { return []string{e.Email} }},
		{Name: "name", Holds: secondaryindex.KeysOnly, Key: func(e *Employee) []string { return []string{e.LastName, e.FirstName} }},
	}
}

// fast is the retry policy of the test clients: real retries, short waits.
var fast = retry.Policy{Default: time.Millisecond, Max: 5 * time.Millisecond, MaxRetries: 5}

type rig struct {
	env   *tabletest.Env
	tbl   *table.Table[table.Dynamic]
	ft    *faults.Transport
	store *secondaryindex.Store[Employee]
	q     *eventual.Queue
	other *table.Table[table.Dynamic] // the age index's table (inter)
}

// newRig builds a Store over a fresh table; with inter, it adds an
// OtherPartition email index ("email2", partitions email2!<dept>) and
// a Listed organisation-wide age index in a second table, kept through a
// queue.
func newRig(t *testing.T, indexes []secondaryindex.Index[Employee], inter bool) *rig {
	t.Helper()
	env := tabletest.New(t)
	r := &rig{env: env, ft: &faults.Transport{}}
	o := &aztables.ClientOptions{}
	o.Transport = r.ft
	fast.ApplyTo(&o.ClientOptions)
	c := env.Table(o)
	var err error
	if r.tbl, err = table.New[table.Dynamic](c); err != nil {
		t.Fatal(err)
	}
	opts := &secondaryindex.Options[Employee]{Primary: "empid", Indexes: indexes, Retry: &fast}
	if inter {
		qo := &azqueue.ClientOptions{}
		fast.ApplyTo(&qo.ClientOptions)
		if r.q, err = eventual.New(env.Queue(qo), &eventual.Options{Poison: env.Queue(nil), Tables: []*aztables.Client{c}, CommitWindow: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
		other, err := table.New[table.Dynamic](env.Table(o))
		if err != nil {
			t.Fatal(err)
		}
		r.other = other
		opts.Queue = r.q
		opts.Indexes = append(opts.Indexes,
			secondaryindex.Index[Employee]{Name: "email2", Unique: true, Where: secondaryindex.OtherPartition, Key: func(e *Employee) []string { return []string{e.Email} }},
			secondaryindex.Index[Employee]{Name: "age", Holds: secondaryindex.Listed, Fields: []string{"LastName"}, Where: secondaryindex.OtherPartition, Table: other,
				Partition: func(string) string { return "everyone" }, Key: func(e *Employee) []string { return []string{fmt.Sprintf("%03d", e.Age)} }})
	}
	if r.store, err = secondaryindex.New(r.tbl, opts); err != nil {
		t.Fatal(err)
	}
	r.ft.Reset()
	return r
}

// worker runs the Store's handler on the rig's queue until the test ends.
func (r *rig) worker(t *testing.T) *eventual.Worker {
	t.Helper()
	w, err := eventual.NewWorker(r.q, &eventual.WorkerOptions{VisibilityTimeout: 2 * time.Second, Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 200 * time.Millisecond}, Backoff: &retry.Policy{}, MaxDeliveries: 100}, r.store.Handler())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

func drain(t *testing.T, w *eventual.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// clean fails the test unless Check finds no drift (in the indexes named,
// or all when none are named).
func (r *rig) clean(t *testing.T, pk string, only ...string) {
	t.Helper()
	d, err := r.store.Check(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(rs []secondaryindex.CopyRef) (out []secondaryindex.CopyRef) {
		for _, x := range rs {
			if len(only) == 0 || contains(only, x.Index) {
				out = append(out, x)
			}
		}
		return out
	}
	if m, s, o := keep(d.Missing), keep(d.Stale), keep(d.Orphans); len(m)+len(s)+len(o) > 0 {
		t.Fatalf("drift: missing %v, stale %v, orphans %v", m, s, o)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func jo() Employee {
	return Employee{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jonesj@contoso.com", Age: 29}
}
