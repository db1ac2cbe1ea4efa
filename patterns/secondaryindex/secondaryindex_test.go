package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

func TestIntraPartitionRoundTrips(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	s := r.store

	if _, err := s.Insert(ctx, jo()); err != nil || r.Faults.Count() != 1 {
		t.Fatalf("Insert: %v in %d round trips, want 1", err, r.Faults.Count())
	}
	ana := Employee{Department: "Sales", ID: "000123", FirstName: "Ana", LastName: "Jones", Email: "jonesa@contoso.com", Age: 34}
	if _, err := s.Insert(ctx, ana); err != nil {
		t.Fatal(err)
	}
	// The rows of the partition: the guide's self-describing keys (each
	// part escaped by keys.Join, which keeps their order).
	rows, err := table.Collect(r.tbl.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil {
		t.Fatal(err)
	}
	var rks []string
	for _, row := range rows {
		rks = append(rks, row.RowKey)
	}
	if testrig.Cosmos() {
		slices.Sort(rks) // a query's rows come in no order on Cosmos DB
	}
	want := "[email!jonesa@contoso.2Ecom email!jonesj@contoso.2Ecom empid!000123 empid!000223 name!Jones!Ana!000123 name!Jones!Jo!000223]"
	if got := strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(strings.Join(rks, " "), "\"", ""), "[]")), " "); "["+got+"]" != want {
		t.Fatalf("rows %v, want %s", rks, want)
	}

	r.Faults.Reset()
	e, err := s.Lookup(ctx, "Sales", "email", "jonesj@contoso.com", nil)
	if err != nil || e.Value != jo() || !e.FromCopy || r.Faults.Count() != 1 {
		t.Fatalf("Lookup by email: %+v, %v in %d round trips, want Jo from the copy in 1", e, err, r.Faults.Count())
	}
	r.Faults.Reset()
	var found []string
	for e, err := range s.Find(ctx, "Sales", "name", []any{"Jones"}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, e.Value.FirstName+"/"+string(e.ETag[:3]))
	}
	if len(found) != 2 || !strings.HasPrefix(found[0], "Ana/") || r.Faults.Count() != 3 {
		t.Fatalf("Find Jones: %v in %d round trips, want Ana, Jo (fetched: with ETags) in 1 + 2", found, r.Faults.Count())
	}

	// A projection of the copies: only the fields asked for are read.
	for e, err := range s.Find(ctx, "Sales", "email", "jonesa@contoso.com", &secondaryindex.LookupOptions{Select: []string{"FirstName"}}) {
		if err != nil || e.Value.FirstName != "Ana" || e.Value.Email != "" || e.RowKey != "000123" {
			t.Fatalf("a projected Find: %+v, %v", e, err)
		}
	}
	// Update: 2 round trips (the primary read, the transaction); the email
	// copy moves.
	cur, err := s.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatal(err)
	}
	next := cur.Value
	next.Email, next.Age = "jo.jones@contoso.com", 30
	r.Faults.Reset()
	if _, err := s.Update(ctx, next, cur.ETag); err != nil || r.Faults.Count() != 2 {
		t.Fatalf("Update: %v in %d round trips, want 2", err, r.Faults.Count())
	}
	// A stale ETag: refused after the read, nothing written.
	r.Faults.Reset()
	if _, err := s.Update(ctx, next, cur.ETag); !errors.Is(err, table.ErrPreconditionFailed) || r.Faults.Count() != 1 {
		t.Fatalf("Update with a stale ETag: %v in %d round trips, want ErrPreconditionFailed after the read", err, r.Faults.Count())
	}
	if _, err := s.Update(ctx, next, ""); !errors.Is(err, table.ErrNoETag) || !errors.Is(err, secondaryindex.ErrInvalid) {
		t.Fatalf("Update without an ETag: %v", err)
	}
	if _, err := s.Lookup(ctx, "Sales", "email", "jonesj@contoso.com", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the old email still finds Jo: %v", err)
	}
	// azcore.ETagAny: whatever version is stored.
	next.Age = 31
	if _, err := s.Update(ctx, next, azcore.ETagAny); err != nil {
		t.Fatalf("Update with ETagAny: %v", err)
	}
	if got, err := s.Get(ctx, "Sales", "000223"); err != nil || got.Value != next || got.RowKey != "000223" || got.ETag == "" {
		t.Fatalf("after Update: %+v, %v", got, err)
	}
	if _, err := s.Update(ctx, Employee{Department: "Sales", ID: "nobody"}, azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Update of an entity that does not exist: %v", err)
	}
	// Modify: 2 round trips.
	r.Faults.Reset()
	got, err := s.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.LastName = "Smith"; return nil })
	if err != nil || got.Value.LastName != "Smith" || r.Faults.Count() != 2 {
		t.Fatalf("Modify: %+v, %v in %d round trips, want 2", got, err, r.Faults.Count())
	}
	// fn's own error stops Modify at once, as it is, with nothing written.
	stop := errors.New("no")
	r.Faults.Reset()
	if _, err := s.Modify(ctx, "Sales", "000223", func(*Employee) error { return stop }); err != stop || r.Faults.Count() != 1 {
		t.Fatalf("Modify with fn failing: %v in %d round trips, want fn's error after the read", err, r.Faults.Count())
	}
	// A unique value another entity has: nothing written.
	r.Faults.Reset()
	_, err = s.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.Email = "jo.jones@contoso.com"; return nil })
	if !errors.Is(err, secondaryindex.ErrDuplicate) || !errors.Is(err, table.ErrAlreadyExists) || !strings.Contains(err.Error(), `"email"`) {
		t.Fatalf("duplicate email: %v", err)
	}
	if a, _ := s.Get(ctx, "Sales", "000123"); a.Value.Email != "jonesa@contoso.com" {
		t.Fatalf("the failed write changed Ana: %+v", a.Value)
	}
	if _, err := s.Insert(ctx, Employee{Department: "Sales", ID: "000999", Email: "jonesa@contoso.com"}); !errors.Is(err, secondaryindex.ErrDuplicate) {
		t.Fatalf("insert with a duplicate email: %v", err)
	}
	r.clean(t, "Sales")
	// Delete: 2 round trips; the copies go with it.
	r.Faults.Reset()
	if err := s.Delete(ctx, "Sales", "000223", azcore.ETagAny); err != nil || r.Faults.Count() != 2 {
		t.Fatalf("Delete: %v in %d round trips", err, r.Faults.Count())
	}
	if err := s.Delete(ctx, "Sales", "000223", azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete again: %v", err)
	}
	// Delete with the ETag read: refused when stale, after the read.
	ana2, err := s.Get(ctx, "Sales", "000123")
	if err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	if err := s.Delete(ctx, "Sales", "000123", cur.ETag); !errors.Is(err, table.ErrPreconditionFailed) || r.Faults.Count() != 1 {
		t.Fatalf("Delete with a stale ETag: %v in %d round trips, want ErrPreconditionFailed after the read", err, r.Faults.Count())
	}
	if err := s.Delete(ctx, "Sales", "000123", ""); !errors.Is(err, table.ErrNoETag) || !errors.Is(err, secondaryindex.ErrInvalid) {
		t.Fatalf("Delete without an ETag: %v", err)
	}
	r.Faults.Reset()
	if err := s.Delete(ctx, "Sales", "000123", ana2.ETag); err != nil || r.Faults.Count() != 2 {
		t.Fatalf("Delete with its ETag: %v in %d round trips, want 2", err, r.Faults.Count())
	}
	r.clean(t, "Sales")
	d, _ := s.Check(ctx, "Sales")
	if d.Entities != 0 {
		t.Fatalf("Check saw %d entities, want 0", d.Entities)
	}
}

// fat is an entity of about 480 KB of JSON (960 KB as the service counts
// strings): a few whole copies of it do not fit one transaction.
type fat struct {
	PK                                          string `table:",pk"`
	ID                                          string `table:",rk"`
	A, B, C, D, E, F, G, H, I, J, K, L, M, N, O string
}

// Bad input and writes that do not fit one transaction are refused with
// nothing sent, naming the index.
func TestLimitsSendNothing(t *testing.T) {
	testrig.StorageOnly(t, "Table Storage's 4 MiB transaction; TestCosmosSecondaryIndex and table's TestCosmosCore cover Cosmos DB's 2 MB")
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	long := jo()
	long.Email = strings.Repeat("x", 1100)
	if _, err := r.store.Insert(ctx, long); !errors.Is(err, secondaryindex.ErrInvalid) || !strings.Contains(err.Error(), `"email"`) || r.Faults.Count() != 0 {
		t.Errorf("an index value too long for a RowKey: %v with %d requests", err, r.Faults.Count())
	}

	var ixs []secondaryindex.Index[fat]
	for i := range 8 {
		ixs = append(ixs, secondaryindex.Index[fat]{Name: fmt.Sprint("copy", i), On: []string{"A"}, Key: func(f *fat) []string { return []string{f.A[:1]} }})
	}
	fs, err := secondaryindex.New(r.tbl, &secondaryindex.Options[fat]{Primary: "fat", Indexes: ixs})
	if err != nil {
		t.Fatal(err)
	}
	v := fat{PK: "p", ID: "1"}
	for _, f := range []*string{&v.A, &v.B, &v.C, &v.D, &v.E, &v.F, &v.G, &v.H, &v.I, &v.J, &v.K, &v.L, &v.M, &v.N, &v.O} {
		*f = strings.Repeat("a", 32000)
	}
	r.Faults.Reset()
	if _, err := fs.Insert(ctx, v); !errors.Is(err, secondaryindex.ErrInvalid) || !strings.Contains(err.Error(), `index "copy7"`) || r.Faults.Count() != 0 {
		t.Errorf("8 whole copies of a 960 KB entity: %v with %d requests, want ErrInvalid naming copy7 and none sent", err, r.Faults.Count())
	}

	for name, o := range map[string]*secondaryindex.Options[Employee]{
		"a Primary name with '_'":                {Primary: "emp_id"},
		"two indexes of one name":                {Primary: "empid", Indexes: append(intraIndexes(), intraIndexes()[0])},
		"an index named as the primary":          {Primary: "email", Indexes: intraIndexes()},
		"OtherPartition without a queue":         {Primary: "empid", Indexes: []secondaryindex.Index[Employee]{{Name: "x", Where: secondaryindex.OtherPartition, On: []string{"Email"}, Key: func(*Employee) []string { return nil }}}},
		"a Listed index copying a reserved name": {Primary: "empid", Indexes: []secondaryindex.Index[Employee]{{Name: "x", Holds: secondaryindex.Listed, Fields: []string{secondaryindex.RefProperty}, On: []string{"Email"}, Key: func(*Employee) []string { return nil }}}},
	} {
		if _, err := secondaryindex.New(r.tbl, o); !errors.Is(err, secondaryindex.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Lost responses on each batch: the right answer after verification, never
// a false failure, never a duplicate copy.
func TestLostResponses(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	s := r.store
	lose := func() {
		r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "/$batch") }, LoseResponse: true})
	}
	lose()
	if res, err := s.Insert(ctx, jo()); err != nil || !res.Verified {
		t.Fatalf("Insert with its response lost: %+v, %v; want applied, verified", res, err)
	}
	lose()
	got, err := s.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Email = "new@contoso.com"; e.Age++; return nil })
	if err != nil || got.Value.Age != 30 {
		t.Fatalf("Modify with its response lost: %+v, %v", got, err)
	}
	if cur, _ := s.Get(ctx, "Sales", "000223"); cur.Value.Age != 30 {
		t.Fatalf("the update applied twice or not at all: age %d", cur.Value.Age)
	}
	r.clean(t, "Sales")
	lose()
	if err := s.Delete(ctx, "Sales", "000223", azcore.ETagAny); err != nil && !errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("Delete with its response lost: %v", err)
	}
	if _, err := s.Get(ctx, "Sales", "000223"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
	r.clean(t, "Sales")
}
