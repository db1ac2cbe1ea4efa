package table_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
)

func TestProfileFor(t *testing.T) {
	for url, want := range map[string]*table.Profile{
		"https://acct.table.core.windows.net/":           table.Storage,
		"http://127.0.0.1:10002/devstoreaccount1":        table.Storage,
		"https://acct.table.cosmos.azure.com:443/":       table.Cosmos,
		"https://acct.table.cosmosdb.azure.com/":         table.Cosmos,
		"https://acct.table.cosmos.azure.cn/t":           table.Cosmos,
		"https://localhost:8902/":                        table.Cosmos,
		"http://127.0.0.1:8902/devstoreaccount1":         table.Cosmos,
		"https://tables.contoso.example/":                table.Storage,
		"https://acct.table.core.windows.net/?sig=x&a=b": table.Storage,
	} {
		if got := table.ProfileFor(url); got != want {
			t.Errorf("ProfileFor(%q) = %s, want %s", url, got.Name, want.Name)
		}
	}
}

// cosmosTable is a Table[employee] on the simulated Cosmos DB Table API.
func cosmosTable(t *testing.T) (*table.Table[employee], *testrig.Rig) {
	r := testrig.NewCosmos(t)
	tb := testrig.NewTable[employee](t, r.Table())
	if tb.Profile() != table.Cosmos {
		t.Fatalf("a table on %s has the profile %s", "*.table.cosmos.azure.com", tb.Profile().Name)
	}
	return tb, r
}

// The core on the Cosmos DB Table API (simulated: results in no key order,
// its limits, 429s): writes, merges through the SDK's rewrite, queries that
// return every entity, ordered fan-outs in key order, and the refusals of
// what Cosmos DB cannot do, before the network.
func TestCosmosProfile(t *testing.T) {
	t.Parallel()
	tb, r := cosmosTable(t)
	ctx := context.Background()
	var ops []table.Op
	for i := range 30 {
		ops = append(ops, tb.InsertOp(employee{Department: fmt.Sprint("d", i%3), ID: fmt.Sprintf("%03d", i), FirstName: "F"}))
	}
	if _, err := tb.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	got, err := tb.Get(ctx, "d1", "001", nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Value.LastName = "Merged"
	if _, err := tb.Update(ctx, employee{Department: "d1", ID: "001", LastName: "Merged"}, got.ETag, table.Fields("LastName")); err != nil {
		t.Fatalf("a merge through the SDK's Cosmos rewrite: %v", err)
	}
	if m, err := tb.Get(ctx, "d1", "001", nil); err != nil || m.Value.FirstName != "F" || m.Value.LastName != "Merged" {
		t.Fatalf("after the merge: %+v, %v", m.Value, err)
	}
	// Every entity comes back, in pages of 7, in whatever order.
	var ids []string
	for e, err := range tb.Query(ctx, &table.Query{PageSize: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	if len(ids) != 30 || ids[0] != "000" || ids[29] != "029" {
		t.Fatalf("query = %v", ids)
	}
	// An ordered fan-out reads each query whole and sorts it: the first 4
	// by key of each partition, merged in key order.
	var fan []string
	qs := []*table.Query{{Filter: table.PartitionKey("d2"), Limit: 4, PageSize: 3}, {Filter: table.PartitionKey("d0"), Limit: 4, PageSize: 3}}
	for e, err := range tb.FanOut(ctx, qs, &table.FanOutOptions{Ordered: true}) {
		if err != nil {
			t.Fatal(err)
		}
		fan = append(fan, e.Department+"/"+e.ID)
	}
	if want := []string{"d0/000", "d0/003", "d0/006", "d0/009", "d2/002", "d2/005", "d2/008", "d2/011"}; !slices.Equal(fan, want) {
		t.Fatalf("ordered FanOut = %v, want %v", fan, want)
	}
	// Refused before the network: a RowKey over 255 bytes, a property
	// Cosmos DB reserves, a transaction over 2 MB, a Timestamp filter,
	// stored access policies.
	r.Faults.Reset()
	long := strings.Repeat("k", 256)
	_, errKey := tb.Insert(ctx, employee{Department: "d0", ID: long})
	dyn := testrig.NewTable[table.Dynamic](t, tb.Client())
	_, errName := dyn.Insert(ctx, table.Dynamic{PartitionKey: "d0", RowKey: "x", Properties: map[string]any{"ETag": "1"}})
	var big []table.Op
	for i := range 40 {
		big = append(big, dyn.InsertOp(table.Dynamic{PartitionKey: "d9", RowKey: fmt.Sprint(i), Properties: map[string]any{"B": make([]byte, 60<<10)}}))
	}
	_, errBatch := dyn.Submit(ctx, table.Atomic(big...), nil)
	_, errTS := table.Collect(tb.Query(ctx, &table.Query{Filter: table.Gt("Timestamp", time.Now().Add(-time.Hour))}))
	errACL := table.SetAccessPolicy(ctx, tb.Client())
	for name, c := range map[string][2]error{
		"long RowKey":   {errKey, table.ErrInvalidKey},
		"ETag property": {errName, table.ErrInvalidEntity},
		"2 MB batch":    {errBatch, table.ErrTooLarge},
		"Timestamp":     {errTS, table.ErrUnsupported},
		"access policy": {errACL, table.ErrUnsupported},
	} {
		if !errors.Is(c[0], c[1]) || !strings.Contains(c[0].Error(), "Cosmos") {
			t.Errorf("%s: %v, want %v naming Cosmos DB", name, c[0], c[1])
		}
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent for refused operations", n)
	}
	// The same batch fits Table Storage's 4 MiB: the profile, not a
	// constant, decided.
	if _, err := table.WithProfile(dyn, table.Storage).Submit(ctx, table.Atomic(big...), nil); err == nil {
		t.Fatal("the simulation accepted a 2.4 MB transaction")
	} else if errors.Is(err, table.ErrInvalid) {
		t.Fatalf("under Storage's profile the batch was refused before the network: %v", err)
	}
}

// Throttling answered 429 with x-ms-retry-after-ms is absorbed by the
// retry policy: every write applies once.
func TestCosmosThrottling(t *testing.T) {
	t.Parallel()
	tb, r := cosmosTable(t)
	ctx := context.Background()
	r.Faults.Reset()
	for i := range 3 {
		r.Faults.Inject(faults.Fault{Status: http.StatusTooManyRequests, ErrorCode: "TooManyRequests", Header: http.Header{"X-Ms-Retry-After-Ms": {"3"}}})
		if _, err := tb.Insert(ctx, employee{Department: "p", ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Faults.Count(); n < 6 {
		t.Fatalf("%d requests for 3 inserts each throttled once, want at least 6", n)
	}
	all, err := table.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != 3 {
		t.Fatalf("%d entities, %v", len(all), err)
	}
}

// TestWithProfileNilAndDirectPath: WithProfile(nil) is the endpoint's
// profile (it panicked on the first key check), and only a Table Storage
// endpoint takes the direct path: a Cosmos DB host of any cloud goes
// through the SDK, whose X-HTTP-Method rewrite Cosmos DB needs.
func TestWithProfileNilAndDirectPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		profile  *table.Profile
	}{
		{"https://acct.table.core.windows.net/t", table.Storage},
		{"https://acct.table.cosmos.azure.com/t", table.Cosmos},
		{"https://acct.table.cosmos.azure.us/t", table.Cosmos},
		{"https://acct.table.cosmosdb.azure.cn/t", table.Cosmos},
	} {
		c, err := table.NewClientFromSASURL(tc.endpoint+"?sv=2019-02-02&sig=x", nil)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := table.New[table.Dynamic](c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Profile() != tc.profile || table.WithProfile(tb, nil).Profile() != tc.profile {
			t.Errorf("%s: profile %s, WithProfile(nil) %s; want %s", tc.endpoint, tb.Profile().Name, table.WithProfile(tb, nil).Profile().Name, tc.profile.Name)
		}
		if got := table.Direct(tb); got != (tc.profile == table.Storage) {
			t.Errorf("%s: direct path %v", tc.endpoint, got)
		}
		if _, err := table.WithProfile(tb, nil).Get(context.Background(), "", "r", nil); !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: Get with an empty PartitionKey through WithProfile(nil): %v", tc.endpoint, err)
		}
	}
}
