package indexentity_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// Employee is the guide's running example.
type Employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Age        int32
}

func lastName(e *Employee) string { return e.LastName }

// fixture is a table of employees seen through the rig's fault-injecting
// client (the index) and through a clean one (the truth).
type fixture struct {
	*testrig.Rig
	employees *table.Table[Employee] // through r.Faults
	clean     *table.Table[table.Dynamic]
	idx       *indexentity.Index[Employee]
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureOn(t, testrig.New(t))
}

// newFixtureOn is newFixture on rig r (one of testrig.Services').
func newFixtureOn(t testing.TB, r *testrig.Rig) *fixture {
	t.Helper()
	c := r.Table()
	f := &fixture{Rig: r, employees: testrig.NewTable[Employee](t, c), clean: reserved.Table(testrig.NewTable[table.Dynamic](t, r.Clean(c)))}
	var err error
	if f.idx, err = indexentity.New(f.employees, "LastName", lastName, &indexentity.Options{Retry: &testrig.Contention}); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return f
}

// trips checks the round trips since the last call.
func (f *fixture) trips(t testing.TB, what string, want int) {
	t.Helper()
	if n := f.Faults.Count(); n != want {
		var got []string
		for _, r := range f.Faults.Requests() {
			got = append(got, r.Method+" "+r.URL)
		}
		t.Fatalf("%s: %d round trips, want %d:\n%s", what, n, want, strings.Join(got, "\n"))
	}
	f.Faults.Reset()
}

func isBatch(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "$batch")
}

// storedLists returns the lists stored in partition pk's index entities
// (value -> ids, in stored order), read through the clean client, and
// fails on an empty list or an id stored twice.
func (f *fixture) storedLists(t testing.TB, pk string) map[string][]string {
	t.Helper()
	lo, hi := keys.PrefixRange(indexentity.KeyPrefix, "LastName")
	rows, err := table.Collect(f.clean.Query(context.Background(), &table.Query{Filter: table.And(table.PartitionKey(pk), table.RowKeyRange(lo, hi)), IncludeReserved: true}))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, row := range rows {
		parts, err := keys.Split(row.RowKey)
		if err != nil || len(parts) != 3 {
			t.Fatalf("index entity RowKey %q", row.RowKey)
		}
		ids := decodeList(t, row.Properties)
		if len(ids) == 0 {
			t.Fatalf("an empty index entity was left behind: %q", row.RowKey)
		}
		out[parts[2]] = ids
	}
	return out
}

// decodeList reads an index entity's list properties as the package
// documents them.
func decodeList(t testing.TB, props map[string]any) []string {
	t.Helper()
	names := slices.Sorted(maps.Keys(props))
	var s strings.Builder
	for _, n := range names {
		if strings.HasPrefix(n, indexentity.ListProperty) {
			s.WriteString(props[n].(string))
		}
	}
	if s.Len() == 0 {
		return nil
	}
	ids := strings.Split(strings.TrimSuffix(s.String(), "/"), "/")
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %q stored twice", id)
		}
		seen[id] = true
	}
	if !slices.IsSorted(ids) {
		t.Fatalf("list not sorted: %v", ids)
	}
	return ids
}

// truth returns the lists partition pk's employees call for.
func (f *fixture) truth(t testing.TB, pk string) map[string][]string {
	t.Helper()
	all, err := table.Collect(f.clean.Query(context.Background(), &table.Query{Filter: table.PartitionKey(pk)}))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range all {
		last, ok := e.Properties["LastName"].(string)
		if !ok {
			continue // not an employee: another pattern's row (compose_test's notes)
		}
		out[last] = append(out[last], e.RowKey)
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}

// check fails unless partition pk's index is exactly what its employees
// call for.
func (f *fixture) check(t testing.TB, pk string) {
	t.Helper()
	got, want := f.storedLists(t, pk), f.truth(t, pk)
	if !maps.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Fatalf("partition %s: index %v, want %v", pk, got, want)
	}
}

func emp(dept string, id int, last string) Employee {
	return Employee{Department: dept, ID: keys.Pad(uint64(id), 6), FirstName: "F" + keys.Pad(uint64(id), 6), LastName: last, Age: int32(20 + id%40)}
}

// find collects the values of x.Find's entities, each checked to carry
// the ETag read.
func find(ctx context.Context, x *indexentity.Index[Employee], pk, value string) ([]Employee, error) {
	var out []Employee
	for e, err := range x.Find(ctx, pk, value) {
		if err != nil {
			return nil, err
		}
		if e.ETag == "" || e.ETag != e.Value.ETag || e.PartitionKey != e.Value.Department || e.RowKey != e.Value.ID {
			return nil, fmt.Errorf("Find yielded %+v: keys or ETag wrong", e)
		}
		out = append(out, e.Value)
	}
	return out, nil
}
