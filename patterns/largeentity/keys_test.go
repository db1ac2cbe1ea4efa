package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// badge has no key fields: its keys come from Options.Keys.
type badge struct {
	Site, Number string
	Photo        []byte `largeentity:"offload"`
}

func badgeKeys(b *badge) (string, string) { return b.Site, "badge-" + b.Number }

// TestKeys: writes take an entity's keys from Options.Keys (or T's key
// fields), reads return them in the envelope; a Store whose T has no keys
// reads and deletes, and its writes fail before the network; Modify
// refuses a change of the keys and writes nothing.
func TestKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s := newStore(t, f, &largeentity.Options[badge]{Keys: badgeKeys})
	v := badge{Site: "Paris", Number: "7", Photo: photo(40<<10, 1)}
	res, err := s.Insert(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "Paris", "badge-7", nil)
	if err != nil || got.PartitionKey != "Paris" || got.RowKey != "badge-7" || got.ETag != res.ETag || got.Value.Number != "7" || !bytes.Equal(got.Value.Photo, v.Photo) {
		t.Fatalf("Get = (%q, %q) %q %q, %v", got.PartitionKey, got.RowKey, got.ETag, got.Value.Number, err)
	}
	v.Photo = photo(40<<10, 2)
	res, err = s.Update(ctx, v, got.ETag)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range s.Range(ctx, "Paris", "", "", nil) {
		if err != nil || e.PartitionKey != "Paris" || e.RowKey != "badge-7" || e.ETag != res.ETag || !bytes.Equal(e.Value.Photo, v.Photo) {
			t.Fatalf("Range = (%q, %q) %q, %v", e.PartitionKey, e.RowKey, e.ETag, err)
		}
	}
	f.reset()
	_, err = s.Modify(ctx, "Paris", "badge-7", func(b *badge) error { b.Number = "8"; return nil })
	invalid(t, "Modify that changes the keys", err, table.ErrInvalidKey)
	f.trips(t, "Modify that changes the keys (the read only)", 1, 1)
	m, err := s.Modify(ctx, "Paris", "badge-7", func(b *badge) error { b.Photo = photo(40<<10, 3); return nil })
	if err != nil || m.PartitionKey != "Paris" || m.RowKey != "badge-7" || m.ETag == res.ETag || len(m.Blobs) != 1 {
		t.Fatalf("Modify = (%q, %q) %q %d blobs, %v", m.PartitionKey, m.RowKey, m.ETag, len(m.Blobs), err)
	}

	// The same type without Options.Keys: it reads, it deletes, it does
	// not write.
	r := newStore[badge](t, f, nil)
	got, err = r.Get(ctx, "Paris", "badge-7", nil)
	if err != nil || got.ETag != m.ETag || !bytes.Equal(got.Value.Photo, photo(40<<10, 3)) {
		t.Fatalf("Get without keys = %q, %v", got.ETag, err)
	}
	f.reset()
	invalid(t, "Insert without keys", second(r.Insert(ctx, v)), table.ErrInvalidEntity)
	invalid(t, "Update without keys", second(r.Update(ctx, v, azcore.ETagAny)), table.ErrInvalidEntity)
	invalid(t, "Modify without keys", second(r.Modify(ctx, "Paris", "badge-7", func(*badge) error { return nil })), table.ErrInvalidEntity)
	f.trips(t, "writes without keys", 0, 0)
	if err := r.Delete(ctx, "Paris", "badge-7", got.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "Paris", "badge-7", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
}

// TestReservedNamesInExtra: T's extra map cannot write a property under
// reserved.PropertyPrefix (a forged pointer, or any other), although
// the Store writes through a view that may: refused before the network.
func TestReservedNamesInExtra(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	type open struct {
		PartitionKey, RowKey string
		Photo                []byte         `largeentity:"offload"`
		More                 map[string]any `table:",extra"`
	}
	s := newStore[open](t, f, nil)
	f.reset()
	for _, name := range []string{largeentity.PointerPrefix + "Photo", largeentity.PointerPrefix + "CV", reserved.PropertyPrefix + "Other"} {
		v := open{PartitionKey: "p", RowKey: "1", Photo: []byte("x"), More: map[string]any{name: `{"blob":"elsewhere","size":1,"sha256":"00"}`}}
		invalid(t, name+" in Insert", second(s.Insert(ctx, v)), table.ErrInvalidEntity)
		invalid(t, name+" in Update", second(s.Update(ctx, v, azcore.ETagAny)), table.ErrInvalidEntity)
	}
	f.trips(t, "writes of reserved names", 0, 0)
	if _, err := s.Insert(ctx, open{PartitionKey: "p", RowKey: "1", Photo: []byte("x"), More: map[string]any{"Note": "kept"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "p", "1", nil); err != nil || got.Value.More["Note"] != "kept" || string(got.Value.Photo) != "x" {
		t.Fatalf("Get = %+v, %v", got.Value, err)
	}
}
