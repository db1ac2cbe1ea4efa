package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func TestDynamicRoundTrip(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[table.Dynamic](t)
	ctx := context.Background()
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC)
	g := table.GUID{1, 2, 3}
	in := table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{
		"S": "x", "B": true, "I32": int32(-7), "I64": int64(1) << 50, "I": 12, "F": 2.25, "F32": float32(0.5),
		"T": ts, "Bin": []byte{1, 2}, "G": g, "U": uuidLike{4}, "E64": aztables.EDMInt64(5), "Nil": nil,
	}}
	if _, err := tb.Insert(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := value(tb.Get(ctx, "p", "r", nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"S": "x", "B": true, "I32": int32(-7), "I64": int64(1) << 50, "I": int64(12), "F": 2.25, "F32": 0.5,
		"T": ts, "Bin": []byte{1, 2}, "G": g, "U": table.GUID(uuidLike{4}), "E64": int64(5),
	}
	if len(got.Properties) != len(want) {
		t.Fatalf("properties %v, want %v", got.Properties, want)
	}
	for k, w := range want {
		v := got.Properties[k]
		if b, ok := w.([]byte); ok {
			if !bytes.Equal(v.([]byte), b) {
				t.Errorf("%s = %v, want %v", k, v, w)
			}
			continue
		}
		if fmt.Sprintf("%T %v", v, v) != fmt.Sprintf("%T %v", w, w) {
			t.Errorf("%s = %T %v, want %T %v", k, v, v, w, w)
		}
	}
	if got.ETag == "" || got.PartitionKey != "p" || got.RowKey != "r" {
		t.Errorf("keys/meta not read: %+v", got)
	}
}

// A struct with an extra field keeps properties it has no field for, even
// through Replace; one without ignores them.
func TestExtraPropertiesCapturedOrIgnored(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	name := env.Name()
	c := env.CreateTable(name, nil)
	dyn, _ := table.New[table.Dynamic](c, nil)
	type v1 struct {
		PartitionKey, RowKey string
		Name                 string
		Rest                 map[string]any `table:",extra"`
	}
	type narrow struct {
		PartitionKey, RowKey string
		Name                 string
	}
	ctx := context.Background()
	if _, err := dyn.Insert(ctx, table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"Name": "n", "Added": int64(9), "When": time.Unix(0, 0).UTC()}}); err != nil {
		t.Fatal(err)
	}
	old, _ := table.New[v1](c, nil)
	got, err := value(old.Get(ctx, "p", "r", nil))
	if err != nil || got.Name != "n" || got.Rest["Added"] != int64(9) || len(got.Rest) != 2 {
		t.Fatalf("extra capture: %+v, %v", got, err)
	}
	got.Name = "renamed"
	if _, err := old.Update(ctx, got, azcore.ETagAny, table.Replace); err != nil {
		t.Fatal(err)
	}
	back, _ := value(dyn.Get(ctx, "p", "r", nil))
	if back.Properties["Added"] != int64(9) || back.Properties["Name"] != "renamed" {
		t.Fatalf("Replace through a struct with an extra field lost data: %v", back.Properties)
	}
	nt, _ := table.New[narrow](c, nil)
	n, err := value(nt.Get(ctx, "p", "r", nil))
	if err != nil || n.Name != "renamed" {
		t.Fatalf("unknown properties must be ignored: %+v, %v", n, err)
	}
	// A stored value of another type is a clear error, not a silent zero.
	type wrongType struct {
		PartitionKey, RowKey string
		Name                 int32
	}
	wt, _ := table.New[wrongType](c, nil)
	if _, err := wt.Get(ctx, "p", "r", nil); err == nil || !strings.Contains(err.Error(), "Name") {
		t.Fatalf("decoding a string into int32: %v", err)
	}
}

type review struct {
	EmployeeID string
	Year       int32
	Rating     int32
}

// WithKeys computes compound keys; the ordered fan-out merges partitions in
// service key order even though the type has no key fields.
func TestWithKeysAndFanOut(t *testing.T) {
	t.Parallel()
	base, ft := newTable[review](t)
	ctx := context.Background()
	if _, err := base.Insert(ctx, review{EmployeeID: "1"}); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("Insert without keys = %v, want ErrInvalidEntity", err)
	}
	tb := base.WithKeys(func(r *review) (string, string) {
		return keys.Bucket(r.EmployeeID, 4), keys.Join(r.EmployeeID, fmt.Sprint(r.Year))
	})
	var ops []table.Op
	for e := 0; e < 40; e++ {
		for y := 2010; y < 2013; y++ {
			ops = append(ops, tb.InsertOp(review{EmployeeID: keys.Pad(uint64(e), 4), Year: int32(y), Rating: int32(e % 5)}))
		}
	}
	if _, err := tb.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	// One employee's reviews: a range query over the compound RowKey prefix.
	id := keys.Pad(7, 4)
	mine, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey(keys.Bucket(id, 4)), table.RowKeyPrefix(id))}))
	if err != nil || len(mine) != 3 || mine[0].Year != 2010 {
		t.Fatalf("reviews of %s: %+v, %v", id, mine, err)
	}
	var qs []*table.Query
	for b := 0; b < 4; b++ {
		qs = append(qs, &table.Query{Filter: table.PartitionKey(fmt.Sprint(b)), PageSize: 7})
	}
	ft.Reset()
	var seen []string
	for r, err := range tb.FanOut(ctx, qs, &table.FanOutOptions{Ordered: true, Concurrency: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		pk, rk := keys.Bucket(r.EmployeeID, 4), keys.Join(r.EmployeeID, fmt.Sprint(r.Year))
		seen = append(seen, pk+"|"+rk)
	}
	if len(seen) != 120 || !slices.IsSorted(seen) {
		t.Fatalf("ordered fan-out returned %d entities, sorted=%v", len(seen), slices.IsSorted(seen))
	}
	if n := ft.Count(); n < 120/7 || n > 120/7+4 {
		t.Fatalf("%d round trips for 4 partitions in pages of 7", n)
	}
	// Unordered: same set.
	var un []string
	for r, err := range tb.FanOut(ctx, qs, nil) {
		if err != nil {
			t.Fatal(err)
		}
		un = append(un, keys.Bucket(r.EmployeeID, 4)+"|"+keys.Join(r.EmployeeID, fmt.Sprint(r.Year)))
	}
	slices.Sort(un)
	if !slices.Equal(un, seen) {
		t.Fatalf("unordered fan-out returned a different set (%d entities)", len(un))
	}
	// Breaking out early stops every query; an error ends the sequence.
	n := 0
	for _, err := range tb.FanOut(ctx, qs, &table.FanOutOptions{Ordered: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 5 {
			break
		}
	}
	bad := append(slices.Clone(qs), &table.Query{Filter: table.Eq("X", struct{}{})})
	var gotErr error
	for _, err := range tb.FanOut(ctx, bad, nil) {
		if err != nil {
			gotErr = err
		}
	}
	if !errors.Is(gotErr, table.ErrInvalidFilter) {
		t.Fatalf("fan-out with a bad query ended with %v", gotErr)
	}
}

// Cancelling the context mid-way never looks like a complete result.
func TestFanOutReportsCancellation(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[employee](t)
	load(t, tb, "a", 50)
	load(t, tb, "b", 50)
	qs := []*table.Query{{Filter: table.PartitionKey("a"), PageSize: 5}, {Filter: table.PartitionKey("b"), PageSize: 5}}
	for _, ordered := range []bool{false, true} {
		for run := 0; run < 20; run++ {
			ctx, cancel := context.WithCancel(context.Background())
			n, sawErr := 0, error(nil)
			for _, err := range tb.FanOut(ctx, qs, &table.FanOutOptions{Ordered: ordered}) {
				if err != nil {
					sawErr = err
					break
				}
				if n++; n == 3 {
					cancel()
				}
			}
			cancel()
			if n < 100 && !errors.Is(sawErr, context.Canceled) {
				t.Fatalf("ordered=%v run %d: %d of 100 entities and no error (%v)", ordered, run, n, sawErr)
			}
		}
	}
}

func TestFanOutBoundsConcurrency(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	var inFlight, peak atomic.Int32
	tr := &gate{next: http.DefaultClient, in: &inFlight, peak: &peak}
	opts := &aztables.ClientOptions{}
	opts.Transport = tr
	tb, _ := table.New[employee](env.Table(opts), nil)
	load(t, tb, "a", 1)
	var qs []*table.Query
	for i := 0; i < 12; i++ {
		qs = append(qs, &table.Query{Filter: table.PartitionKey(fmt.Sprint(i))})
	}
	for _, err := range tb.FanOut(context.Background(), qs, &table.FanOutOptions{Concurrency: 3}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak concurrency %d, want 1-3", p)
	}
}

// gate counts requests in flight.
type gate struct {
	next     *http.Client
	in, peak *atomic.Int32
}

func (g *gate) Do(req *http.Request) (*http.Response, error) {
	n := g.in.Add(1)
	defer g.in.Add(-1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	return g.next.Do(req)
}

func TestTableLifecycle(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ctx := context.Background()
	ft := &faults.Transport{}
	opts := table.ClientOptions()
	opts.Transport = ft
	svc, err := table.NewServiceClientFromConnectionString(env.ConnectionString, opts)
	if err != nil {
		t.Fatal(err)
	}
	prefix := env.Name()
	a, b := prefix+"a", prefix+"b"
	t.Cleanup(func() {
		_ = table.DeleteTable(context.Background(), env.Tables, a)
		_ = table.DeleteTable(context.Background(), env.Tables, b)
	})
	if err := table.CreateTable(ctx, svc, a); err != nil {
		t.Fatal(err)
	}
	if err := table.CreateTable(ctx, svc, a); err != nil {
		t.Fatalf("creating an existing table must succeed: %v", err)
	}
	// The service answers 409 TableBeingDeleted for 40 s after a delete
	// (Azurite never does): CreateTable waits and tries again.
	ft.Reset()
	ft.Inject(faults.Fault{Status: 409, ErrorCode: "TableBeingDeleted"})
	if err := table.CreateTable(ctx, svc, b); err != nil {
		t.Fatal(err)
	}
	if ft.Count() != 2 {
		t.Fatalf("%d attempts, want 2 (one TableBeingDeleted, one success)", ft.Count())
	}
	var names []string
	for n, err := range table.ListTables(ctx, svc, prefix) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if !slices.Equal(names, []string{a, b}) {
		t.Fatalf("ListTables(%q) = %v", prefix, names)
	}
	if err := table.DeleteTable(ctx, svc, a); err != nil {
		t.Fatal(err)
	}
	if err := table.DeleteTable(ctx, svc, a); !errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("deleting a missing table: %v", err)
	}
	// Every attempt's response lost: a query settles it.
	fast := table.ClientOptions()
	fast.Transport = ft
	retry.Policy{Default: time.Millisecond, Max: 2 * time.Millisecond, MaxRetries: 2}.ApplyTo(&fast.ClientOptions)
	fastSvc, err := table.NewServiceClientFromConnectionString(env.ConnectionString, fast)
	if err != nil {
		t.Fatal(err)
	}
	isDelete := func(r *http.Request) bool { return r.Method == http.MethodDelete }
	ft.Reset()
	for range 3 {
		ft.Inject(faults.Fault{Match: isDelete, LoseResponse: true})
	}
	err = table.DeleteTable(ctx, fastSvc, b)
	if !errors.Is(err, table.ErrTableNotFound) || !errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("a delete whose 3 responses were lost = %v, want ErrTableNotFound and ErrOutcomeUnknown (settled by a query)", err)
	}
	if n := ft.Count(); n != 4 {
		t.Fatalf("%d requests, want 3 deletes + 1 query", n)
	}
	// Not sent at all (refused connections): the table is still there,
	// which settles nothing (an attempt may yet reach the service), so the
	// outcome stays unknown, and the table is not reported gone.
	if err := table.CreateTable(ctx, svc, prefix+"d"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = table.DeleteTable(context.Background(), env.Tables, prefix+"d") })
	ft.Reset()
	for range 3 {
		ft.Inject(faults.Fault{Match: isDelete, Err: faults.ErrLost})
	}
	err = table.DeleteTable(ctx, fastSvc, prefix+"d")
	if !errors.Is(err, table.ErrOutcomeUnknown) || errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("a delete whose attempts all failed, the table still there = %v, want ErrOutcomeUnknown, not ErrTableNotFound", err)
	}
	if err := table.DeleteTable(ctx, svc, prefix+"d"); err != nil {
		t.Fatalf("the table must still exist: %v", err)
	}
	if err := table.CreateTable(ctx, svc, "no"); !errors.Is(err, table.ErrInvalidEntity) {
		t.Fatalf("invalid name: %v", err)
	}
	// A context that ends while the name is still being deleted.
	ft.Reset()
	for i := 0; i < 5; i++ {
		ft.Inject(faults.Fault{Status: 409, ErrorCode: "TableBeingDeleted"})
	}
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := table.CreateTable(short, svc, prefix+"c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CreateTable with a short deadline = %v", err)
	}
}

func TestSAS(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	name := env.Name()
	tb, _ := table.New[employee](env.CreateTable(name, nil), nil)
	load(t, tb, "Sales", 3)
	load(t, tb, "Zeta", 2)
	ctx := context.Background()
	cred, err := aztables.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	svcURL := serviceURL(t, env.ConnectionString)
	o := table.SASOptions{
		Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour),
		StartPartitionKey: "Sales", EndPartitionKey: "Sales", AllowHTTP: true,
	}
	sas, err := table.SASURL(svcURL, cred, name, o)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(sas)
	if u.Query().Get("spk") != "Sales" || u.Query().Get("epk") != "Sales" || !strings.HasSuffix(u.Path, "/"+name) {
		t.Fatalf("SAS URL %s lacks the key range or the table", sas)
	}
	c, err := table.NewClientFromSASURL(sas, nil)
	if err != nil {
		t.Fatal(err)
	}
	ro, _ := table.New[employee](c, nil)
	got, err := table.Collect(ro.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil || len(got) != 3 {
		t.Fatalf("reading through the SAS: %d, %v", len(got), err)
	}
	// Azurite validates permissions (not key ranges, which it ignores).
	_, err = ro.Insert(ctx, emp("Sales", 99))
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 403 {
		t.Fatalf("insert through a read-only SAS = %v, want 403", err)
	}
	// HTTPS only unless allowed; bad options fail before signing.
	o.AllowHTTP = false
	if _, err := table.SASURL(svcURL, cred, name, o); err == nil {
		t.Fatal("an http service URL needs AllowHTTP")
	}
	for _, bad := range []table.SASOptions{
		{Expiry: time.Now().Add(time.Hour)},
		{Permissions: aztables.SASPermissions{Read: true}},
		{Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour), StartRowKey: "r"},
		{Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour), StartPartitionKey: "a/b"},
	} {
		bad.AllowHTTP = true
		if _, err := table.SASURL(svcURL, cred, name, bad); err == nil {
			t.Errorf("SASURL(%+v) succeeded", bad)
		}
	}
	// A trailing slash on the service URL does not break the URL.
	o.AllowHTTP = true
	withSlash, _ := table.SASURL(svcURL+"/", cred, name, o)
	if strings.Contains(withSlash, "//"+name) {
		t.Fatalf("double slash in %s", withSlash)
	}
}

// serviceURL is the TableEndpoint of a connection string.
func serviceURL(t *testing.T, cs string) string {
	for _, part := range strings.Split(cs, ";") {
		if v, ok := strings.CutPrefix(part, "TableEndpoint="); ok {
			return v
		}
	}
	t.Skip("the connection string has no TableEndpoint (SAS test needs an explicit endpoint)")
	return ""
}

// Clients made by tablekit use the retry package's policy, not azcore's.
func TestClientsUseTheGuidePolicy(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := table.ClientOptions()
	opts.Transport = ft
	if opts.Retry.MaxRetries != -1 {
		t.Fatalf("built-in retry not disabled: %+v", opts.Retry)
	}
	svc, err := table.NewServiceClientFromConnectionString(env.ConnectionString, opts)
	if err != nil {
		t.Fatal(err)
	}
	name := env.Name()
	env.CreateTable(name, nil)
	tb, _ := table.New[employee](table.NewClient(svc, name), nil)
	for i := 0; i < 10; i++ {
		ft.Inject(faults.Fault{Status: 503, ErrorCode: "ServerBusy"})
	}
	_, err = tb.Get(context.Background(), "p", "r", nil)
	if !errors.Is(err, table.ErrThrottled) {
		t.Fatalf("Get through endless 503s = %v, want ErrThrottled", err)
	}
	// retry.Default: 1 + 5 attempts (azcore's built-in policy would make 4).
	if ft.Count() != 6 {
		t.Fatalf("%d attempts, want 6", ft.Count())
	}
}

// Every validation error of the core, found before the network, matches
// ErrInvalid beside its own sentinel; a service's answer does not.
func TestErrInvalidFamily(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	long := strings.Repeat("x", table.Storage.MaxValueSize)
	_, errKey := tb.Insert(ctx, employee{Department: "a/b", ID: "1"})
	_, errEmpty := tb.Insert(ctx, employee{Department: "", ID: "1"})
	_, errLarge := tb.Insert(ctx, employee{Department: "a", ID: "1", FirstName: long, LastName: long})
	errETag := tb.Delete(ctx, "a", "1", "")
	_, errBatch := tb.Submit(ctx, table.Atomic(tb.InsertOp(employee{Department: "a", ID: "1"}), tb.InsertOp(employee{Department: "b", ID: "1"})), nil)
	_, errFilter := table.Collect(tb.Query(ctx, &table.Query{Filter: table.Eq("bad name", 1)}))
	_, errEntity := table.New[struct{ C chan int }](tb.Client(), nil)
	_, errNilClient := table.New[employee](nil, nil)
	_, errNilTypes := table.NewTypes(nil, nil)
	_, _, errConn := table.ParseConnectionString("AccountName=a")
	cred, _ := aztables.NewSharedKeyCredential("a", "c2VjcmV0")
	_, errSAS := table.SASURL("https://a.table.core.windows.net", cred, "tbl", table.SASOptions{})
	cases := map[string][2]error{
		"key":               {errKey, table.ErrInvalidKey},
		"empty key":         {errEmpty, table.ErrInvalidKey},
		"too large":         {errLarge, table.ErrTooLarge},
		"no ETag":           {errETag, table.ErrNoETag},
		"batch":             {errBatch, table.ErrInvalidBatch},
		"filter":            {errFilter, table.ErrInvalidFilter},
		"entity type":       {errEntity, table.ErrInvalidEntity},
		"connection string": {errConn, table.ErrInvalid},
		"SAS":               {errSAS, table.ErrInvalid},
		"nil client":        {errNilClient, table.ErrInvalid},
		"nil Types client":  {errNilTypes, table.ErrInvalid},
	}
	for name, c := range cases {
		if !errors.Is(c[0], c[1]) || !errors.Is(c[0], table.ErrInvalid) {
			t.Errorf("%s: %v; want it to match %v and ErrInvalid", name, c[0], c[1])
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent for invalid input", n)
	}
	// The service's answers are not validation errors.
	if _, err := tb.Get(ctx, "a", "missing", nil); !errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrInvalid) {
		t.Fatalf("a 404 = %v", err)
	}
	ft.Inject(faults.Fault{Status: 413, ErrorCode: "RequestBodyTooLarge"})
	if _, err := tb.Insert(ctx, employee{Department: "a", ID: "2"}); !errors.Is(err, table.ErrTooLarge) || errors.Is(err, table.ErrInvalid) {
		t.Fatalf("a 413 from the service = %v: ErrTooLarge, not ErrInvalid", err)
	}
}
