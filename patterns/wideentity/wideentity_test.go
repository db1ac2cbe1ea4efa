package wideentity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/patterns/wideentity"
	"github.com/tablekit/tablekit/retry"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

var fast = retry.Policy{Default: time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 200, FullJitter: true}

// fixture is a table seen through a fault-injecting client (the stores)
// and through a clean one (the truth).
type fixture struct {
	env   *tabletest.Env
	name  string
	ft    *faults.Transport
	tbl   *table.Table[table.Dynamic] // through ft
	clean *table.Table[table.Dynamic]
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	o := &aztables.ClientOptions{}
	o.Transport = ft
	retry.Policy{Default: time.Millisecond, Max: 2 * time.Millisecond, MaxRetries: 5}.ApplyTo(&o.ClientOptions)
	name := env.Name()
	tbl, err := table.New[table.Dynamic](env.CreateTable(name, o))
	if err != nil {
		t.Fatal(err)
	}
	clean, err := table.New[table.Dynamic](env.TableClient(name, nil))
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	return &fixture{env: env, name: name, ft: ft, tbl: tbl, clean: clean}
}

func newStore[T any](t *testing.T, f *fixture, parts int) *wideentity.Store[T] {
	t.Helper()
	s, err := wideentity.New[T](f.tbl, &wideentity.Options{Parts: parts, Retry: &fast})
	if err != nil {
		t.Fatal(err)
	}
	return s
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
	res, err := s.Insert(ctx, "sensor", "2024", bag(600, 0))
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

	res, err = s.Update(ctx, "sensor", "2024", bag(600, 1000), e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	trips("Update with an ETag", 1)
	if _, err := s.Update(ctx, "sensor", "2024", bag(600, 2000), e.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v", err)
	}
	trips("Update with a stale ETag", 1)
	one := table.Dynamic{Properties: map[string]any{"P0007": int64(-7)}}
	res2, err := s.UpdateFields(ctx, "sensor", "2024", one, azcore.ETagAny, "P0007")
	if err != nil {
		t.Fatal(err)
	}
	trips("UpdateFields", 1)
	if res2.ETag == res.ETag {
		t.Fatal("UpdateFields did not change the entity's ETag")
	}
	if _, err := s.Update(ctx, "sensor", "2024", bag(600, 2000), res.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with the ETag from before an UpdateFields = %v", err)
	}
	f.ft.Reset()
	two := table.Dynamic{Properties: map[string]any{"P0001": int64(-1), "P0500": int64(-500), "New": "added"}}
	res3, err := s.UpdateFields(ctx, "sensor", "2024", two, res2.ETag, "P0001", "P0500", "New")
	if err != nil {
		t.Fatal(err)
	}
	trips("UpdateFields with an ETag", 1)
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
	if _, err := s.Update(ctx, "sensor", "2024", bag(3, 0), azcore.ETagAny); err != nil {
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
		"Update":       second(s.Update(ctx, "sensor", "2024", bag(3, 0), azcore.ETagAny)),
		"UpdateFields": second(s.UpdateFields(ctx, "sensor", "2024", one, azcore.ETagAny, "P0007")),
		"Delete":       s.Delete(ctx, "sensor", "2024", azcore.ETagAny),
	} {
		if !errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrOutcomeUnknown) {
			t.Errorf("%s of a missing entity = %v", what, err)
		}
	}
	trips("Update, UpdateFields and Delete of a missing entity", 6)
	if rks, _ := f.rows(t, "sensor"); len(rks) != 0 {
		t.Fatalf("rows after writes to a missing entity: %v", rks)
	}
	f.ft.Reset()
	if _, err := s.Insert(ctx, "sensor", "2025", bag(10, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, "sensor", "2025", bag(10, 0)); !errors.Is(err, table.ErrAlreadyExists) {
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
