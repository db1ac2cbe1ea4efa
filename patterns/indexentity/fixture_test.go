package indexentity_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
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

// fast is the ETag loops' policy in tests: full jitter, short waits, many
// retries (16 writers on one list conflict often).
var fast = retry.Policy{Default: time.Millisecond, Max: 10 * time.Millisecond, MaxRetries: 500, FullJitter: true}

// clientRetry is the clients' pipeline policy: real resends, short waits.
var clientRetry = retry.Policy{Default: time.Millisecond, Max: 2 * time.Millisecond, MaxRetries: 5}

// fixture is a table of employees seen through a fault-injecting client
// (the index) and through a clean one (the truth).
type fixture struct {
	env       *tabletest.Env
	ft        *faults.Transport
	employees *table.Table[Employee] // through ft
	clean     *table.Table[table.Dynamic]
	idx       *indexentity.Index[Employee]
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	o := &aztables.ClientOptions{}
	o.Transport = ft
	clientRetry.ApplyTo(&o.ClientOptions)
	name := env.Name()
	employees, err := table.New[Employee](env.CreateTable(name, o))
	if err != nil {
		t.Fatal(err)
	}
	clean, err := table.New[table.Dynamic](env.TableClient(name, nil))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := indexentity.New(employees, &indexentity.Options[Employee]{Name: "LastName", Value: lastName, Retry: &fast})
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	return &fixture{env: env, ft: ft, employees: employees, clean: reserved.Table(clean), idx: idx}
}

// trips checks the round trips since the last call.
func (f *fixture) trips(t testing.TB, what string, want int) {
	t.Helper()
	if n := f.ft.Count(); n != want {
		var got []string
		for _, r := range f.ft.Requests() {
			got = append(got, r.Method+" "+r.URL)
		}
		t.Fatalf("%s: %d round trips, want %d:\n%s", what, n, want, strings.Join(got, "\n"))
	}
	f.ft.Reset()
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
		last, _ := e.Properties["LastName"].(string)
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
