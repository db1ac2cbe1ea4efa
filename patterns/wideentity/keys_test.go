package wideentity_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// reading has no key fields: its keys come from Options.Keys.
type reading struct {
	Station, Day string
	Mm           []int64 `table:",json"`
	Note         string
}

func readingKeys(r *reading) (string, string) { return r.Station, "day-" + r.Day }

// TestKeys: New with nil Options stores DefaultParts parts; writes take
// the logical keys from the value (T's key fields, Options.Keys), reads
// return them in the envelope; a Store whose T has no keys reads and
// deletes, and its writes fail before the network; Modify refuses a change
// of the keys and writes nothing.
func TestKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	d, err := wideentity.New[table.Dynamic](f.tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Insert(ctx, at("bag", "1", bag(30, 0))); err != nil {
		t.Fatal(err)
	}
	if e, err := d.Get(ctx, "bag", "1"); err != nil || e.Parts != wideentity.DefaultPartsForTest || e.PartitionKey != "bag" || e.RowKey != "1" || e.Value.RowKey != "1" {
		t.Fatalf("Get = %d parts, (%q, %q), %v", e.Parts, e.PartitionKey, e.RowKey, err)
	}
	if rks, _ := f.rows(t, "bag"); !slices.Equal(rks, wantRows("1", wideentity.DefaultPartsForTest)) {
		t.Fatalf("rows %v, want %v", rks, wantRows("1", wideentity.DefaultPartsForTest))
	}

	s, err := wideentity.New(f.tbl, &wideentity.Options[reading]{Parts: 3, Keys: readingKeys})
	if err != nil {
		t.Fatal(err)
	}
	v := reading{Station: "Oslo", Day: "2024-03-01", Mm: []int64{1, 0, 2}, Note: "wet"}
	res, err := s.Insert(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, "Oslo", "day-2024-03-01")
	if err != nil || e.PartitionKey != "Oslo" || e.RowKey != "day-2024-03-01" || e.ETag != res.ETag || e.Value.Note != "wet" || e.Value.Day != "2024-03-01" {
		t.Fatalf("Get = (%q, %q) %q %+v, %v", e.PartitionKey, e.RowKey, e.ETag, e.Value, err)
	}
	v.Note = "dry"
	if res, err = s.Update(ctx, v, e.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	_, err = s.Modify(ctx, "Oslo", "day-2024-03-01", func(r *reading) error { r.Day = "2024-03-02"; return nil })
	invalid(t, "Modify that changes the keys", err, table.ErrInvalidKey)
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("Modify that changes the keys: %d round trips, want 1 (the read)", n)
	}
	m, err := s.Modify(ctx, "Oslo", "day-2024-03-01", func(r *reading) error { r.Note += "!"; return nil })
	if err != nil || m.PartitionKey != "Oslo" || m.RowKey != "day-2024-03-01" || m.ETag == res.ETag || m.Value.Note != "dry!" || m.Parts != 3 {
		t.Fatalf("Modify = (%q, %q) %q %q, %v", m.PartitionKey, m.RowKey, m.ETag, m.Value.Note, err)
	}

	// The same type without Options.Keys: it reads, it deletes, it does
	// not write.
	r, err := wideentity.New(f.tbl, &wideentity.Options[reading]{Parts: 3})
	if err != nil {
		t.Fatal(err)
	}
	e, err = r.Get(ctx, "Oslo", "day-2024-03-01")
	if err != nil || e.ETag != m.ETag || e.Value.Note != "dry!" {
		t.Fatalf("Get without keys = %q, %v", e.ETag, err)
	}
	f.ft.Reset()
	invalid(t, "Insert without keys", second(r.Insert(ctx, v)), table.ErrInvalidEntity)
	invalid(t, "Update without keys", second(r.Update(ctx, v, azcore.ETagAny, table.Replace)), table.ErrInvalidEntity)
	invalid(t, "Modify without keys", second(r.Modify(ctx, "Oslo", "day-2024-03-01", func(*reading) error { return nil })), table.ErrInvalidEntity)
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("writes without keys: %d requests", n)
	}
	if err := r.Delete(ctx, "Oslo", "day-2024-03-01", e.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "Oslo", "day-2024-03-01"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
}

// TestMerge: Update with table.Merge writes every property the value
// holds into its part row and keeps the others, in one transaction
// without a read (three round trips on another layout), conditioned on
// the ETag like any write; a typed value merges what a merge of a
// table.Table[T] sends, so zero numbers overwrite and nil pointers and
// zero times keep the stored values.
func TestMerge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	s2 := newStore[table.Dynamic](t, f, 2)
	ctx := context.Background()
	res, err := s.Insert(ctx, at("p", "r", bag(600, 0)))
	if err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	change := table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"P0001": int64(-1), "P0450": int64(-450), "New": "added", "Gone": nil}}
	res2, err := s.Update(ctx, change, res.ETag, table.Merge)
	if err != nil || res2.ETag == res.ETag {
		t.Fatalf("Merge = %+v, %v", res2, err)
	}
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("Merge: %d round trips, want 1", n)
	}
	if _, err := s.Update(ctx, change, res.ETag, table.Merge); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Merge with a stale ETag = %v", err)
	}
	e, err := s.Get(ctx, "p", "r")
	if err != nil || e.ETag != res2.ETag || len(e.Value.Properties) != 601 {
		t.Fatalf("Get = %d properties, %v", len(e.Value.Properties), err)
	}
	for name, want := range map[string]any{"P0000": int64(0), "P0001": int64(-1), "P0450": int64(-450), "P0599": int64(599), "New": "added"} {
		if got := e.Value.Properties[name]; got != want {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}
	// A merge of nothing changes the header's ETag only, whatever the
	// layout; a merge through a Store of another layout writes into the
	// stored one.
	f.ft.Reset()
	empty, err := s2.Update(ctx, table.Dynamic{PartitionKey: "p", RowKey: "r"}, azcore.ETagAny, table.Merge)
	if err != nil || empty.ETag == res2.ETag {
		t.Fatalf("Merge of nothing = %+v, %v", empty, err)
	}
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("Merge of nothing: %d round trips, want 1", n)
	}
	f.ft.Reset()
	if _, err := s2.Update(ctx, at("p", "r", bag(2, 100)), azcore.ETagAny, table.Merge); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 3 {
		t.Fatalf("Merge on another layout: %d round trips, want 3", n)
	}
	if e, err = s.Get(ctx, "p", "r"); err != nil || e.Parts != 4 || len(e.Value.Properties) != 601 || e.Value.Properties["P0000"] != int64(100) || e.Value.Properties["P0001"] != int64(101) {
		t.Fatalf("after merges through another layout: %d parts, %d properties, %v", e.Parts, len(e.Value.Properties), err)
	}

	y := newStore[year](t, f, 3)
	in := fullYear()
	in.Sensor, in.Year = "s", "2024"
	seven := int64(7)
	in.P01 = &seven
	if _, err := y.Insert(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := y.Update(ctx, year{Sensor: "s", Year: "2024", D001: 5}, azcore.ETagAny, table.Merge); err != nil {
		t.Fatal(err)
	}
	got, err := y.Get(ctx, "s", "2024")
	switch {
	case err != nil:
		t.Fatal(err)
	case got.Value.D001 != 5 || got.Value.D002 != 0 || got.Value.S01 != "" || got.Value.F01:
		t.Fatalf("merged values: D001 %d, D002 %d, S01 %q, F01 %v; want 5 and zeros", got.Value.D001, got.Value.D002, got.Value.S01, got.Value.F01)
	case got.Value.P01 == nil || *got.Value.P01 != 7 || !got.Value.T01.Equal(in.T01.Truncate(100)) || got.Value.Extra["Note"] != in.Extra["Note"]:
		t.Fatalf("kept values: P01 %v, T01 %v, extra %v", got.Value.P01, got.Value.T01, got.Value.Extra)
	}
}
