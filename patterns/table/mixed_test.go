package table_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Version 1 of three types, as an older program stored them.
type deptV1 struct {
	PartitionKey, RowKey string
	Name, Head           string
}

type empV1 struct {
	PartitionKey, RowKey string
	FullName             string
	Age                  int32
}

type projV1 struct {
	PartitionKey, RowKey string
	Title                string
}

// Version 2, the current one.
type unit struct {
	table.Meta
	PartitionKey, RowKey string
	Name, Manager        string
}

type staffer struct {
	table.Meta
	PartitionKey, RowKey string
	First, Last          string
	Age                  int32
}

type project struct {
	table.Meta
	PartitionKey, RowKey string
	Title                string
	Tags                 []string `table:",json"`
}

var (
	deptUp = table.UpgradeFrom(1, func(d deptV1) (unit, error) {
		return unit{Name: d.Name, Manager: d.Head}, nil
	})
	empUp = table.UpgradeFrom(1, func(e empV1) (staffer, error) {
		first, last, _ := strings.Cut(e.FullName, " ")
		return staffer{First: first, Last: last, Age: e.Age}, nil
	})
	projUp = table.UpgradeFrom(1, func(p projV1) (project, error) {
		return project{Title: p.Title, Tags: []string{"legacy"}}, nil
	})
)

// mixedRig is one table, its clients for an old program (version 1 of
// every type) and a new one (version 2 with upgrades), and the new
// program's transport.
type mixedRig struct {
	client   *aztables.Client // plain, for other writers
	ft       *faults.Transport
	types    *table.Types
	depts    *table.Table[unit]
	emps     *table.Table[staffer]
	projs    *table.Table[project]
	oldDepts *table.Table[deptV1]
	oldEmps  *table.Table[empV1]
	oldProjs *table.Table[projV1]
	raw      *table.Table[table.Dynamic]
}

func newMixedRig(t *testing.T, opts *table.TypesOptions, back bool) *mixedRig {
	t.Helper()
	env := tabletest.New(t)
	r := &mixedRig{ft: &faults.Transport{}}
	co := table.ClientOptions()
	co.Transport = r.ft
	name := env.Name()
	c := env.CreateTable(name, co)
	r.client = env.TableClient(name, table.ClientOptions())
	var err error
	must := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatal(e)
		}
	}
	old, err := table.NewTypes(r.client, opts)
	must(err)
	r.oldDepts, err = table.Register[deptV1](old, "Department", nil)
	must(err)
	r.oldEmps, err = table.Register[empV1](old, "Employee", nil)
	must(err)
	r.oldProjs, err = table.Register[projV1](old, "Project", nil)
	must(err)
	r.types, err = table.NewTypes(c, opts)
	must(err)
	r.depts, err = table.Register[unit](r.types, "Department", &table.RegisterOptions{Version: 2, Upgrades: []table.Upgrade{deptUp}, WriteBack: back})
	must(err)
	r.emps, err = table.Register[staffer](r.types, "Employee", &table.RegisterOptions{Version: 2, Upgrades: []table.Upgrade{empUp}, WriteBack: back})
	must(err)
	r.projs, err = table.Register[project](r.types, "Project", &table.RegisterOptions{Version: 2, Upgrades: []table.Upgrade{projUp}, WriteBack: back})
	must(err)
	r.raw, err = table.New[table.Dynamic](r.client, nil)
	must(err)
	return r
}

// storedType reads the type property as stored.
func (r *mixedRig) storedType(t *testing.T, pk, rk string) any {
	t.Helper()
	d, err := value(r.raw.Get(context.Background(), pk, rk, nil))
	if err != nil {
		t.Fatal(err)
	}
	return d.Properties["EntityType"]
}

func TestTypesQueryReadsEveryTypeAndVersion(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	check := func(_ table.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two versions of three types in one partition, interleaved by key.
	check(r.oldDepts.Insert(ctx, deptV1{PartitionKey: "Sales", RowKey: "a-dept", Name: "Sales", Head: "Ann"}))
	check(r.depts.Insert(ctx, unit{PartitionKey: "Sales", RowKey: "b-dept", Name: "Field", Manager: "Bo"}))
	check(r.oldEmps.Insert(ctx, empV1{PartitionKey: "Sales", RowKey: "c-emp", FullName: "Cy Young", Age: 40}))
	check(r.emps.Insert(ctx, staffer{PartitionKey: "Sales", RowKey: "d-emp", First: "Di", Last: "Ross", Age: 30}))
	check(r.oldProjs.Insert(ctx, projV1{PartitionKey: "Sales", RowKey: "e-proj", Title: "Old"}))
	check(r.projs.Insert(ctx, project{PartitionKey: "Sales", RowKey: "f-proj", Title: "New", Tags: []string{"x"}}))
	if got := r.storedType(t, "Sales", "b-dept"); got != "Department.2" {
		t.Fatalf("stored type property %v, want Department.2", got)
	}

	r.ft.Reset()
	var got []string
	for v, err := range r.types.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := v.(type) {
		case unit:
			got = append(got, fmt.Sprintf("dept %s %s/%s %t", e.RowKey, e.Name, e.Manager, e.ETag != ""))
		case staffer:
			got = append(got, fmt.Sprintf("emp %s %s/%s/%d", e.RowKey, e.First, e.Last, e.Age))
		case project:
			got = append(got, fmt.Sprintf("proj %s %s %v", e.RowKey, e.Title, e.Tags))
		default:
			t.Fatalf("unexpected %T", v)
		}
	}
	want := []string{
		"dept a-dept Sales/Ann true", "dept b-dept Field/Bo true",
		"emp c-emp Cy/Young/40", "emp d-emp Di/Ross/30",
		"proj e-proj Old [legacy]", "proj f-proj New [x]",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if n := r.ft.Count(); n != 1 {
		t.Fatalf("%d round trips, want 1", n)
	}

	// A typed query returns its type only, both versions, selected on the
	// server by the type property.
	r.ft.Reset()
	emps, err := table.Collect(r.emps.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil {
		t.Fatal(err)
	}
	if len(emps) != 2 || emps[0].First != "Cy" || emps[1].First != "Di" {
		t.Fatalf("employees %+v", emps)
	}
	if u := r.ft.Requests()[0].URL; !strings.Contains(u, "EntityType") {
		t.Fatalf("typed query does not select by type on the server: %s", u)
	}

	// Get through the wrong type's Table is an error naming the type.
	if _, err := r.depts.Get(ctx, "Sales", "c-emp", nil); !errors.Is(err, table.ErrEntityType) || !strings.Contains(err.Error(), "Employee.1") {
		t.Fatalf("Get of an staffer as a unit: %v", err)
	}
	v, err := value(r.types.Get(ctx, "Sales", "a-dept"))
	if d, ok := v.(unit); err != nil || !ok || d.Manager != "Ann" {
		t.Fatalf("Types.Get: %#v, %v", v, err)
	}
}

func TestTypesUnknownAndNewerVersions(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	if _, err := r.emps.Insert(ctx, staffer{PartitionKey: "p", RowKey: "1", First: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.raw.Insert(ctx, table.Dynamic{PartitionKey: "p", RowKey: "2", Properties: map[string]any{"EntityType": "Invoice.1", "Total": 3.5}}); err != nil {
		t.Fatal(err)
	}
	_, err := table.Collect(r.types.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}))
	if !errors.Is(err, table.ErrEntityType) || !strings.Contains(err.Error(), `"Invoice.1" is not registered`) {
		t.Fatalf("unknown type: %v", err)
	}
	// As a Dynamic when asked.
	lenient, err := table.NewTypes(r.client, &table.TypesOptions{UnknownAsDynamic: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Register[staffer](lenient, "Employee", &table.RegisterOptions{Version: 2, Upgrades: []table.Upgrade{empUp}}); err != nil {
		t.Fatal(err)
	}
	all, err := table.Collect(lenient.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}))
	if err != nil || len(all) != 2 {
		t.Fatalf("lenient query: %v, %v", all, err)
	}
	if d, ok := all[1].(table.Dynamic); !ok || d.Properties["Total"] != 3.5 || d.Properties["EntityType"] != "Invoice.1" {
		t.Fatalf("unknown row as %#v", all[1])
	}

	// A row of a newer version (a newer program wrote it) is an error for
	// the typed Table and the mixed query alike, never a silent skip.
	if _, err := r.raw.Insert(ctx, table.Dynamic{PartitionKey: "q", RowKey: "1", Properties: map[string]any{"EntityType": "Employee.3", "First": "Z"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Collect(r.emps.Query(ctx, &table.Query{Filter: table.PartitionKey("q")})); !errors.Is(err, table.ErrEntityType) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("typed query of a newer version: %v", err)
	}
	if _, err := r.emps.Get(ctx, "q", "1", nil); !errors.Is(err, table.ErrEntityType) {
		t.Fatalf("Get of a newer version: %v", err)
	}
	// So is a malformed version of the type.
	if _, err := r.raw.Insert(ctx, table.Dynamic{PartitionKey: "m", RowKey: "1", Properties: map[string]any{"EntityType": "Employee.x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Collect(r.emps.Query(ctx, &table.Query{Filter: table.PartitionKey("m")})); !errors.Is(err, table.ErrEntityType) || !strings.Contains(err.Error(), "no valid version") {
		t.Fatalf("typed query of a malformed version: %v", err)
	}
}

func TestTypesKeyPrefix(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	co := table.ClientOptions()
	co.Transport = ft
	c := env.Table(co)
	ctx := context.Background()
	ts, err := table.NewTypes(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	emps, err := table.Register[staffer](ts, "Employee", &table.RegisterOptions{Prefix: "EMP_"})
	if err != nil {
		t.Fatal(err)
	}
	depts, err := table.Register[unit](ts, "Department", &table.RegisterOptions{Prefix: "DEP_"})
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	if _, err := emps.Insert(ctx, staffer{PartitionKey: "Sales", RowKey: "000123", First: "A"}); !errors.Is(err, table.ErrInvalidKey) || !strings.Contains(err.Error(), "EMP_") {
		t.Fatalf("a key without the prefix: %v", err)
	}
	if ft.Count() != 0 {
		t.Fatalf("%d requests for a rejected write", ft.Count())
	}
	if _, err := emps.Insert(ctx, staffer{PartitionKey: "Sales", RowKey: "EMP_000123", First: "A"}); err != nil {
		t.Fatal(err)
	}
	// Rows another program wrote without the type property are recognised
	// by their prefix.
	raw, _ := table.New[table.Dynamic](c, nil)
	if _, err := raw.Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "DEP_SALES", Properties: map[string]any{"Name": "Sales", "Manager": "Ann"}}); err != nil {
		t.Fatal(err)
	}
	all, err := table.Collect(ts.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil || len(all) != 2 {
		t.Fatalf("%v, %v", all, err)
	}
	if d, ok := all[0].(unit); !ok || d.Manager != "Ann" {
		t.Fatalf("prefixed row as %#v", all[0])
	}
	ft.Reset()
	ds, err := table.Collect(depts.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil || len(ds) != 1 {
		t.Fatalf("%v, %v", ds, err)
	}
	if u := ft.Requests()[0].URL; !strings.Contains(u, "RowKey+ge+%27DEP_%27") {
		t.Fatalf("typed query is not a key range: %s", u)
	}
	// Migrate records the type property on the row known by its prefix.
	p, err := ts.Migrate(ctx, nil)
	if err != nil || p.Upgraded != 1 {
		t.Fatalf("%+v, %v", p, err)
	}
	if d, err := value(raw.Get(ctx, "Sales", "DEP_SALES", nil)); err != nil || d.Properties["EntityType"] != "Department.1" || d.Properties["Manager"] != "Ann" {
		t.Fatalf("after Migrate: %+v, %v", d, err)
	}
}

func TestRegisterRejects(t *testing.T) {
	t.Parallel()
	c := newEnvClient(t)
	ts, err := table.NewTypes(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	type withTypeField struct {
		PartitionKey, RowKey string
		EntityType           string
	}
	type empV0 struct {
		PartitionKey, RowKey string
	}
	cases := map[string]func() error{
		"bad name":      func() error { _, err := table.Register[staffer](ts, "Emp.loyee", nil); return err },
		"type property": func() error { _, err := table.Register[withTypeField](ts, "W", nil); return err },
		"missing upgrade": func() error {
			_, err := table.Register[staffer](ts, "E1", &table.RegisterOptions{Version: 3, Upgrades: []table.Upgrade{empUp}})
			return err
		},
		"wrong chain": func() error {
			bad := table.UpgradeFrom(1, func(e empV0) (empV1, error) { return empV1{}, nil })
			_, err := table.Register[staffer](ts, "E2", &table.RegisterOptions{Version: 3, Upgrades: []table.Upgrade{bad, table.UpgradeFrom(2, func(d deptV1) (staffer, error) { return staffer{}, nil })}})
			return err
		},
		"nil upgrade": func() error {
			_, err := table.Register[staffer](ts, "E3", &table.RegisterOptions{Version: 2, Upgrades: []table.Upgrade{table.UpgradeFrom[empV1, staffer](1, nil)}})
			return err
		},
		"bad prefix": func() error {
			_, err := table.Register[staffer](ts, "E4", &table.RegisterOptions{Prefix: "~x"})
			return err
		},
	}
	cases["untyped with a prefix"] = func() error {
		ts, err := table.NewTypes(c, &table.TypesOptions{Untyped: "Legacy"})
		if err != nil {
			return err
		}
		_, err = table.Register[staffer](ts, "Legacy", &table.RegisterOptions{Prefix: "L_"})
		return err
	}
	cases["bad Untyped"] = func() error { _, err := table.NewTypes(c, &table.TypesOptions{Untyped: "no.dots"}); return err }
	for name, f := range cases {
		if err := f(); !errors.Is(err, table.ErrInvalidEntity) && !(name == "bad Untyped" && err != nil) {
			t.Errorf("%s: %v, want ErrInvalidEntity", name, err)
		}
	}
	if _, err := table.Register[staffer](ts, "Employee", &table.RegisterOptions{Prefix: "EMP"}); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Register[staffer](ts, "Employee", nil); !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("a second registration: %v", err)
	}
	if _, err := table.Register[unit](ts, "Staff", &table.RegisterOptions{Prefix: "EMP_"}); !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("an overlapping prefix: %v", err)
	}
	// A type with an extra map must not carry the type property in it.
	type bag struct {
		PartitionKey, RowKey string
		More                 map[string]any `table:",extra"`
	}
	bags, err := table.Register[bag](ts, "Bag", nil)
	if err != nil {
		t.Fatal(err)
	}
	op := bags.InsertOp(bag{PartitionKey: "p", RowKey: "r", More: map[string]any{"EntityType": "Other.1"}})
	if !errors.Is(op.Err(), table.ErrInvalidEntity) {
		t.Errorf("extra map with the type property: %v", op.Err())
	}
}

func TestTypesWriteBackNeverOverwritesAConcurrentWriter(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, true)
	ctx := context.Background()
	for _, rk := range []string{"1", "2"} {
		if _, err := r.oldEmps.Insert(ctx, empV1{PartitionKey: "p", RowKey: rk, FullName: "Ann Lee", Age: 30}); err != nil {
			t.Fatal(err)
		}
	}
	// Uncontended: 2 round trips, and the row is stored as version 2.
	r.ft.Reset()
	e, err := value(r.emps.Get(ctx, "p", "1", nil))
	if err != nil || e.First != "Ann" || e.Last != "Lee" {
		t.Fatalf("%+v, %v", e, err)
	}
	if n := r.ft.Count(); n != 2 {
		t.Fatalf("%d round trips, want 2 (read, write-back)", n)
	}
	if got := r.storedType(t, "p", "1"); got != "Employee.2" {
		t.Fatalf("after write-back: %v", got)
	}
	if n := r.ft.Count(); n != 2 {
		t.Fatal("reading the stored row went through the counted transport")
	}
	// The value returned carries the version written: an Update with its
	// ETag succeeds.
	e.Age++
	if _, err := r.emps.Update(ctx, e, e.ETag, table.Replace); err != nil {
		t.Fatalf("Update with the ETag Get returned: %v", err)
	}
	// Reading it again costs 1 round trip: nothing left to upgrade.
	if _, err := r.emps.Get(ctx, "p", "1", nil); err != nil || r.ft.Count() != 4 {
		t.Fatalf("second Get: %v, %d round trips in all", err, r.ft.Count())
	}
	// Types.Get writes back too.
	if _, err := r.oldEmps.Insert(ctx, empV1{PartitionKey: "p", RowKey: "3", FullName: "Bo Diddley"}); err != nil {
		t.Fatal(err)
	}
	v, err := value(r.types.Get(ctx, "p", "3"))
	if s, ok := v.(staffer); err != nil || !ok || s.Last != "Diddley" {
		t.Fatalf("Types.Get: %#v, %v", v, err)
	}
	if got := r.storedType(t, "p", "3"); got != "Employee.2" {
		t.Fatalf("after Types.Get's write-back: %v", got)
	}

	// Another writer (the old program) changes row 2 between the read and
	// the write-back: its change stands.
	var raced atomic.Bool
	r.ft.Inject(faults.Fault{Match: func(req *http.Request) bool {
		if req.Method != http.MethodGet && raced.CompareAndSwap(false, true) {
			if _, err := r.oldEmps.Upsert(context.Background(), empV1{PartitionKey: "p", RowKey: "2", FullName: "Concurrent Writer", Age: 31}, table.Replace); err != nil {
				t.Error(err)
			}
		}
		return false
	}})
	e, err = value(r.emps.Get(ctx, "p", "2", nil))
	if err != nil || e.First != "Ann" {
		t.Fatalf("Get returns the row as read: %+v, %v", e, err)
	}
	if !raced.Load() {
		t.Fatal("the write-back was not attempted")
	}
	old, err := value(r.oldEmps.Get(ctx, "p", "2", nil))
	if err != nil || old.FullName != "Concurrent Writer" || old.Age != 31 {
		t.Fatalf("the concurrent writer's version was overwritten: %+v, %v", old, err)
	}
}

func TestTypesModifyUpgradesWithReplace(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	if _, err := r.oldEmps.Insert(ctx, empV1{PartitionKey: "p", RowKey: "1", FullName: "Ann Lee", Age: 30}); err != nil {
		t.Fatal(err)
	}
	e, err := value(r.emps.Modify(ctx, "p", "1", func(e *staffer) error { e.Age++; return nil }, nil))
	if err != nil || e.Age != 31 || e.First != "Ann" {
		t.Fatalf("%+v, %v", e, err)
	}
	d, err := value(r.raw.Get(ctx, "p", "1", nil))
	if err != nil {
		t.Fatal(err)
	}
	if d.Properties["EntityType"] != "Employee.2" || d.Properties["FullName"] != nil || d.Properties["First"] != "Ann" {
		t.Fatalf("stored after Modify: %v", d.Properties)
	}
	// The value Modify returns is current now: a Fields update of it is a
	// merge (PATCH), not another whole write.
	r.ft.Reset()
	e.Age++
	if _, err := r.emps.Update(ctx, e, e.ETag, table.Fields("Age")); err != nil {
		t.Fatal(err)
	}
	if reqs := r.ft.Requests(); len(reqs) != 1 || !reqs[0].Merge {
		t.Fatalf("Fields update after Modify: %+v", reqs)
	}

	// A Fields merge of a value read from version 1 writes it whole: the
	// row becomes a true version 2 row, not a relabelled version 1 one.
	if _, err := r.oldEmps.Insert(ctx, empV1{PartitionKey: "p", RowKey: "2", FullName: "Bo Diddley", Age: 50}); err != nil {
		t.Fatal(err)
	}
	e, err = value(r.emps.Get(ctx, "p", "2", nil))
	if err != nil {
		t.Fatal(err)
	}
	e.Age = 51
	if _, err := r.emps.Update(ctx, e, e.ETag, table.Fields("Age")); err != nil {
		t.Fatal(err)
	}
	if d, err = value(r.raw.Get(ctx, "p", "2", nil)); err != nil {
		t.Fatal(err)
	}
	if d.Properties["EntityType"] != "Employee.2" || d.Properties["FullName"] != nil || d.Properties["Last"] != "Diddley" || d.Properties["Age"] != int32(51) {
		t.Fatalf("stored after a Fields merge of an upgraded value: %v", d.Properties)
	}
}

func TestMigrateResumesAndRespectsConcurrentWriters(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	var ops []table.Op
	const perPartition = 90
	for p := range 3 {
		for i := range perPartition {
			pk, rk := fmt.Sprintf("p%d", p), fmt.Sprintf("%03d", i)
			if i%3 == 0 {
				ops = append(ops, r.emps.InsertOp(staffer{PartitionKey: pk, RowKey: rk, First: "New", Last: "One"}))
			} else {
				ops = append(ops, r.oldEmps.InsertOp(empV1{PartitionKey: pk, RowKey: rk, FullName: "Old One", Age: int32(i)}))
			}
		}
	}
	if _, err := r.emps.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	const oldRows = 3 * perPartition * 2 / 3

	// The first run is cancelled after its first page.
	cctx, cancel := context.WithCancel(ctx)
	var reports int
	prog, err := r.types.Migrate(cctx, &table.MigrateOptions{
		Query:    &table.Query{PageSize: 100},
		Progress: func(p table.MigrateProgress) { reports++; cancel() },
	})
	if !errors.Is(err, context.Canceled) || reports != 1 || prog.Next == "" || prog.Read != 100 {
		t.Fatalf("cancelled run: %+v, %v after %d reports", prog, err, reports)
	}
	first := prog.Upgraded

	// Resumed, with an old-program writer changing a row of the next page
	// between its read and its upgrade's transaction.
	var raced atomic.Bool
	r.ft.Inject(faults.Fault{Match: func(req *http.Request) bool {
		if strings.Contains(req.URL.Path, "$batch") && raced.CompareAndSwap(false, true) {
			if _, err := r.oldEmps.Upsert(context.Background(), empV1{PartitionKey: "p1", RowKey: "011", FullName: "Raced Writer", Age: 99}, table.Replace); err != nil {
				t.Error(err)
			}
		}
		return false
	}})
	prog, err = r.types.Migrate(ctx, &table.MigrateOptions{Query: &table.Query{PageSize: 100, Cursor: prog.Next}})
	if err != nil || prog.Next != "" || prog.Read != 3*perPartition-100 {
		t.Fatalf("resumed run: %+v, %v", prog, err)
	}
	if !raced.Load() {
		t.Fatal("no transaction was raced")
	}
	if got := first + prog.Upgraded; got != oldRows {
		t.Fatalf("upgraded %d rows in all, want %d", got, oldRows)
	}
	for d, err := range r.raw.Query(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Properties["EntityType"] != "Employee.2" || d.Properties["FullName"] != nil {
			t.Fatalf("%s/%s after migration: %v", d.PartitionKey, d.RowKey, d.Properties)
		}
	}
	e, err := value(r.emps.Get(ctx, "p1", "011", nil))
	if err != nil || e.First != "Raced" || e.Age != 99 {
		t.Fatalf("the concurrent writer's change was lost: %+v, %v", e, err)
	}
	// A third run finds nothing to do.
	prog, err = r.types.Migrate(ctx, nil)
	if err != nil || prog.Upgraded != 0 || prog.Read != 3*perPartition {
		t.Fatalf("idle run: %+v, %v", prog, err)
	}
}

func TestMigrateLostResponse(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	var ops []table.Op
	for i := range 30 {
		ops = append(ops, r.oldEmps.InsertOp(empV1{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i), FullName: "Old One", Age: int32(i)}))
	}
	if _, err := r.emps.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	// The transaction commits, its response is lost, and the resend fails
	// (the ETags changed): the outcome is settled by a read, not guessed,
	// and nothing is written twice.
	r.ft.Inject(faults.Fault{Match: func(req *http.Request) bool { return strings.Contains(req.URL.Path, "$batch") }, LoseResponse: true})
	prog, err := r.types.Migrate(ctx, nil)
	if err != nil || prog.Upgraded != 30 || prog.Raced != 0 || prog.Read != 30 {
		t.Fatalf("%+v, %v", prog, err)
	}
	for e, err := range r.emps.Query(ctx, nil) {
		if err != nil || e.First != "Old" || e.Last != "One" {
			t.Fatalf("%+v, %v", e, err)
		}
	}
}

// One racing writer costs Migrate a re-read and a write of its row and one
// more transaction for the ops rolled back with it, not a row-by-row pass;
// a row deleted meanwhile stays deleted.
func TestMigrateRaceCostAndDeletes(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	var ops []table.Op
	for i := range 250 {
		ops = append(ops, r.oldEmps.InsertOp(empV1{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i), FullName: "Old One"}))
	}
	if _, err := r.emps.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	r.ft.Reset()
	var raced atomic.Bool
	r.ft.Inject(faults.Fault{Match: func(req *http.Request) bool {
		if strings.Contains(req.URL.Path, "$batch") && raced.CompareAndSwap(false, true) {
			if _, err := r.oldEmps.Upsert(context.Background(), empV1{PartitionKey: "p", RowKey: "005", FullName: "Raced Writer"}, table.Replace); err != nil {
				t.Error(err)
			}
		}
		return false
	}})
	prog, err := r.types.Migrate(ctx, nil)
	if err != nil || prog.Upgraded != 250 || prog.Raced != 0 {
		t.Fatalf("%+v, %v", prog, err)
	}
	// 1 page; 3 transactions (100, 100, 50), the first failing on row 005;
	// 1 more for its 99 rolled-back ops; 005 read again and written.
	if n := r.ft.Count(); n != 7 {
		t.Fatalf("%d round trips, want 7", n)
	}
	if e, err := value(r.emps.Get(ctx, "p", "005", nil)); err != nil || e.First != "Raced" {
		t.Fatalf("%+v, %v", e, err)
	}

	// A row deleted between the read and the write stays deleted.
	if _, err := r.oldEmps.Insert(ctx, empV1{PartitionKey: "q", RowKey: "1", FullName: "Gone Soon"}); err != nil {
		t.Fatal(err)
	}
	var deleted atomic.Bool
	r.ft.Inject(faults.Fault{Match: func(req *http.Request) bool {
		if strings.Contains(req.URL.Path, "$batch") && deleted.CompareAndSwap(false, true) {
			if err := r.oldEmps.Delete(context.Background(), "q", "1", "*"); err != nil {
				t.Error(err)
			}
		}
		return false
	}})
	prog, err = r.types.Migrate(ctx, &table.MigrateOptions{Query: &table.Query{Filter: table.PartitionKey("q")}})
	if err != nil || prog.Upgraded != 0 || prog.Raced != 1 || !deleted.Load() {
		t.Fatalf("%+v, %v", prog, err)
	}
	if _, err := r.raw.Get(ctx, "q", "1", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the deleted row: %v", err)
	}
}

// A property two registered types store with different EDM types is typed
// by the literal's Go type in a mixed query, every time.
func TestTypesFilterOfConflictingKinds(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	co := table.ClientOptions()
	co.Transport = ft
	ts, err := table.NewTypes(env.Table(co), nil)
	if err != nil {
		t.Fatal(err)
	}
	type a struct {
		PartitionKey, RowKey string
		X                    int32
	}
	type b struct {
		PartitionKey, RowKey string
		X                    float64
	}
	as, err := table.Register[a](ts, "A", nil)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := table.Register[b](ts, "B", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := as.Insert(ctx, a{PartitionKey: "p", RowKey: "a", X: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := bs.Insert(ctx, b{PartitionKey: "p", RowKey: "b", X: 2.5}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		got, err := table.Collect(ts.Query(ctx, &table.Query{Filter: table.Eq("X", 2.5)}))
		if err != nil || len(got) != 1 || got[0] != (b{PartitionKey: "p", RowKey: "b", X: 2.5}) {
			t.Fatalf("%v, %v", got, err)
		}
	}
}

// Three versions: rows of versions 1 and 2 both read as version 3, through
// both upgrades or the last one only, and Migrate leaves every row at 3.
func TestTypesThreeVersions(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	type empV3 struct {
		table.Meta
		PartitionKey, RowKey string
		Display              string
		Age                  int64
	}
	v3, err := table.NewTypes(r.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	emps, err := table.Register[empV3](v3, "Employee", &table.RegisterOptions{Version: 3, Upgrades: []table.Upgrade{
		table.UpgradeFrom(2, func(e staffer) (empV3, error) { return empV3{Display: e.Last + ", " + e.First, Age: int64(e.Age)}, nil }),
		empUp, // 1 -> 2, listed out of order on purpose
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.oldEmps.Insert(ctx, empV1{PartitionKey: "p", RowKey: "1", FullName: "Ann Lee", Age: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.emps.Insert(ctx, staffer{PartitionKey: "p", RowKey: "2", First: "Bo", Last: "Diddley", Age: 40}); err != nil {
		t.Fatal(err)
	}
	if _, err := emps.Insert(ctx, empV3{PartitionKey: "p", RowKey: "3", Display: "Young, Cy", Age: 50}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got, err := table.Collect(emps.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}))
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		var s []string
		for _, e := range got {
			s = append(s, fmt.Sprintf("%s %s %d", e.RowKey, e.Display, e.Age))
		}
		if want := "1 Lee, Ann 30|2 Diddley, Bo 40|3 Young, Cy 50"; strings.Join(s, "|") != want {
			t.Fatalf("%s: %q, want %q", when, s, want)
		}
	}
	check("before Migrate")
	p, err := v3.Migrate(ctx, nil)
	if err != nil || p.Upgraded != 2 {
		t.Fatalf("%+v, %v", p, err)
	}
	check("after Migrate")
	for _, rk := range []string{"1", "2", "3"} {
		if got := r.storedType(t, "p", rk); got != "Employee.3" {
			t.Fatalf("%s stored as %v", rk, got)
		}
	}
	// The version 2 program now meets rows newer than it knows.
	if _, err := r.emps.Get(ctx, "p", "1", nil); !errors.Is(err, table.ErrEntityType) {
		t.Fatalf("version 2 reading version 3: %v", err)
	}
}

// Rows under reserved.Prefix (commit records, index entities) are skipped
// by Types' queries as by typed ones.
func TestTypesSkipReservedRows(t *testing.T) {
	t.Parallel()
	r := newMixedRig(t, nil, false)
	ctx := context.Background()
	if _, err := r.emps.Insert(ctx, staffer{PartitionKey: "p", RowKey: "1", First: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reserved.Table(r.raw).Insert(ctx, table.Dynamic{PartitionKey: "p", RowKey: reserved.Prefix + "intent~x", Properties: map[string]any{"Kind": "archive"}}); err != nil {
		t.Fatal(err)
	}
	got, err := table.Collect(r.types.Query(ctx, &table.Query{Filter: table.PartitionKey("p")}))
	if err != nil || len(got) != 1 {
		t.Fatalf("%v, %v", got, err)
	}
	if _, err := table.Collect(r.types.Query(ctx, &table.Query{Filter: table.PartitionKey("p"), IncludeReserved: true})); !errors.Is(err, table.ErrEntityType) {
		t.Fatalf("with IncludeReserved, the record is of no registered type: %v", err)
	}
}
