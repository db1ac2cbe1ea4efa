package secondaryindex_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testrig"
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
		{Name: "email", Unique: true, On: []string{"Email"}},
		{Name: "name", Holds: secondaryindex.KeysOnly, On: []string{"LastName", "FirstName"}},
	}
}

// rig is a Store over a table of the test rig: its table requests pass
// through r.Faults; the intents' queue bypasses it, so r.Faults counts
// table round trips only.
type rig struct {
	*testrig.Rig
	tbl   *table.Table[table.Dynamic]
	store *secondaryindex.Store[Employee]
	q     *eventual.Queue
	other *table.Table[table.Dynamic]       // the age index's table (inter)
	opts  *secondaryindex.Options[Employee] // the Store's
}

// newRig builds a Store over a fresh table; with inter, it adds an
// OtherPartition email index ("email2", partitions email2!<dept>) and
// a Listed organisation-wide age index in a second table, kept through a
// queue.
func newRig(t *testing.T, indexes []secondaryindex.Index[Employee], inter bool) *rig {
	t.Helper()
	return newRigOn(t, testrig.New(t), indexes, inter)
}

// newRigOn is newRig on the test rig base (one of testrig.Services').
func newRigOn(t *testing.T, base *testrig.Rig, indexes []secondaryindex.Index[Employee], inter bool) *rig {
	t.Helper()
	r := &rig{Rig: base}
	c := r.Table()
	r.tbl = testrig.NewTable[table.Dynamic](t, c)
	opts := &secondaryindex.Options[Employee]{Primary: "empid", Indexes: indexes, Retry: &testrig.Fast}
	if inter {
		var err error
		if r.q, err = eventual.New(r.CleanQueue(), r.CleanQueue(), &eventual.Options{Tables: []*aztables.Client{c}, CommitWindow: 5 * time.Second}); err != nil { // a window a loaded machine's batches do not outlast (eventual's rig: 2 s was outlasted)
			t.Fatal(err)
		}
		r.other = testrig.NewTable[table.Dynamic](t, r.Table())
		opts.Queue = r.q
		opts.Indexes = append(opts.Indexes,
			secondaryindex.Index[Employee]{Name: "email2", Unique: true, Where: secondaryindex.OtherPartition, On: []string{"Email"}},
			secondaryindex.Index[Employee]{Name: "age", Holds: secondaryindex.Listed, Fields: []string{"LastName"}, Where: secondaryindex.OtherPartition, Table: r.other,
				Partition: func(string) string { return "everyone" }, On: []string{"Age"}, Key: func(e *Employee) []string { return []string{fmt.Sprintf("%03d", e.Age)} }})
	}
	var err error
	r.opts = opts
	if r.store, err = secondaryindex.New(r.tbl, opts); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return r
}

// worker runs the Store's handler on the rig's queue until the test ends.
func (r *rig) worker(t *testing.T) *eventual.Worker {
	t.Helper()
	w, err := eventual.NewWorker(r.q, []eventual.Handler{r.store.Handler()}, &eventual.WorkerOptions{VisibilityTimeout: 2 * time.Second, Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 200 * time.Millisecond}, Backoff: &retry.Policy{}, MaxDeliveries: 100})
	if err != nil {
		t.Fatal(err)
	}
	testrig.Start(t, w.Run)
	return w
}

func drain(t *testing.T, w *eventual.Worker) {
	t.Helper()
	testrig.Drain(t, w.Drain)
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
			if len(only) == 0 || slices.Contains(only, x.Index) {
				out = append(out, x)
			}
		}
		return out
	}
	if m, s, o := keep(d.Missing), keep(d.Stale), keep(d.Orphans); len(m)+len(s)+len(o) > 0 {
		t.Fatalf("drift: missing %v, stale %v, orphans %v", m, s, o)
	}
}

func jo() Employee {
	return Employee{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jonesj@contoso.com", Age: 29}
}
