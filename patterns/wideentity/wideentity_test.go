package wideentity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// fixture is a table seen through the rig's fault-injecting client (the
// stores) and through a clean one (the truth).
type fixture struct {
	ft    *faults.Transport           // the rig's
	tbl   *table.Table[table.Dynamic] // through ft
	clean *table.Table[table.Dynamic]
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, testrig.New(t))
}

// newFixtureOn is newFixture on rig r (one of testrig.Services').
func newFixtureOn(t *testing.T, r *testrig.Rig) *fixture {
	t.Helper()
	c := r.Table()
	f := &fixture{ft: r.Faults, tbl: testrig.NewTable[table.Dynamic](t, c), clean: testrig.NewTable[table.Dynamic](t, r.Clean(c))}
	f.ft.Reset()
	return f
}

func newStore[T any](t *testing.T, f *fixture, parts int) *wideentity.Store[T] {
	t.Helper()
	s, err := wideentity.New(f.tbl, &wideentity.Options[T]{Parts: parts, Retry: &testrig.Contention})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// at returns d with the logical keys (pk, rk).
func at(pk, rk string, d table.Dynamic) table.Dynamic {
	d.PartitionKey, d.RowKey = pk, rk
	return d
}

// rows returns the RowKeys stored in partition pk, and the number of
// properties stored under each.
func (f *fixture) rows(t *testing.T, pk string) ([]string, map[string]int) {
	t.Helper()
	all, err := table.Collect(f.clean.Query(context.Background(), &table.Query{Filter: table.PartitionKey(pk)}))
	if err != nil {
		t.Fatal(err)
	}
	var rks []string
	props := map[string]int{}
	for _, d := range all {
		rks = append(rks, d.RowKey)
		props[d.RowKey] = len(d.Properties)
	}
	slices.SortFunc(rks, keys.Compare) // in no order on Cosmos DB
	return rks, props
}

// wantRows returns the RowKeys of entity rk stored in parts part rows.
func wantRows(rk string, parts int) []string {
	out := []string{keys.Join(rk, "h")}
	for k := range parts {
		out = append(out, keys.Join(rk, "p", keys.Pad(uint64(parts), 2), keys.Pad(uint64(k), 2)))
	}
	return out
}

// bag returns a property bag of n Int64 properties P0000... = base + i.
func bag(n int, base int64) table.Dynamic {
	d := table.Dynamic{Properties: map[string]any{}}
	for i := range n {
		d.Properties[fmt.Sprintf("P%04d", i)] = base + int64(i)
	}
	return d
}

func isBatch(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "$batch")
}

// TestRoundTripsPerOperation: every operation costs what the package
// documentation says, asserted at the transport; and the stored rows are
// the documented layout.
func TestRoundTripsPerOperation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	ctx := context.Background()
	trips := func(what string, want int) {
		t.Helper()
		if n := f.ft.Count(); n != want {
			t.Fatalf("%s: %d round trips, want %d", what, n, want)
		}
		f.ft.Reset()
	}
	res, err := s.Insert(ctx, at("sensor", "2024", bag(600, 0)))
	if err != nil || res.ETag == "" {
		t.Fatalf("Insert = %+v, %v", res, err)
	}
	trips("Insert", 1)
	e, err := s.Get(ctx, "sensor", "2024")
	if err != nil || len(e.Value.Properties) != 600 || e.Value.Properties["P0599"] != int64(599) || e.ETag != res.ETag || e.Parts != 4 {
		t.Fatalf("Get = %d properties, ETag %q (want %q), %d parts, %v", len(e.Value.Properties), e.ETag, res.ETag, e.Parts, err)
	}
	if e.Value.PartitionKey != "sensor" || e.Value.RowKey != "2024" || e.Value.ETag != e.ETag {
		t.Fatalf("Get's keys and meta: %q %q %q", e.Value.PartitionKey, e.Value.RowKey, e.Value.ETag)
	}
	trips("Get", 1)
	rks, props := f.rows(t, "sensor")
	if !slices.Equal(rks, wantRows("2024", 4)) {
		t.Fatalf("rows %v, want %v", rks, wantRows("2024", 4))
	}
	if total := props[rks[1]] + props[rks[2]] + props[rks[3]] + props[rks[4]]; total != 600+4 {
		t.Fatalf("%d properties in the parts, want 600 + 4 versions", total)
	}
	f.ft.Reset()

	res, err = s.Update(ctx, at("sensor", "2024", bag(600, 1000)), e.ETag, table.Replace)
	if err != nil {
		t.Fatal(err)
	}
	trips("Update with an ETag", 1)
	if _, err := s.Update(ctx, at("sensor", "2024", bag(600, 2000)), e.ETag, table.Replace); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v", err)
	}
	trips("Update with a stale ETag", 1)
	one := table.Dynamic{Properties: map[string]any{"P0007": int64(-7)}}
	res2, err := s.Update(ctx, at("sensor", "2024", one), azcore.ETagAny, table.Fields("P0007"))
	if err != nil {
		t.Fatal(err)
	}
	trips("Fields update", 1)
	if res2.ETag == res.ETag {
		t.Fatal("Fields update did not change the entity's ETag")
	}
	if _, err := s.Update(ctx, at("sensor", "2024", bag(600, 2000)), res.ETag, table.Replace); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with the ETag from before a Fields update = %v", err)
	}
	f.ft.Reset()
	two := table.Dynamic{Properties: map[string]any{"P0001": int64(-1), "P0500": int64(-500), "New": "added"}}
	res3, err := s.Update(ctx, at("sensor", "2024", two), res2.ETag, table.Fields("P0001", "P0500", "New"))
	if err != nil {
		t.Fatal(err)
	}
	trips("a Fields update with an ETag", 1)
	e, err = s.Get(ctx, "sensor", "2024")
	if err != nil || e.ETag != res3.ETag || len(e.Value.Properties) != 601 {
		t.Fatalf("Get = %d properties, %v", len(e.Value.Properties), err)
	}
	for name, want := range map[string]any{"P0000": int64(1000), "P0001": int64(-1), "P0007": int64(-7), "P0500": int64(-500), "P0599": int64(1599), "New": "added"} {
		if got := e.Value.Properties[name]; got != want {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}
	f.ft.Reset()
	if _, err := s.Update(ctx, at("sensor", "2024", bag(3, 0)), azcore.ETagAny, table.Replace); err != nil {
		t.Fatal(err)
	}
	trips("Update with ETagAny", 1)
	if err := s.Delete(ctx, "sensor", "2024", e.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale ETag = %v", err)
	}
	f.ft.Reset()
	e, _ = s.Get(ctx, "sensor", "2024")
	f.ft.Reset()
	if err := s.Delete(ctx, "sensor", "2024", e.ETag); err != nil {
		t.Fatal(err)
	}
	trips("Delete", 1)
	if rks, _ := f.rows(t, "sensor"); len(rks) != 0 {
		t.Fatalf("rows left after Delete: %v", rks)
	}
	f.ft.Reset()
	if _, err := s.Get(ctx, "sensor", "2024"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	trips("Get of a missing entity", 1)
	for what, err := range map[string]error{
		"Update":        second(s.Update(ctx, at("sensor", "2024", bag(3, 0)), azcore.ETagAny, table.Replace)),
		"Fields update": second(s.Update(ctx, at("sensor", "2024", one), azcore.ETagAny, table.Fields("P0007"))),
		"Delete":        s.Delete(ctx, "sensor", "2024", azcore.ETagAny),
	} {
		if !errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrOutcomeUnknown) {
			t.Errorf("%s of a missing entity = %v", what, err)
		}
	}
	trips("Update, Fields update and Delete of a missing entity", 6)
	if rks, _ := f.rows(t, "sensor"); len(rks) != 0 {
		t.Fatalf("rows after writes to a missing entity: %v", rks)
	}
	f.ft.Reset()
	if _, err := s.Insert(ctx, at("sensor", "2025", bag(10, 0))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, at("sensor", "2025", bag(10, 0))); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("second Insert = %v", err)
	}
	trips("two Inserts", 2)
	var mod int
	e, err = s.Modify(ctx, "sensor", "2025", func(d *table.Dynamic) error {
		mod++
		d.Properties["P0003"] = d.Properties["P0003"].(int64) + 100
		delete(d.Properties, "P0009")
		return nil
	})
	if err != nil || mod != 1 {
		t.Fatalf("Modify: %v (fn called %d times)", err, mod)
	}
	trips("Modify", 2)
	got, _ := s.Get(ctx, "sensor", "2025")
	if got.ETag != e.ETag || got.Value.Properties["P0003"] != int64(103) || len(got.Value.Properties) != 9 {
		t.Fatalf("after Modify: %v", got.Value.Properties)
	}
}

func second[A, B any](_ A, b B) B { return b }

// invalid checks that err is a validation error of the package: it
// matches ErrInvalid, table.ErrInvalid and each of also, and its text is
// one line.
func invalid(t *testing.T, what string, err error, also ...error) {
	t.Helper()
	for _, want := range append([]error{wideentity.ErrInvalid, table.ErrInvalid}, also...) {
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: the error's text is not one line: %q", what, err)
	}
}

// TestPrefixCollision: logical RowKeys that extend one another, or contain
// the delimiter and the escape characters, keep their rows apart: each
// range query reads its own entity only, and deleting one leaves the
// others whole.
func TestPrefixCollision(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 3)
	ctx := context.Background()
	rks := []string{"a", "a!b", keys.Join("a", "x"), "a.", "a...", "ab", "a b", "a\"", "", "é", "a/b#?", "a!h", "a!p!03!00"}
	for i, rk := range rks {
		d := bag(20+i, int64(i)*100)
		d.Properties["Key"] = rk
		if _, err := s.Insert(ctx, at("p", rk, d)); err != nil {
			t.Fatalf("Insert %q: %v", rk, err)
		}
	}
	check := func(deleted ...string) {
		t.Helper()
		for i, rk := range rks {
			f.ft.Reset()
			e, err := s.Get(ctx, "p", rk)
			if slices.Contains(deleted, rk) {
				if !errors.Is(err, table.ErrNotFound) {
					t.Fatalf("Get %q after its Delete = %v", rk, err)
				}
				continue
			}
			if err != nil || e.Value.Properties["Key"] != rk || len(e.Value.Properties) != 21+i || f.ft.Count() != 1 {
				t.Fatalf("Get %q = key %v, %d properties (want %d), %v, %d round trips", rk, e.Value.Properties["Key"], len(e.Value.Properties), 21+i, err, f.ft.Count())
			}
		}
	}
	check()
	if stored, _ := f.rows(t, "p"); len(stored) != len(rks)*4 {
		t.Fatalf("%d rows, want %d", len(stored), len(rks)*4)
	}
	e, _ := s.Get(ctx, "p", "a")
	if err := s.Delete(ctx, "p", "a", e.ETag); err != nil {
		t.Fatal(err)
	}
	check("a")
	if stored, _ := f.rows(t, "p"); len(stored) != (len(rks)-1)*4 {
		t.Fatalf("%d rows after deleting one entity, want %d", len(stored), (len(rks)-1)*4)
	}
}

// TestShrinkAndLayoutChanges: a rewrite with fewer properties leaves the
// part rows (no property of the old version stays anywhere); a Store with
// another Parts reads the entity, and its writes move it to its layout,
// deleting the old part rows in the same transaction; Fields update and
// Delete act on the stored layout.
func TestShrinkAndLayoutChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s10 := newStore[table.Dynamic](t, f, 10)
	s3 := newStore[table.Dynamic](t, f, 3)
	ctx := context.Background()
	count := func(want []string, wantProps int) {
		t.Helper()
		rks, props := f.rows(t, "p")
		if !slices.Equal(rks, want) {
			t.Fatalf("rows %v, want %v", rks, want)
		}
		n := 0
		for _, rk := range rks {
			if rk != keys.Join("big", "h") {
				n += props[rk] - 1 // less the version
			}
		}
		if n != wantProps {
			t.Fatalf("%d properties stored, want %d", n, wantProps)
		}
	}
	res, err := s10.Insert(ctx, at("p", "big", bag(2000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	count(wantRows("big", 10), 2000)
	if res, err = s10.Update(ctx, at("p", "big", bag(5, 0)), res.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
	count(wantRows("big", 10), 5)

	f.ft.Reset()
	if res, err = s3.Update(ctx, at("p", "big", bag(20, 7)), res.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 3 {
		t.Fatalf("Update into another layout: %d round trips, want 3", n)
	}
	count(wantRows("big", 3), 20)
	f.ft.Reset()
	e, err := s10.Get(ctx, "p", "big")
	if err != nil || e.Parts != 3 || e.ETag != res.ETag || len(e.Value.Properties) != 20 || f.ft.Count() != 1 {
		t.Fatalf("Get by a Store of 10 parts: %d parts, %d properties, %v, %d round trips", e.Parts, len(e.Value.Properties), err, f.ft.Count())
	}
	f.ft.Reset()
	one := table.Dynamic{Properties: map[string]any{"P0004": int64(-4), "Q": true}}
	if _, err := s10.Update(ctx, at("p", "big", one), azcore.ETagAny, table.Fields("P0004", "Q")); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 3 {
		t.Fatalf("Fields update on another layout: %d round trips, want 3", n)
	}
	count(wantRows("big", 3), 21)
	if e, _ := s3.Get(ctx, "p", "big"); e.Value.Properties["P0004"] != int64(-4) || e.Value.Properties["Q"] != true {
		t.Fatalf("after Fields update: %v", e.Value.Properties)
	}
	// A Store of 99 parts cannot move an entity of 3 into its layout in
	// one transaction (1 + 3 + 99 operations): refused, nothing written.
	s99 := newStore[table.Dynamic](t, f, table.Storage.MaxBatchOps-1)
	if _, err := s99.Update(ctx, at("p", "big", bag(20, 0)), azcore.ETagAny, table.Replace); !errors.Is(err, table.ErrTooLarge) {
		t.Fatalf("Update from 3 to 99 parts = %v", err)
	}
	count(wantRows("big", 3), 21)
	f.ft.Reset()
	if err := s10.Delete(ctx, "p", "big", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 3 {
		t.Fatalf("Delete of another layout: %d round trips, want 3", n)
	}
	count(nil, 0)
}

// TestLimitsSendNothing: every limit is checked before the network, with
// the sentinel naming what was wrong; the largest entities that fit are
// written.
//
// Key errors are tested in TestKeyErrors.
func TestLimitsSendNothing(t *testing.T) {
	testrig.StorageOnly(t, "Table Storage's 1 MiB entity; TestCosmosWideEntity covers Cosmos DB's 2 MB")
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s1 := newStore[table.Dynamic](t, f, 1)
	s10 := newStore[table.Dynamic](t, f, 10)
	binary := func(n int) table.Dynamic {
		d := table.Dynamic{Properties: map[string]any{}}
		for i := range n {
			d.Properties[fmt.Sprintf("B%03d", i)] = make([]byte, 48<<10) // 64 KiB of base64
		}
		return d
	}
	with := func(name string, v any) table.Dynamic {
		d := bag(3, 0)
		d.Properties[name] = v
		return d
	}
	cases := []struct {
		what string
		err  error
		want error
	}{
		{"252 properties in one part", second(s1.Insert(ctx, at("p", "r", bag(252, 0)))), table.ErrTooLarge},
		{"a part over 1 MiB", second(s1.Insert(ctx, at("p", "r", binary(22)))), table.ErrTooLarge},
		{"a transaction over 4 MiB", second(s10.Insert(ctx, at("p", "r", binary(64)))), table.ErrTooLarge},
		{"reserved " + wideentity.VersionProperty, second(s10.Insert(ctx, at("p", "r", with(wideentity.VersionProperty, "x")))), table.ErrInvalidEntity},
		{"reserved " + wideentity.PartsProperty, second(s10.Update(ctx, at("p", "r", with(wideentity.PartsProperty, int32(1))), azcore.ETagAny, table.Replace)), table.ErrInvalidEntity},
		{"reserved " + reserved.WriteProperty, second(s10.Insert(ctx, at("p", "r", with(reserved.WriteProperty, "x")))), table.ErrInvalidEntity},
		{"any name under reserved.PropertyPrefix", second(s10.Insert(ctx, at("p", "r", with(reserved.PropertyPrefix+"Other", "x")))), table.ErrInvalidEntity},
		{"a reserved name in a merge", second(s10.Update(ctx, at("p", "r", with(reserved.PropertyPrefix+"Other", "x")), azcore.ETagAny, table.Merge)), table.ErrInvalidEntity},
		{"the zero Mode", second(s10.Update(ctx, at("p", "r", bag(3, 0)), azcore.ETagAny, table.Mode{})), wideentity.ErrInvalid},
		{"a property name with a space", second(s10.Insert(ctx, at("p", "r", with("a b", 1)))), table.ErrInvalidEntity},
		{"an unsigned value", second(s10.Insert(ctx, at("p", "r", with("U", uint64(1))))), table.ErrInvalidEntity},
		{"a string over 64 KiB", second(s10.Insert(ctx, at("p", "r", with("S", strings.Repeat("x", 40000))))), table.ErrTooLarge},
		{"no ETag", second(s10.Update(ctx, at("p", "r", bag(3, 0)), "", table.Replace)), table.ErrNoETag},
		{"no ETag for a delete", s10.Delete(ctx, "p", "r", ""), table.ErrNoETag},
		{"Fields update of nothing", second(s10.Update(ctx, at("p", "r", bag(3, 0)), azcore.ETagAny, table.Fields())), wideentity.ErrInvalid},
		{"Fields update of a property v lacks", second(s10.Update(ctx, at("p", "r", bag(3, 0)), azcore.ETagAny, table.Fields("P0003"))), wideentity.ErrInvalid},
		{"Fields update of a reserved name", second(s10.Update(ctx, at("p", "r", with(wideentity.VersionProperty, "x")), azcore.ETagAny, table.Fields(wideentity.VersionProperty))), table.ErrInvalidEntity},
	}
	for _, c := range cases {
		invalid(t, c.what, c.err, c.want)
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	for _, o := range []*wideentity.Options[table.Dynamic]{{Parts: -1}, {Parts: table.Storage.MaxBatchOps - 1 + 1}} {
		invalid(t, fmt.Sprintf("New(%+v)", o), second(wideentity.New(f.tbl, o)))
	}
	invalid(t, "New without a table", second(wideentity.New[table.Dynamic](nil, nil)))
	invalid(t, "New of a type with a channel", second(wideentity.New[struct{ C chan int }](f.tbl, nil)), table.ErrInvalidEntity)
	invalid(t, "New of a type with a reserved field name", second(wideentity.New[struct{ TkWide string }](f.tbl, nil)), table.ErrInvalidEntity)
	invalid(t, "New of 430 fields in one part", second(wideentity.New(f.tbl, &wideentity.Options[year]{Parts: 1})), table.ErrTooLarge)
	// What fits is written: 251 properties in one part; 60 values of 48 KiB
	// over 10 parts (a transaction of about 3.9 MiB).
	if _, err := s1.Insert(ctx, at("p", "full", bag(table.Storage.MaxProperties-1, 0))); err != nil {
		t.Fatalf("251 properties in one part: %v", err)
	}
	if _, err := s10.Insert(ctx, at("p", "bytes", binary(60))); err != nil {
		t.Fatalf("60 values of 48 KiB: %v", err)
	}
	if e, err := s10.Get(ctx, "p", "bytes"); err != nil || len(e.Value.Properties) != 60 || len(e.Value.Properties["B059"].([]byte)) != 48<<10 {
		t.Fatalf("Get = %d properties, %v", len(e.Value.Properties), err)
	}
}

// TestTypedStructOver252Fields: a struct of 430 fields round-trips
// exactly, with every EDM type (Int64 beyond 2^53, DateTime at 100 ns,
// Binary empty and not, Guid, whole-number Double), its keys, Meta and
// extra map; no reserved property reaches the extra map.
func TestTypedStructOver252Fields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[year](t, f, 3)
	ctx := context.Background()
	in := fullYear()
	f.ft.Reset()
	in.Sensor, in.Year = "sensor-7", "2024"
	res, err := s.Insert(ctx, in)
	if err != nil || f.ft.Count() != 1 {
		t.Fatalf("Insert = %v in %d round trips", err, f.ft.Count())
	}
	f.ft.Reset()
	e, err := s.Get(ctx, "sensor-7", "2024")
	if err != nil || f.ft.Count() != 1 {
		t.Fatalf("Get = %v in %d round trips", err, f.ft.Count())
	}
	want := in
	want.Sensor, want.Year = "sensor-7", "2024"
	if e.ETag != res.ETag || e.Value.ETag != res.ETag || e.Value.Timestamp.IsZero() {
		t.Fatalf("ETag %q, Meta %+v, want %q", e.ETag, e.Value.Meta, res.ETag)
	}
	got := e.Value
	got.Meta = table.Meta{}
	if diff := differences(got, want); diff != "" {
		t.Fatalf("round trip: %s", diff)
	}
	// One day is one merge (and the header's), one round trip.
	f.ft.Reset()
	upd := year{Sensor: "sensor-7", Year: "2024", D200: 42}
	if _, err := s.Update(ctx, upd, e.ETag, table.Fields("D200")); err != nil || f.ft.Count() != 1 {
		t.Fatalf("Fields update = %v in %d round trips", err, f.ft.Count())
	}
	e, _ = s.Get(ctx, "sensor-7", "2024")
	if e.Value.D200 != 42 || e.Value.D001 != want.D001 {
		t.Fatalf("after Fields update: D200 = %d, D001 = %d", e.Value.D200, e.Value.D001)
	}
}

// TestKeyErrors: an invalid key, in any operation, matches both ErrInvalid
// and table.ErrInvalidKey, and nothing is sent.
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	ctx := context.Background()
	long := strings.Repeat("r", 1020)
	cases := []struct {
		what string
		err  error
	}{
		{"Insert, a PartitionKey with '/'", second(s.Insert(ctx, at("a/b", "r", bag(3, 0))))},
		{"Get, an empty PartitionKey", second(s.Get(ctx, "", "r"))},
		{"Get, a reserved RowKey", second(s.Get(ctx, "p", reserved.Prefix+"x"))},
		{"Delete, a reserved PartitionKey", s.Delete(ctx, reserved.Prefix+"x", "r", azcore.ETagAny)},
		{"Get, a RowKey too long for its rows", second(s.Get(ctx, "p", long))},
		{"Update, a PartitionKey with '#'", second(s.Update(ctx, at("a#b", "r", bag(3, 0)), azcore.ETagAny, table.Replace))},
		{"Fields update, an empty PartitionKey", second(s.Update(ctx, at("", "r", bag(3, 0)), azcore.ETagAny, table.Fields("P0000")))},
		{"Delete, a RowKey too long", s.Delete(ctx, "p", long, azcore.ETagAny)},
		{"Modify, a PartitionKey with a control character", second(s.Modify(ctx, "a\x01", "r", func(*table.Dynamic) error { return nil }))},
	}
	for _, c := range cases {
		invalid(t, c.what, c.err, table.ErrInvalidKey)
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
