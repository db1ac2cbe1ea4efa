package indexentity_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// rig is an eventual store on Azurite: an employees table, the lists (in
// an index table, in the employees' own table, or in a blob container), a
// queue and its poison queue, each client behind its own fault-injecting
// transport, and clean clients for the truth.
type rig struct {
	env                 *tabletest.Env
	tft, ixft, qft, bft *faults.Transport
	employees           *table.Table[Employee]
	clean               *table.Table[table.Dynamic] // the employees, without faults
	ixClean             *table.Table[table.Dynamic] // the index table, without faults
	blobs               *container.Client           // without faults
	q                   *eventual.Queue
	queue               *azqueue.QueueClient
	idx                 *indexentity.Index[Employee]
	blob                bool

	mu      sync.Mutex
	crashP  float64 // random crashes: probability per step
	rnd     func() float64
	crashes map[string]int
}

// The stores of rig: index entities in a table of their own, index
// entities in the employees' table (in partitions of their own), blobs.
const (
	ownTable = iota
	sameTable
	blobStore
)

var storeNames = map[int]string{ownTable: "table", sameTable: "partition", blobStore: "blob"}

func newRig(t testing.TB, store int) *rig {
	t.Helper()
	env := tabletest.New(t)
	r := &rig{env: env, tft: &faults.Transport{}, ixft: &faults.Transport{}, qft: &faults.Transport{}, bft: &faults.Transport{}, crashes: map[string]int{}}
	to := &aztables.ClientOptions{}
	to.Transport = r.tft
	clientRetry.ApplyTo(&to.ClientOptions)
	name := env.Name()
	ec := env.CreateTable(name, to)
	var err error
	if r.employees, err = table.New[Employee](ec); err != nil {
		t.Fatal(err)
	}
	if r.clean, err = table.New[table.Dynamic](env.TableClient(name, nil)); err != nil {
		t.Fatal(err)
	}
	r.clean = reserved.Table(r.clean)
	qo := &azqueue.ClientOptions{}
	qo.Transport = r.qft
	clientRetry.ApplyTo(&qo.ClientOptions)
	r.queue = env.Queue(qo)
	if r.q, err = eventual.New(r.queue, &eventual.Options{Poison: env.Queue(nil), Tables: []*aztables.Client{ec}, CommitWindow: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	opts := &indexentity.Options[Employee]{Name: "LastName", Value: lastName, Queue: r.q, Retry: &fast}
	switch store {
	case ownTable:
		io := &aztables.ClientOptions{}
		io.Transport = r.ixft
		clientRetry.ApplyTo(&io.ClientOptions)
		ixName := env.Name()
		opts.Table = env.CreateTable(ixName, io)
		if r.ixClean, err = table.New[table.Dynamic](env.TableClient(ixName, nil)); err != nil {
			t.Fatal(err)
		}
	case sameTable:
		io := &aztables.ClientOptions{}
		io.Transport = r.ixft
		clientRetry.ApplyTo(&io.ClientOptions)
		opts.Table = env.TableClient(name, io)
		r.ixClean = r.clean
	case blobStore:
		bo := &azblob.ClientOptions{}
		bo.Transport = r.bft
		clientRetry.ApplyTo(&bo.ClientOptions)
		opts.Blobs = env.Container(bo)
		r.blobs = env.BlobService(nil).ServiceClient().NewContainerClient(containerName(opts.Blobs.URL()))
		r.blob = true
	}
	if r.idx, err = indexentity.New(r.employees, opts); err != nil {
		t.Fatal(err)
	}
	indexentity.SetHook(r.idx, r.hook)
	r.reset()
	return r
}

func containerName(url string) string {
	url = strings.TrimSuffix(url, "/")
	return url[strings.LastIndex(url, "/")+1:]
}

func (r *rig) reset() {
	for _, ft := range []*faults.Transport{r.tft, r.ixft, r.qft, r.bft} {
		ft.Reset()
	}
}

var errCrash = errors.New("crash")

func (r *rig) hook(step string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.crashP > 0 && r.rnd() < r.crashP {
		r.crashes[step]++
		return errCrash
	}
	return nil
}

// workerOptions are quick: 2 s leases, short idle waits, immediate retries,
// and crashes never poison.
func workerOptions() *eventual.WorkerOptions {
	return &eventual.WorkerOptions{VisibilityTimeout: 2 * time.Second, MaxDeliveries: 1000, Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 200 * time.Millisecond}, Backoff: &retry.Policy{}, Grace: 5 * time.Second}
}

// start runs a worker with opts (nil: workerOptions) until the test ends.
func (r *rig) start(t testing.TB, opts *eventual.WorkerOptions) *eventual.Worker {
	t.Helper()
	if opts == nil {
		opts = workerOptions()
	}
	w, err := eventual.NewWorker(r.q, opts, r.idx.Handler())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	})
	return w
}

// drain waits for w to empty the queue, at most 60 s.
func drain(t testing.TB, w *eventual.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// stored returns the lists as stored (value -> ids), read without faults,
// and fails on an empty list or an id stored twice.
func (r *rig) stored(t testing.TB) map[string][]indexentity.ID {
	t.Helper()
	ctx := context.Background()
	out := map[string][]indexentity.ID{}
	add := func(value string, ids []string) {
		if len(ids) == 0 {
			t.Fatalf("an empty list of %q was left behind", value)
		}
		for _, s := range ids {
			parts, err := keys.Split(s)
			if err != nil || len(parts) != 2 {
				t.Fatalf("list of %q holds %q", value, s)
			}
			out[value] = append(out[value], indexentity.ID{PartitionKey: parts[0], RowKey: parts[1]})
		}
	}
	if r.blob {
		pager := r.blobs.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: ptr("LastName!")})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Segment.BlobItems {
				parts, _ := keys.Split(*b.Name)
				resp, err := r.blobs.NewBlobClient(*b.Name).DownloadStream(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
				checkSet(t, lines)
				add(parts[1], lines)
			}
		}
		return out
	}
	lo, hi := keys.PrefixRange(indexentity.KeyPrefix, "LastName")
	rows, err := table.Collect(r.ixClean.Query(ctx, &table.Query{Filter: table.And(table.Ge("PartitionKey", lo), table.Lt("PartitionKey", hi)), IncludeReserved: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		parts, err := keys.Split(row.PartitionKey)
		if err != nil || len(parts) != 3 || row.RowKey != indexentity.KeyPrefix {
			t.Fatalf("index entity (%q, %q)", row.PartitionKey, row.RowKey)
		}
		add(parts[2], decodeList(t, row.Properties))
	}
	return out
}

func checkSet(t testing.TB, ids []string) {
	t.Helper()
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("a list is not a sorted set: %v", ids)
	}
}

func ptr[V any](v V) *V { return &v }

// truth returns the lists the employees call for.
func (r *rig) truth(t testing.TB) map[string][]indexentity.ID {
	t.Helper()
	all, err := table.Collect(r.clean.Query(context.Background(), nil))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]indexentity.ID{}
	for _, e := range all {
		last, _ := e.Properties["LastName"].(string)
		out[last] = append(out[last], indexentity.ID{PartitionKey: e.PartitionKey, RowKey: e.RowKey})
	}
	return out
}

// check fails unless the stored lists are exactly what the employees
// call for (after a Drain).
func (r *rig) check(t testing.TB) {
	t.Helper()
	got, want := r.stored(t), r.truth(t)
	eq := func(a, b []indexentity.ID) bool {
		return slices.Equal(sortIDs(a), sortIDs(b))
	}
	if !maps.EqualFunc(got, want, eq) {
		t.Fatalf("lists %v, want %v", got, want)
	}
}

func sortIDs(ids []indexentity.ID) []indexentity.ID {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b indexentity.ID) int {
		return strings.Compare(a.PartitionKey+"\x00"+a.RowKey, b.PartitionKey+"\x00"+b.RowKey)
	})
	return ids
}
