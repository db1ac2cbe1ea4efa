package secondaryindex_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// agent is an indexed entity with an encrypted field and a large value.
type agent struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	Email      string
	SSN        string
	Photo      []byte `largeentity:"offload"`
}

// Options.Large and a Sealer together: the SSN is stored encrypted, the
// photo in a blob, both read back by Get, List and a fetching lookup; a
// lookup by a plain index reads the copy only; Modify keeps both; Check
// and Rebuild see no drift; Sweep takes the replaced photo only; a field
// both sealed and offloaded is refused.
func TestLargeWithSealer(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	ctx := context.Background()
	c := r.Table()
	tbl := testrig.NewTable[table.Dynamic](t, c)
	now := time.Now()
	photos, err := largeentity.New[agent](tbl, r.Container(), &largeentity.Options[agent]{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": key32("k1")})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.New[agent](tbl, ks, []string{"SSN"}, &encryption.Options{Indexes: []encryption.Index{{Field: "SSN"}}, IndexKey: key32("index")})
	if err != nil {
		t.Fatal(err)
	}
	bySSN, err := enc.IndexKey("SSN", func(a *agent) string { return a.SSN })
	if err != nil {
		t.Fatal(err)
	}
	store, err := secondaryindex.New(tbl, &secondaryindex.Options[agent]{Primary: "ag", Sealer: enc, Large: photos, Indexes: []secondaryindex.Index[agent]{
		{Name: "email", Unique: true, Holds: secondaryindex.Listed, Fields: []string{"Name"}, On: []string{"Email"}},
		{Name: "ssn", Unique: true, Holds: secondaryindex.KeysOnly, On: []string{"SSN"}, Key: bySSN},
	}})
	if err != nil {
		t.Fatalf("New with Large and a Sealer: %v", err)
	}
	jo := agent{Department: "Sales", ID: "7", Name: "Jo", Email: "jo@contoso.com", SSN: "078-05-1120", Photo: picture(100<<10, 7)}
	if _, err := store.Insert(ctx, jo); err != nil {
		t.Fatal(err)
	}
	// As stored: the SSN encrypted, the photo a pointer, neither in the
	// clear; the copies hold neither.
	raw := r.Clean(c)
	for pager := raw.NewListEntitiesPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range page.Entities {
			if s := string(row); strings.Contains(s, jo.SSN) || strings.Contains(s, `"Photo"`) {
				t.Fatalf("a stored row holds the SSN or the photo in the clear: %.300s", s)
			}
		}
	}
	both := func(what string, e secondaryindex.Entity[agent], err error, want agent) {
		t.Helper()
		if err != nil || e.Value.SSN != want.SSN || !bytes.Equal(e.Value.Photo, want.Photo) || e.Value.Name != want.Name {
			t.Fatalf("%s: SSN %q, %d photo bytes, %v; want %q and %d bytes", what, e.Value.SSN, len(e.Value.Photo), err, want.SSN, len(want.Photo))
		}
	}
	e, err := store.Get(ctx, "Sales", "7")
	both("Get", e, err, jo)
	for e, err := range store.List(ctx, "Sales", nil) {
		both("List", e, err, jo)
	}
	e, err = store.Lookup(ctx, "Sales", "ssn", jo.SSN, nil)
	both("Lookup by the SSN (its blind value)", e, err, jo)
	r.Faults.Reset()
	e, err = store.Lookup(ctx, "Sales", "email", jo.Email, nil)
	if err != nil || !e.FromCopy || e.Value.Name != "Jo" || e.Value.SSN != "" || e.Value.Photo != nil || r.Faults.Count() != 1 {
		t.Fatalf("Lookup by the plain email = %+v, %v in %d round trips; want the copy's Name, in 1", e.Value, err, r.Faults.Count())
	}
	e, err = store.Lookup(ctx, "Sales", "email", jo.Email, &secondaryindex.LookupOptions{Fetch: true})
	both("Lookup by email with Fetch", e, err, jo)
	// A rename keeps the sealed SSN and the photo's blob.
	if _, err := store.Modify(ctx, "Sales", "7", func(a *agent) error { a.Name = "Joanna"; return nil }); err != nil {
		t.Fatal(err)
	}
	jo.Name = "Joanna"
	e, err = store.Get(ctx, "Sales", "7")
	both("Get after Modify", e, err, jo)
	// A new photo and SSN: the old photo's blob is left to Sweep.
	jo.Photo, jo.SSN = picture(90<<10, 8), "123-45-6789"
	if _, err := store.Update(ctx, jo, e.ETag); err != nil {
		t.Fatal(err)
	}
	e, err = store.Get(ctx, "Sales", "7")
	both("Get after Update", e, err, jo)
	for _, check := range []func(context.Context, string) (secondaryindex.Drift, error){store.Check, store.Rebuild} {
		if d, err := check(ctx, "Sales"); err != nil || !d.Clean() || d.Fixed != 0 || d.Entities != 1 {
			t.Fatalf("Check/Rebuild = %+v, %v; want no drift over 1 entity", d, err)
		}
	}
	now = now.Add(2 * time.Hour /* largeentity's default grace */)
	if sw, err := photos.Sweep(ctx); err != nil || sw.Listed != 2 || sw.Deleted != 1 {
		t.Fatalf("Sweep = %+v, %v; want the replaced photo deleted, the current kept", sw, err)
	}
	e, err = store.Get(ctx, "Sales", "7")
	both("Get after Sweep", e, err, jo)
	if err := store.Delete(ctx, "Sales", "7", e.ETag); err != nil {
		t.Fatal(err)
	}

	// A field both sealed and offloaded: its blob would hold it unsealed.
	sealsPhoto, err := encryption.New[agent](tbl, ks, []string{"SSN", "Photo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secondaryindex.New(tbl, &secondaryindex.Options[agent]{Primary: "ag2", Sealer: sealsPhoto, Large: photos}); !errors.Is(err, secondaryindex.ErrInvalid) || !strings.Contains(err.Error(), "Photo") {
		t.Fatalf("New with a field sealed and offloaded = %v, want ErrInvalid naming Photo", err)
	}
}
