package largeentity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// Employee is the guide's employee with a photo: Photo and CV go to blobs
// when large, Skills always does (as JSON).
type Employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	Photo      []byte   `largeentity:"offload"`
	CV         string   `largeentity:"offload"`
	Skills     []string `table:",json" largeentity:"always"`
}

// clock is a clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a table and a container seen through the rig's
// fault-injecting clients (the stores') and through clean ones (the
// truth).
type fixture struct {
	r          *testrig.Rig
	tbl        *table.Table[table.Dynamic] // through r.Faults
	blobs      *container.Client           // through r.Faults
	blobHost   string                      // the blob endpoint's host, to tell blob requests from table ones
	cleanTbl   *table.Table[table.Dynamic]
	cleanBlobs *container.Client
	clock      *clock
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureOn(t, testrig.New(t))
}

// newFixtureOn is newFixture on rig r (one of testrig.Services').
func newFixtureOn(t testing.TB, r *testrig.Rig) *fixture {
	t.Helper()
	c := r.Table()
	f := &fixture{r: r, tbl: testrig.NewTable[table.Dynamic](t, c), blobs: r.Container(), clock: &clock{t: time.Now()}}
	f.cleanTbl = reserved.Properties(testrig.NewTable[table.Dynamic](t, r.Clean(c))) // plants pointers as another writer would
	u, err := url.Parse(f.blobs.URL())
	if err != nil {
		t.Fatal(err)
	}
	f.blobHost = u.Host
	if f.cleanBlobs, err = container.NewClientFromConnectionString(r.ConnectionString, containerName(f.blobs), nil); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return f
}

func containerName(c *container.Client) string {
	u := strings.TrimSuffix(c.URL(), "/")
	return u[strings.LastIndex(u, "/")+1:]
}

// blob and tbl restrict a fault's match to the blob or the table
// requests.
func (f *fixture) blob(m func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.URL.Host == f.blobHost && m(r) }
}

func (f *fixture) table(m func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.URL.Host != f.blobHost && m(r) }
}

func newStore[T any](t testing.TB, f *fixture, opts *largeentity.Options[T]) *largeentity.Store[T] {
	t.Helper()
	o := largeentity.Options[T]{}
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = f.clock.Now
	}
	if o.Retry == nil {
		o.Retry = &testrig.Contention
	}
	s, err := largeentity.New(f.tbl, f.blobs, &o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reset forgets the requests recorded so far.
func (f *fixture) reset() { f.r.Faults.Reset() }

// trips checks the table and blob requests since the last reset.
func (f *fixture) trips(t *testing.T, what string, tables, blobs int) {
	t.Helper()
	nt, nb := 0, 0
	for _, r := range f.r.Faults.Requests() {
		if u, err := url.Parse(r.URL); err == nil && u.Host == f.blobHost {
			nb++
		} else {
			nt++
		}
	}
	if nt != tables || nb != blobs {
		t.Fatalf("%s: %d table and %d blob requests, want %d and %d", what, nt, nb, tables, blobs)
	}
	f.reset()
}

// blobNames lists every blob in the container, with its content.
func (f *fixture) blobNames(t testing.TB) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	pager := f.cleanBlobs.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			resp, err := f.cleanBlobs.NewBlobClient(*b.Name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			resp.Body.Close()
			out[*b.Name] = buf.Bytes()
		}
	}
	return out
}

// referenced returns the blob names the stored entities point at; it
// fails the test if a pointer names a missing blob or a blob whose content
// does not have the pointer's hash (a dangling or torn pointer).
func (f *fixture) referenced(t testing.TB) map[string]bool {
	t.Helper()
	all, err := table.Collect(f.cleanTbl.Query(context.Background(), nil))
	if err != nil {
		t.Fatal(err)
	}
	stored := f.blobNames(t)
	out := map[string]bool{}
	for _, d := range all {
		for name, v := range d.Properties {
			if !strings.HasPrefix(name, reserved.BlobPointerPrefix) {
				continue
			}
			var b largeentity.Blob
			s := v.(string)
			if err := jsonUnmarshal(s, &b); err != nil {
				t.Fatalf("(%s, %s) %s = %q: %v", d.PartitionKey, d.RowKey, name, s, err)
			}
			content, ok := stored[b.Name]
			if !ok {
				t.Fatalf("(%s, %s) %s points at missing blob %s", d.PartitionKey, d.RowKey, name, b.Name)
			}
			if h := sha256.Sum256(content); hex.EncodeToString(h[:]) != b.SHA256 || int64(len(content)) != b.Size {
				t.Fatalf("(%s, %s) %s: blob %s does not match its pointer", d.PartitionKey, d.RowKey, name, b.Name)
			}
			out[b.Name] = true
		}
	}
	return out
}

// orphans returns the blobs no entity points at.
func (f *fixture) orphans(t testing.TB) []string {
	t.Helper()
	ref := f.referenced(t)
	var out []string
	for name := range f.blobNames(t) {
		if !ref[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func photo(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func isDelete(r *http.Request) bool { return r.Method == http.MethodDelete }

func isWrite(r *http.Request) bool { return r.Method != http.MethodGet }

// invalid checks that err is a validation error of the package: it
// matches ErrInvalid, table.ErrInvalid and each of also, and its text is
// one line.
func invalid(t *testing.T, what string, err error, also ...error) {
	t.Helper()
	for _, want := range append([]error{largeentity.ErrInvalid, table.ErrInvalid}, also...) {
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: the error's text is not one line: %q", what, err)
	}
}

// at returns e with the keys (pk, rk).
func at(pk, rk string, e Employee) Employee {
	e.Department, e.ID = pk, rk
	return e
}

// TestRoundTripsPerOperation: every operation costs what the package
// documentation says, asserted at the transports, and returns what was
// stored.
func TestRoundTripsPerOperation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	f.reset()

	e := Employee{Name: "Jo", Photo: photo(300<<10, 1), CV: "short"}
	res, err := s.Insert(ctx, at("Sales", "000223", e))
	if err != nil || res.ETag == "" || len(res.Blobs) != 1 {
		t.Fatalf("Insert = %+v, %v", res, err)
	}
	f.trips(t, "Insert with a large photo", 1, 1)
	if res.Blobs[0].Property != "Photo" || res.Blobs[0].Size != 300<<10 {
		t.Fatalf("Insert's blobs: %+v", res.Blobs)
	}
	if !strings.HasPrefix(res.Blobs[0].Name, f.tbl.Name()+"/") {
		t.Fatalf("blob name %q does not start with the table's name", res.Blobs[0].Name)
	}

	got, err := s.Get(ctx, "Sales", "000223", nil)
	if err != nil || !bytes.Equal(got.Value.Photo, e.Photo) || got.Value.CV != "short" || got.Value.Name != "Jo" || got.Value.Skills != nil || got.ETag != res.ETag {
		t.Fatalf("Get = %q %q %v %q, %v", got.Value.Name, got.Value.CV, got.Value.Skills, got.ETag, err)
	}
	if got.Value.Department != "Sales" || got.Value.ID != "000223" || got.Value.ETag != res.ETag {
		t.Fatalf("Get's keys and Meta: %q %q %q", got.Value.Department, got.Value.ID, got.Value.ETag)
	}
	f.trips(t, "Get", 1, 1)

	only, err := s.Get(ctx, "Sales", "000223", &largeentity.GetOptions{Select: []string{"Name"}})
	if err != nil || only.Value.Name != "Jo" || only.Value.Photo != nil || only.Value.CV != "" || len(only.Blobs) != 0 {
		t.Fatalf("Get with Select Name = %+v, %v", only.Value, err)
	}
	f.trips(t, "Get with a projection that skips the offloaded values", 1, 0)
	ph, err := s.Get(ctx, "Sales", "000223", &largeentity.GetOptions{Select: []string{"Photo"}})
	if err != nil || !bytes.Equal(ph.Value.Photo, e.Photo) || ph.Value.Name != "" || len(ph.Blobs) != 1 {
		t.Fatalf("Get with Select Photo: %v", err)
	}
	f.trips(t, "Get with a projection of the photo", 1, 1)

	e.Photo, e.CV, e.Skills = photo(200<<10, 2), strings.Repeat("é", 20<<10), []string{"go"}
	res2, err := s.Update(ctx, at("Sales", "000223", e), res.ETag)
	if err != nil || len(res2.Blobs) != 3 {
		t.Fatalf("Update = %+v, %v", res2, err)
	}
	f.trips(t, "Update with three offloaded values (a 40 KiB-as-stored CV among them)", 1, 3)
	if _, err := s.Update(ctx, at("Sales", "000223", e), res.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v", err)
	}
	f.trips(t, "Update with a stale ETag (its blobs deleted again)", 1, 6)
	got, err = s.Get(ctx, "Sales", "000223", nil)
	if err != nil || !bytes.Equal(got.Value.Photo, e.Photo) || got.Value.CV != e.CV || !slices.Equal(got.Value.Skills, []string{"go"}) {
		t.Fatalf("Get after Update: %v", err)
	}
	f.trips(t, "Get of three offloaded values", 1, 3)

	calls := 0
	m, err := s.Modify(ctx, "Sales", "000223", func(e *Employee) error {
		calls++
		e.Name = "Jo Brown"
		return nil
	})
	if err != nil || calls != 1 || m.Value.Name != "Jo Brown" || !slices.EqualFunc(m.Blobs, got.Blobs, func(a, b largeentity.Blob) bool { return a == b }) {
		t.Fatalf("Modify = %+v, %v (fn called %d times)", m.Blobs, err, calls)
	}
	f.trips(t, "Modify of an inline property (the blobs kept)", 2, 3)

	if err := s.Delete(ctx, "Sales", "000223", res2.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale ETag = %v", err)
	}
	f.trips(t, "Delete with a stale ETag", 1, 0)
	if err := s.Delete(ctx, "Sales", "000223", m.ETag); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Delete (read pointers, delete entity, delete 3 blobs)", 2, 3)
	if _, err := s.Get(ctx, "Sales", "000223", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	f.trips(t, "Get of a missing entity", 1, 0)
	if left := f.blobNames(t); len(left) != 1 || left[res.Blobs[0].Name] == nil {
		// The first version's photo is Sweep's: Update leaves it.
		t.Fatalf("%d blobs left, want the first version's photo: %v", len(left), slices.Collect(maps.Keys(left)))
	}

	small := Employee{Name: "Al", Photo: []byte("tiny"), CV: "cv"}
	if _, err := s.Insert(ctx, at("Sales", "000224", small)); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Insert with every value inline", 1, 0)
	if got, err := s.Get(ctx, "Sales", "000224", nil); err != nil || string(got.Value.Photo) != "tiny" || got.Value.CV != "cv" || len(got.Blobs) != 0 {
		t.Fatalf("Get of an inline entity = %+v, %v", got, err)
	}
	f.trips(t, "Get of an inline entity", 1, 0)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
