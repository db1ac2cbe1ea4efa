package table_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func load(t *testing.T, tb *table.Table[employee], dept string, n int) {
	t.Helper()
	var ops []table.Op
	for i := 0; i < n; i++ {
		ops = append(ops, tb.InsertOp(emp(dept, i)))
	}
	if _, err := tb.Submit(context.Background(), ops, nil); err != nil {
		t.Fatal(err)
	}
}

func ids(es []employee) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Department + "/" + e.ID
	}
	return out
}

func TestQueryPagingLimitAndProjection(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	load(t, tb, "Sales", 250)
	load(t, tb, "Marketing", 20)
	ctx := context.Background()

	ft.Reset()
	all, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 100}))
	if err != nil || len(all) != 250 || ft.Count() != 3 {
		t.Fatalf("got %d entities in %d round trips (%v), want 250 in 3", len(all), ft.Count(), err)
	}
	if !slices.IsSortedFunc(all, func(a, b employee) int { return strings.Compare(a.ID, b.ID) }) || all[0].ETag == "" {
		t.Fatal("results not in RowKey order, or without ETags")
	}
	// Limit: the last page asks only for what is missing.
	ft.Reset()
	some, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 100, Limit: 130}))
	if err != nil || len(some) != 130 || ft.Count() != 2 {
		t.Fatalf("Limit 130: %d entities in %d round trips (%v)", len(some), ft.Count(), err)
	}
	if q := ft.Requests()[1].URL; !strings.Contains(q, "%24top=30") {
		t.Fatalf("second page asked %s, want $top=30", q)
	}
	// Default projection: the fields of T; explicit projection.
	if q := ft.Requests()[0].URL; !strings.Contains(q, "%24select=PartitionKey%2CRowKey%2CTimestamp%2CTkWrites%2CFirstName") {
		t.Fatalf("default $select missing in %s", q)
	}
	ft.Reset()
	proj, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Marketing"), Select: []string{"Age"}}))
	// The keys and Timestamp are always read (they cost nothing).
	if err != nil || len(proj) != 20 || proj[0].Age == 0 || proj[0].FirstName != "" || proj[0].ID == "" || proj[0].Department != "Marketing" || proj[0].Timestamp.IsZero() {
		t.Fatalf("projection: %+v, %v", proj[0], err)
	}
	// A range query over compound RowKeys.
	rng, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.RowKeyRange(keys.Pad(100, 6), keys.Pad(110, 6)))}))
	if err != nil || len(rng) != 10 || rng[0].ID != "000100" || rng[9].ID != "000109" {
		t.Fatalf("range query: %v, %v", ids(rng), err)
	}
	// Breaking out of the loop stops fetching: pages 1 and 2 were consumed,
	// page 3 was being fetched ahead and is cancelled (it may or may not
	// have reached the service by then); nothing after it is asked for.
	ft.Reset()
	n := 0
	for _, err := range tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 10}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 15 {
			break
		}
	}
	if n := ft.Count(); n != 2 && n != 3 {
		t.Fatalf("breaking after 15 of pages of 10 fetched %d pages, want 2 (+1 cancelled prefetch)", n)
	}
}

// A cursor is a string: a later process (a new client and Table) resumes
// exactly where the earlier one stopped.
func TestCursorResumesInAnotherProcess(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	name := env.Name()
	first, err := table.New[employee](env.CreateTable(name, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	load(t, first, "Sales", 95)
	ctx := context.Background()
	want, err := table.Collect(first.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil {
		t.Fatal(err)
	}
	var got []employee
	var saved string // what a process would persist between runs
	for pages := 1; ; pages++ {
		// Each page is read by a "new process": a new client and Table.
		svc, err := aztables.NewServiceClientFromConnectionString(env.ConnectionString, nil)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := table.New[employee](table.NewClient(svc, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 20, Cursor: table.Cursor(saved)})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Items...)
		saved = string(p.Next)
		if saved == "" {
			if pages != 5 {
				t.Fatalf("%d pages of 20 for 95 entities, want 5", pages)
			}
			break
		}
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("resumed reading returned %d entities, want the same %d as one query", len(got), len(want))
	}
}

func TestFilterInjectionSelectsNothingExtra(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[employee](t)
	load(t, tb, "Sales", 5)
	load(t, tb, "x", 3)
	ctx := context.Background()
	for _, evil := range []string{
		"x' or PartitionKey ne 'y",
		"x' or '1' eq '1",
		"Sales') or (PartitionKey ne '",
		"x'",
		"'",
	} {
		got, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey(evil)}))
		if err != nil || len(got) != 0 {
			t.Fatalf("PartitionKey(%q) returned %d entities (%v), want none", evil, len(got), err)
		}
	}
	// A quote inside a real key matches exactly.
	if _, err := tb.Insert(ctx, employee{Department: "o'brien", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	got, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("o'brien")}))
	if err != nil || len(got) != 1 {
		t.Fatalf("PartitionKey(o'brien) = %d, %v", len(got), err)
	}
}

func TestFilterLiterals(t *testing.T) {
	g := uuidLike{0x41, 0x85, 0x40, 0x4a, 0x58, 0x18, 0x48, 0xc3, 0xb9, 0xbe, 0xf2, 0x17, 0xdf, 0x0d, 0xba, 0x6f}
	tests := []struct {
		f    table.Filter
		want string
	}{
		{table.Eq("S", "it's"), "S eq 'it''s'"},
		{table.Eq("I", int32(5)), "I eq 5"},
		{table.Eq("I", 5), "I eq 5L"},
		{table.Gt("I", int64(math.MaxInt64)), "I gt 9223372036854775807L"},
		{table.Ge("F", 2.0), "F ge 2.0"},
		{table.Lt("F", 1e-7), "F lt 0.0000001"},
		{table.Lt("F", -1e21), "F lt -1000000000000000000000.0"},
		{table.Or(table.Eq("A", int32(1)), table.Filter{}), ""},
		{table.Le("B", true), "B le true"},
		{table.Ne("T", time.Date(2024, 5, 6, 9, 8, 9, 123456789, time.FixedZone("", 7200))), "T ne datetime'2024-05-06T07:08:09.1234567Z'"},
		{table.Eq("Bin", []byte{0, 1, 0xff}), "Bin eq X'0001ff'"},
		{table.Eq("G", g), "G eq guid'4185404a-5818-48c3-b9be-f217df0dba6f'"},
		{table.Eq("G", aztables.EDMGUID("4185404A-5818-48C3-B9BE-F217DF0DBA6F")), "G eq guid'4185404a-5818-48c3-b9be-f217df0dba6f'"},
		{table.And(table.PartitionKey("p"), table.Or(table.Eq("A", int32(1)), table.Not(table.Eq("A", int32(2))))), "(PartitionKey eq 'p') and ((A eq 1) or (not (A eq 2)))"},
		{table.And(table.Filter{}, table.PartitionKey("p")), "PartitionKey eq 'p'"},
		{table.RowKeyPrefix("empid", "0001"), "(RowKey ge 'empid!0001') and (RowKey lt 'empid!0001\"')"},
		{table.RowKeyRange("", "b"), "RowKey lt 'b'"},
	}
	for _, tt := range tests {
		if tt.f.Err() != nil || tt.f.String() != tt.want {
			t.Errorf("got %q (%v), want %q", tt.f.String(), tt.f.Err(), tt.want)
		}
	}
	for _, bad := range []table.Filter{
		table.Eq("a b", "x"),
		table.Eq("X", struct{}{}),
		table.Eq("X", math.NaN()),
		table.And(table.PartitionKey("p"), table.Eq("X", uint64(1))),
		table.Not(table.Eq("1x", 1)),
		table.Eq("T", time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)),
		table.Not(table.Filter{}),
		table.Or(table.Filter{}, table.Eq("X", struct{}{})),
	} {
		if !errors.Is(bad.Err(), table.ErrInvalidFilter) {
			t.Errorf("filter %q: Err() = %v, want ErrInvalidFilter", bad.String(), bad.Err())
		}
	}
}

func TestTypedFiltersMatchStoredTypes(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[allTypes](t)
	ctx := context.Background()
	ts := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	g := uuidLike{9, 8, 7}
	for i := 0; i < 10; i++ {
		e := allTypes{PartitionKey: "p", RowKey: fmt.Sprint(i), I64: int64(i) << 40, I32: int32(i), F64: float64(i) + 0.5, T: ts.Add(time.Duration(i) * time.Hour), B: i%2 == 0, Bin: []byte{byte(i)}}
		if i == 3 {
			e.G = g
		}
		if _, err := tb.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		f    table.Filter
		want int
	}{
		{table.Eq("I64", int64(3)<<40), 1},
		{table.Ge("I32", int32(7)), 3},
		{table.Gt("F64", 4.0), 6},
		{table.Lt("F64", 1e21), 10},
		{table.Gt("F64", 1e-7), 10},
		{table.Lt("T", ts.Add(2*time.Hour)), 2},
		{table.Eq("B", true), 5},
		{table.Eq("Bin", []byte{4}), 1},
		{table.Eq("G", g), 1},
	}
	for _, tt := range tests {
		got, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("p"), tt.f)}))
		if err != nil || len(got) != tt.want {
			t.Errorf("%s: %d entities (%v), want %d", tt.f, len(got), err, tt.want)
		}
	}
	// An invalid filter fails before the network.
	if _, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.Eq("X", struct{}{})})); !errors.Is(err, table.ErrInvalidFilter) {
		t.Fatalf("invalid filter: %v", err)
	}
}

// The real service may answer with an empty page that still has a
// continuation (Azurite never does). Query must follow the token.
func TestEmptyPageWithContinuation(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	load(t, tb, "Sales", 30)
	ft.Reset()
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString
	// First request: no entities, a continuation pointing at the first
	// entity (Azurite's token format: base64 of the keys).
	ft.Inject(faults.Fault{Respond: func(req *http.Request) *http.Response {
		h := http.Header{"Content-Type": {"application/json"}}
		h.Set("x-ms-continuation-NextPartitionKey", b64([]byte("Sales")))
		h.Set("x-ms-continuation-NextRowKey", b64([]byte(keys.Pad(0, 6))))
		body := `{"odata.metadata":"x","value":[]}`
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
	}})
	got, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 7}))
	if err != nil || len(got) != 30 {
		t.Fatalf("%d entities (%v), want 30 after an empty first page", len(got), err)
	}
	if ft.Count() != 1+5 {
		t.Fatalf("%d round trips, want 6 (the empty page, then 5 pages of up to 7)", ft.Count())
	}
	// QueryPage surfaces the empty page and its cursor.
	ft.Inject(faults.Fault{Respond: func(req *http.Request) *http.Response {
		h := http.Header{"Content-Type": {"application/json"}}
		h.Set("x-ms-continuation-NextPartitionKey", b64([]byte("Sales")))
		h.Set("x-ms-continuation-NextRowKey", b64([]byte(keys.Pad(5, 6))))
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(`{"value":[]}`)), Request: req}
	}})
	p, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Sales")})
	if err != nil || len(p.Items) != 0 || p.Next == "" {
		t.Fatalf("empty page: %d items, Next %q, %v", len(p.Items), p.Next, err)
	}
	p, err = tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Sales"), Cursor: p.Next})
	if err != nil || len(p.Items) != 25 || p.Items[0].ID != keys.Pad(5, 6) || p.Next != "" {
		t.Fatalf("after the empty page: %d items from %v, Next %q, %v", len(p.Items), ids(p.Items[:1]), p.Next, err)
	}
	if _, err := tb.QueryPage(ctx, &table.Query{Cursor: "garbage"}); err == nil {
		t.Fatal("a malformed cursor must be an error")
	}
}

// Rows under reserved.Prefix (a pattern's bookkeeping beside the entities)
// never reach a typed query, even when they would not decode into T, and
// still count toward Limit only when returned.
func TestQueriesSkipReservedRows(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[employee](t)
	load(t, tb, "Sales", 3)
	ctx := context.Background()
	dyn, err := table.New[table.Dynamic](tb.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dyn = reserved.Table(dyn) // as a pattern package writes its rows
	// Age is a string here: decoding this row into an employee would fail.
	for _, rk := range []string{"000001" + reserved.Prefix, reserved.Prefix + "commit-1"} {
		if _, err := dyn.Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"Age": "not a number"}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err == nil || len(got) != 0 {
		// The row whose RowKey only contains the prefix is an ordinary row.
		t.Fatalf("the row 000001~tk~ decoded into an employee: %v, %v", ids(got), err)
	}
	all, err := table.Collect(dyn.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil || len(all) != 4 {
		t.Fatalf("Dynamic query: %d rows (%v), want 4: the reserved row skipped", len(all), err)
	}
	withReserved, err := table.Collect(dyn.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), IncludeReserved: true}))
	if err != nil || len(withReserved) != 5 || withReserved[4].RowKey != reserved.Prefix+"commit-1" {
		t.Fatalf("IncludeReserved: %d rows (%v), want 5 with the reserved row last", len(withReserved), err)
	}
	if err := dyn.Delete(ctx, "Sales", "000001"+reserved.Prefix, "*"); err != nil {
		t.Fatal(err)
	}
	emps, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), Limit: 3, PageSize: 2}))
	if err != nil || len(emps) != 3 {
		t.Fatalf("typed query: %v (%v), want the 3 employees", ids(emps), err)
	}
	one, err := value(dyn.Get(ctx, "Sales", reserved.Prefix+"commit-1", nil))
	if err != nil || one.Properties["Age"] != "not a number" {
		t.Fatalf("a point read of a reserved row: %+v, %v", one, err)
	}
}

// An application's keys under reserved.Prefix (an id read from user input,
// "~tk~ix!Last!Jones") are refused by every write, point read and op,
// before the network, so they can never take over a pattern's reserved
// row; a reserved view (internal/reserved, for the pattern packages)
// writes them.
func TestReservedKeysRefused(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	types, err := table.NewTypes(tb.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := table.Register[employee](types, "Employee", nil)
	if err != nil {
		t.Fatal(err)
	}
	computed := tb.WithKeys(func(e *employee) (string, string) { return e.Department, reserved.Prefix + e.ID })
	for _, k := range [][2]string{{"Sales", reserved.Prefix + "ix!Last!Jones"}, {reserved.Prefix + "ix", "000001"}} {
		e := employee{Department: k[0], ID: k[1], FirstName: "Mallory"}
		ft.Reset()
		attempts := map[string]error{}
		_, attempts["Insert"] = tb.Insert(ctx, e)
		_, attempts["Upsert"] = tb.Upsert(ctx, e, table.Merge)
		_, attempts["Update"] = tb.Update(ctx, e, "*", table.Replace)
		attempts["Delete"] = tb.Delete(ctx, k[0], k[1], "*")
		_, attempts["Get"] = tb.Get(ctx, k[0], k[1], nil)
		_, attempts["Modify"] = tb.Modify(ctx, k[0], k[1], func(*employee) error { return nil }, nil)
		attempts["InsertOp"] = tb.InsertOp(e).Err()
		attempts["UpsertOp"] = tb.UpsertOp(e, table.Merge).Err()
		attempts["UpdateOp"] = tb.UpdateOp(e, "*", table.Merge).Err()
		attempts["DeleteOp"] = tb.DeleteOp(k[0], k[1], "*").Err()
		_, attempts["Types.Get"] = types.Get(ctx, k[0], k[1])
		_, attempts["registered Insert"] = typed.Insert(ctx, e)
		_, attempts["WithKeys Insert"] = computed.Insert(ctx, employee{Department: "Sales", ID: "x"})
		for verb, err := range attempts {
			if !errors.Is(err, table.ErrInvalidKey) || !strings.Contains(err.Error(), "reserved.Prefix") {
				t.Errorf("%s of %q/%q = %v, want ErrInvalidKey naming reserved.Prefix", verb, k[0], k[1], err)
			}
		}
		if n := ft.Count(); n != 0 {
			t.Fatalf("%d requests sent for refused reserved keys", n)
		}
	}
	// A pattern's reserved view writes and reads them.
	own := reserved.Table(tb)
	rk := reserved.Prefix + "ix!Last!Jones"
	if _, err := own.Insert(ctx, employee{Department: "Sales", ID: rk, FirstName: "index"}); err != nil {
		t.Fatal(err)
	}
	if got, err := value(own.Get(ctx, "Sales", rk, nil)); err != nil || got.FirstName != "index" {
		t.Fatalf("a reserved view's Get = %+v, %v", got, err)
	}
	if err := own.Delete(ctx, "Sales", rk, "*"); err != nil {
		t.Fatal(err)
	}
}

// Property names under reserved.PropertyPrefix (a copy's TkRef, a blob
// pointer) are the patterns' own: refused in a struct type and in an
// application's Dynamic writes; a pattern's Properties view writes them
// and still refuses reserved keys.
func TestReservedPropertiesRefused(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[table.Dynamic](t)
	ctx := context.Background()
	type forged struct {
		PartitionKey, RowKey string
		TkRef                string
	}
	reader, err := table.New[forged](tb.Client(), nil)
	if err != nil {
		t.Fatalf("New of a type with a TkRef field, to read copies = %v", err)
	}
	_, errStruct := reader.Insert(ctx, forged{"Sales", "email!y", "HR!007"})
	d := table.Dynamic{PartitionKey: "Sales", RowKey: "email!x", Properties: map[string]any{"TkRef": "HR!007"}}
	_, errInsert := tb.Insert(ctx, d)
	errOp := tb.UpsertOp(d, table.Replace).Err()
	for _, err := range []error{errStruct, errInsert, errOp} {
		if !errors.Is(err, table.ErrInvalidEntity) || !errors.Is(err, table.ErrInvalid) {
			t.Fatalf("a Dynamic write of TkRef = %v", err)
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	own := reserved.Properties(tb)
	if _, err := own.Insert(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := own.Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: reserved.Prefix + "x"}); !errors.Is(err, table.ErrInvalidKey) {
		t.Fatalf("a Properties view wrote a reserved key: %v", err)
	}
	got, err := value(tb.Get(ctx, "Sales", "email!x", nil))
	if err != nil || got.Properties["TkRef"] != "HR!007" {
		t.Fatalf("reading the row back = %+v, %v", got, err)
	}
	if f, err := value(reader.Get(ctx, "Sales", "email!x", nil)); err != nil || f.TkRef != "HR!007" {
		t.Fatalf("a struct with a TkRef field reads it: %+v, %v", f, err)
	}
}

// Entity is the one read envelope: Get, Modify, QueryEntities and Types.Get
// give the keys the entity is stored under and the ETag of the version
// read, which the next conditional write takes.
func TestEntityEnvelope(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[employee](t)
	ctx := context.Background()
	res, err := tb.Insert(ctx, employee{Department: "Sales", ID: "1", FirstName: "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tb.Get(ctx, "Sales", "1", nil)
	if err != nil || got.PartitionKey != "Sales" || got.RowKey != "1" || got.ETag != res.ETag || got.Value.ETag != res.ETag || got.Value.FirstName != "Ann" {
		t.Fatalf("Get = %+v, %v; want keys, the insert's ETag %s and the value", got, err, res.ETag)
	}
	sel, err := tb.Get(ctx, "Sales", "1", &table.GetOptions{Select: []string{"FirstName"}})
	if err != nil || sel.ETag != res.ETag || sel.RowKey != "1" || sel.Value.FirstName != "Ann" || sel.Value.LastName != "" {
		t.Fatalf("Get with Select = %+v, %v", sel, err)
	}
	m, err := tb.Modify(ctx, "Sales", "1", func(e *employee) error { e.Age = 30; return nil }, nil)
	if err != nil || m.ETag == "" || m.ETag == res.ETag || m.Value.Age != 30 || m.RowKey != "1" {
		t.Fatalf("Modify = %+v, %v", m, err)
	}
	byKey := tb.WithKeys(func(e *employee) (string, string) { return e.Department, "by!" + e.FirstName })
	if _, err := byKey.Insert(ctx, employee{Department: "Sales", ID: "1", FirstName: "Ann"}); err != nil {
		t.Fatal(err)
	}
	var rows []table.Entity[employee]
	for e, err := range tb.QueryEntities(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, e)
	}
	if len(rows) != 2 || rows[0].RowKey != "1" || rows[0].ETag != m.ETag || rows[1].RowKey != "by!Ann" || rows[1].ETag == "" {
		t.Fatalf("QueryEntities = %+v", rows)
	}
	if _, err := tb.Update(ctx, rows[0].Value, rows[0].ETag, table.Merge); err != nil {
		t.Fatalf("Update with the ETag QueryEntities read: %v", err)
	}
}
