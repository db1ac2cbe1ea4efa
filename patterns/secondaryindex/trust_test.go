package secondaryindex_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// plant writes a row with a raw aztables client, as a tenant holding a
// SAS scoped to its partition could (Azurite does not enforce SAS ranges,
// so the account client stands in for it).
func plant(t *testing.T, c *aztables.Client, pk, rk string, props map[string]any) {
	t.Helper()
	m := map[string]any{"PartitionKey": pk, "RowKey": rk}
	for k, v := range props {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpsertEntity(context.Background(), b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
}

// A row planted in Sales (a tenant of Sales can write there) that names
// HR's entity: no lookup in Sales returns HR's entity or any of its
// fields; each reports ErrCorrupt, Check reports the rows as orphans and
// Rebuild removes them. A copy whose RowKey does not end with the id it
// names is refused the same way.
func TestForgedCopyStaysInItsPartition(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), true)
	ctx := context.Background()
	s := r.store
	w := r.worker(t)
	hr := Employee{Department: "HR", ID: "000007", FirstName: "Secret", LastName: "Keeper", Email: "keeper@contoso.com", Age: 61}
	for _, e := range []Employee{jo(), hr} {
		if _, err := s.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, w)
	raw := r.Clean(r.tbl.Client())
	toHR := map[string]any{secondaryindex.RefProperty: "HR!000007"}
	plant(t, raw, "Sales", "email!a@evil.2Ecom", map[string]any{secondaryindex.RefProperty: "HR!000007", "FirstName": "Forged"})
	plant(t, raw, "Sales", "name!Evil!X!000007", toHR)
	plant(t, raw, "Sales", "name!Evil!Y!000223", map[string]any{secondaryindex.RefProperty: "Sales!999999"}) // RowKey names another id
	plant(t, raw, "email2!Sales", "email2!a@evil.2Ecom", toHR)
	// In the organisation-wide partition: a RowKey of Sales/000223 naming HR's.
	plant(t, r.Clean(r.other.Client()), "everyone", keys.Join("age", "062", "Sales", "000223"), toHR)

	noHR := func(what string, e secondaryindex.Entity[Employee], err error) {
		t.Helper()
		if e.PartitionKey == "HR" || e.Value.Department == "HR" || e.Value.FirstName == "Secret" || e.RowKey == "000007" {
			t.Errorf("%s returned HR's entity: %+v", what, e)
		}
		if err == nil {
			t.Errorf("%s: no error for a forged copy", what)
		} else if !errors.Is(err, secondaryindex.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", what, err)
		}
	}
	for _, f := range []bool{false, true} {
		e, err := s.Lookup(ctx, "Sales", "email", "a@evil.com", &secondaryindex.LookupOptions{Fetch: f})
		noHR(fmt.Sprint("Lookup email, Fetch ", f), e, err)
		e, err = s.Lookup(ctx, "Sales", "email2", "a@evil.com", &secondaryindex.LookupOptions{Fetch: f})
		noHR(fmt.Sprint("Lookup email2, Fetch ", f), e, err)
	}
	seq := func(what string, from, to any, index string) {
		t.Helper()
		var last error
		pk := "Sales"
		if index == "age" {
			pk = ""
		}
		for e, err := range s.Range(ctx, pk, index, from, to, nil) {
			if e.PartitionKey == "HR" || e.Value.FirstName == "Secret" || e.RowKey == "999999" {
				t.Errorf("%s returned a forged entity: %+v", what, e)
			}
			last = err
		}
		if !errors.Is(last, secondaryindex.ErrCorrupt) {
			t.Errorf("%s ended with %v, want ErrCorrupt", what, last)
		}
	}
	seq("Find Evil, X", []any{"Evil", "X"}, []any{"Evil", "X"}, "name")
	seq("Find Evil, Y", []any{"Evil", "Y"}, []any{"Evil", "Y"}, "name")
	seq("Range of emails", "a", "z", "email")
	seq("Range of email2", "a", "z", "email2")
	seq("Find age 062", 62, 62, "age")

	// Check sees every forged row as drift; Rebuild removes them and the
	// honest data stays.
	d, err := s.Check(ctx, "")
	if err != nil || len(d.Orphans) != 5 || len(d.Missing)+len(d.Stale) != 0 {
		t.Fatalf("Check: %+v, %v; want the 5 forged rows as orphans", d, err)
	}
	if d, err = s.Rebuild(ctx, ""); err != nil || d.Fixed != 5 {
		t.Fatalf("Rebuild: %+v, %v", d, err)
	}
	r.clean(t, "")
	if _, err := s.Lookup(ctx, "Sales", "email", "a@evil.com", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("after Rebuild: %v", err)
	}
	if e, err := s.Lookup(ctx, "HR", "email", "keeper@contoso.com", nil); err != nil || e.Value != hr {
		t.Fatalf("HR's own lookup: %+v, %v", e, err)
	}
	if e, err := s.Lookup(ctx, "Sales", "email2", "jonesj@contoso.com", nil); err != nil || e.Value != jo() {
		t.Fatalf("Sales's own lookup: %+v, %v", e, err)
	}
}

type person struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	SSN        string
}

func key32(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// A plaintext SSN added to a Listed copy (which lists Name only) never
// reaches the entity read from the copy: a copy decodes only its index's
// fields, and a Sealer's fields never come from a copy.
func TestForgedCopyFieldsStaySealed(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, false)
	ctx := context.Background()
	ks, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": key32("k1")})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.New[person](r.tbl, ks, []string{"SSN"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := secondaryindex.New(r.tbl, &secondaryindex.Options[person]{Primary: "p", Sealer: enc, Indexes: []secondaryindex.Index[person]{
		{Name: "name", Unique: true, Holds: secondaryindex.Listed, Fields: []string{"Name"}, On: []string{"Name"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, person{Department: "Sales", ID: "1", Name: "Xavier", SSN: "078-05-1120"}); err != nil {
		t.Fatal(err)
	}
	raw := r.Clean(r.tbl.Client())
	plant(t, raw, "Sales", keys.Join("name", "Xavier"), map[string]any{"SSN": "999-99-9999"})
	r.Faults.Reset()
	e, err := s.Lookup(ctx, "Sales", "name", "Xavier", nil)
	if err != nil || !e.FromCopy || e.Value.Name != "Xavier" || e.Value.SSN != "" || r.Faults.Count() != 1 {
		t.Fatalf("Lookup from the copy: %+v, %v in %d round trips; want Name only, in 1", e, err, r.Faults.Count())
	}
	for e, err := range s.Find(ctx, "Sales", "name", "X", nil) {
		if err != nil || e.Value.SSN != "" {
			t.Fatalf("Find from the copy: %+v, %v", e, err)
		}
	}
	if e, err := s.Lookup(ctx, "Sales", "name", "Xavier", &secondaryindex.LookupOptions{Fetch: true}); err != nil || e.Value.SSN != "078-05-1120" {
		t.Fatalf("Lookup with Fetch: %+v, %v", e, err)
	}
}

// An intent planted on the queue that names, as its primary's old copies,
// rows its index could not have written for it (another index's copy of
// the same primary, in another partition) deletes nothing.
func TestForgedIntentDeletesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), true)
	ctx := context.Background()
	w := r.worker(t)
	if _, err := r.store.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	err := secondaryindex.Reconcile(ctx, r.store, "Sales", "000223",
		[3]string{"email2", "Sales", "email!jonesj@contoso.2Ecom"},      // the SamePartition copy
		[3]string{"age", "everyone", keys.Join("age", "029", "000223")}, // not this index's RowKey form
		[3]string{"email2", "email2!Sales", "name!Jones!Jo!000223"})     // another index's prefix
	if err != nil {
		t.Fatal(err)
	}
	r.clean(t, "")
}

// A forged row holding a unique value's key in an index partition does
// not keep the value from its entity: the worker replaces a row its index
// could not have written.
func TestForgedUniqueRowIsReplaced(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, true)
	ctx := context.Background()
	plant(t, r.Clean(r.tbl.Client()), "email2!Sales", "email2!jonesj@contoso.2Ecom", map[string]any{secondaryindex.RefProperty: "HR!000007"})
	w := r.worker(t)
	if _, err := r.store.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if e, err := r.store.Lookup(ctx, "Sales", "email2", "jonesj@contoso.com", nil); err != nil || e.Value != jo() {
		t.Fatalf("Lookup: %+v, %v", e, err)
	}
	r.clean(t, "")
}

// A primary another writer planted in plaintext beside sealed ones (or one
// sealed with a key that cannot be had now) cannot be opened: Check and
// Rebuild skip it, report it as Unreadable, leave its copies alone, and go
// on to check and repair the rest of the table.
func TestRebuildSkipsUnreadablePrimaries(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, false)
	ctx := context.Background()
	ks, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": key32("k1")})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.New[person](r.tbl, ks, []string{"SSN"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := secondaryindex.New(r.tbl, &secondaryindex.Options[person]{Primary: "p", Sealer: enc, Indexes: []secondaryindex.Index[person]{
		{Name: "name", Unique: true, Holds: secondaryindex.KeysOnly, On: []string{"Name"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []person{{Department: "HR", ID: "1", Name: "Ann", SSN: "1"}, {Department: "Sales", ID: "2", Name: "Bo", SSN: "2"}} {
		if _, err := s.Insert(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	raw := r.Clean(r.tbl.Client())
	plant(t, raw, "Sales", keys.Join("p", "9"), map[string]any{"Name": "Mallory", "SSN": "plaintext"})
	plant(t, raw, "Sales", keys.Join("name", "Mallory"), map[string]any{secondaryindex.RefProperty: keys.Join("Sales", "9")})
	// HR drifts: its copy is deleted.
	if err := r.tbl.Delete(ctx, "HR", keys.Join("name", "Ann"), "*"); err != nil {
		t.Fatal(err)
	}
	d, err := s.Rebuild(ctx, "")
	if err != nil {
		t.Fatalf("Rebuild with a planted plaintext primary: %v", err)
	}
	if len(d.Unreadable) != 1 || d.Unreadable[0] != (secondaryindex.CopyRef{PartitionKey: "Sales", RowKey: "9"}) || d.Fixed != 1 || len(d.Orphans) != 0 {
		t.Fatalf("Rebuild = %+v; want the planted primary Unreadable, HR's copy fixed, no orphans", d)
	}
	if _, err := raw.GetEntity(ctx, "Sales", keys.Join("name", "Mallory"), nil); err != nil {
		t.Fatalf("the unreadable primary's copy was deleted: %v", err)
	}
	if d, err := s.Check(ctx, ""); err != nil || !d.Clean() || len(d.Unreadable) != 1 {
		t.Fatalf("Check after Rebuild = %+v, %v", d, err)
	}
}
