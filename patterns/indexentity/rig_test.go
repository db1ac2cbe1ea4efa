package indexentity_test

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// rig is an eventual store on the test rig: an employees table, the lists
// (in an index table, in the employees' own table, or in a blob
// container), a queue and its poison queue, the employees, the lists and
// the queue behind the rig's fault-injecting transport (which tells their
// requests apart: kindOf), and clean clients for the truth.
type rig struct {
	*testrig.Rig
	employees *table.Table[Employee]
	clean     *table.Table[table.Dynamic] // the employees, without faults
	ixClean   *table.Table[table.Dynamic] // the index table, without faults
	blobs     *container.Client           // without faults
	q         *eventual.Queue
	queue     *azqueue.QueueClient
	idx       *indexentity.Index[Employee]
	blob      bool
	crashes   testrig.Crashes // the handler's steps (SetHook)

	queueHost, blobHost string
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
	r := &rig{Rig: testrig.New(t)}
	ec := r.Table()
	r.employees = testrig.NewTable[Employee](t, ec)
	r.clean = reserved.Table(testrig.NewTable[table.Dynamic](t, r.Clean(ec)))
	r.queue = r.Queue()
	r.queueHost = host(r.queue.URL())
	var err error
	if r.q, err = eventual.New(r.queue, r.CleanQueue(), &eventual.Options{Tables: []*aztables.Client{ec}, CommitWindow: 5 * time.Second}); err != nil { // a window a loaded machine's batches do not outlast (eventual's rig: 2 s was outlasted)
		t.Fatal(err)
	}
	opts := &indexentity.Options{Queue: r.q, Retry: &testrig.Contention}
	switch store {
	case ownTable:
		opts.Table = r.Table()
		r.ixClean = reserved.Table(testrig.NewTable[table.Dynamic](t, r.Clean(opts.Table)))
	case sameTable:
		opts.Table = ec
		r.ixClean = r.clean
	case blobStore:
		opts.Blobs = r.Container()
		r.blobHost = host(opts.Blobs.URL())
		r.blobs = r.BlobService(nil).ServiceClient().NewContainerClient(containerName(opts.Blobs.URL()))
		r.blob = true
	}
	if r.idx, err = indexentity.New(r.employees, "LastName", lastName, opts); err != nil {
		t.Fatal(err)
	}
	indexentity.SetHook(r.idx, r.crashes.Hook)
	r.Faults.Reset()
	return r
}

func containerName(url string) string {
	url = strings.TrimSuffix(url, "/")
	return url[strings.LastIndex(url, "/")+1:]
}

func host(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	return u.Host
}

// What a request of the rig is for.
const (
	entities = iota // the employees' table (entities and commit records)
	lists           // index entities or list blobs
	queue           // the intents' queue
)

// kindOf tells what a request is for: its service (by host), and among
// table requests, those naming an index entity's keys (reserved.IndexKeyPrefix, in the
// URL or a transaction's body).
func (r *rig) kindOf(rawURL string, body []byte) int {
	h := host(rawURL)
	switch {
	case h == r.queueHost:
		return queue
	case r.blob && h == r.blobHost:
		return lists
	case strings.Contains(rawURL, reserved.IndexKeyPrefix) || bytes.Contains(body, []byte(reserved.IndexKeyPrefix)):
		return lists
	}
	return entities
}

// on returns a fault Match for the requests of kind k that match (nil:
// all of them).
func (r *rig) on(k int, match func(*http.Request) bool) func(*http.Request) bool {
	return func(q *http.Request) bool {
		var body []byte
		if q.GetBody != nil {
			if rc, err := q.GetBody(); err == nil {
				body, _ = io.ReadAll(rc)
			}
		}
		return r.kindOf(q.URL.String(), body) == k && (match == nil || match(q))
	}
}

// requests returns the requests of kind k since the last reset.
func (r *rig) requests(k int) []faults.Request {
	var out []faults.Request
	for _, q := range r.Faults.Requests() {
		if r.kindOf(q.URL, q.Body) == k {
			out = append(out, q)
		}
	}
	return out
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
	w, err := eventual.NewWorker(r.q, []eventual.Handler{r.idx.Handler()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	testrig.Start(t, w.Run)
	return w
}

// drain waits for w to empty the queue.
func drain(t testing.TB, w *eventual.Worker) {
	t.Helper()
	testrig.Drain(t, w.Drain)
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
	lo, hi := keys.PrefixRange(reserved.IndexKeyPrefix, "LastName")
	rows, err := table.Collect(r.ixClean.Query(ctx, &table.Query{Filter: table.And(table.Ge("PartitionKey", lo), table.Lt("PartitionKey", hi)), IncludeReserved: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		parts, err := keys.Split(row.PartitionKey)
		if err != nil || len(parts) != 3 || row.RowKey != reserved.IndexKeyPrefix {
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
		last, ok := e.Properties["LastName"].(string)
		if !ok {
			continue // not an employee: another pattern's row (compose_test's notes)
		}
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
