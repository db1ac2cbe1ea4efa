package encryption_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestFilterOnEncryptedFieldRefused: a filter that compares an encrypted
// field (whose stored value is ciphertext) would send the plaintext to the
// service and match nothing: Query, QueryEntities, QueryPage and Reencrypt
// refuse it with ErrInvalid (and table.ErrInvalidFilter) before sending
// anything, wherever the field sits in the filter. Filters that only
// mention a field's name inside a string, or compare plain properties and
// blind indexes, still run.
func TestFilterOnEncryptedFieldRefused(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	a := alice()
	if _, err := p.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	refused := map[string]table.Filter{
		"Eq on SSN":                table.Eq("SSN", a.SSN),
		"And with Email":           table.And(table.PartitionKey("Sales"), table.Eq("Email", a.Email)),
		"Or, Not, Age":             table.Or(table.Eq("Name", "x"), table.Not(table.Gt("Age", 40))),
		"Nick, nested":             table.And(table.PartitionKey("Sales"), table.Or(table.Eq("Name", "x"), table.And(table.Ne("Name", "y"), table.Eq("Nick", "Al")))),
		"Born, a time":             table.Ge("Born", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)),
		"Big, an Int64":            table.Eq("Big", int64(5)),
		"a quote inside a literal": table.Or(table.Eq("Name", "it's"), table.Eq("SSN", "1")),
	}
	for what, f := range refused {
		check := func(op string, err error) {
			t.Helper()
			var e *encryption.Error
			if !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalidFilter) || !errors.As(err, &e) || e.Property == "" {
				t.Errorf("%s, %s: %v, want ErrInvalid and table.ErrInvalidFilter naming the field", what, op, err)
			}
		}
		n := 0
		for _, err := range p.Query(ctx, &table.Query{Filter: f}) {
			check("Query", err)
			n++
		}
		for _, err := range p.QueryEntities(ctx, &table.Query{Filter: f}) {
			check("QueryEntities", err)
			n++
		}
		if n != 2 {
			t.Errorf("%s: %d results, want one error each", what, n)
		}
		_, err := p.QueryPage(ctx, &table.Query{Filter: f})
		check("QueryPage", err)
		_, err = p.Reencrypt(ctx, &encryption.ReencryptOptions{Query: &table.Query{Filter: f}})
		check("Reencrypt", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent for refused filters", n)
	}
	where, err := p.Where("SSN", a.SSN)
	if err != nil {
		t.Fatal(err)
	}
	for what, f := range map[string]table.Filter{
		"SSN inside a string":            table.Eq("Name", "SSN"),
		"a string that reads like a SSN": table.And(table.Eq("Name", "Alice' or SSN eq '1"), table.PartitionKey("Sales")),
		"the blind index":                table.And(table.PartitionKey("Sales"), where),
		"a binary literal":               table.Ne("Name", []byte{1, 2}),
	} {
		got, err := table.Collect(p.Query(ctx, &table.Query{Filter: f}))
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if what == "the blind index" && len(got) != 1 {
			t.Errorf("%s: %d entities", what, len(got))
		}
	}
}

// TestFindSkipsUnverifiableRows: rows that match the blind value but
// cannot be verified (a value that fails to decrypt, a ciphertext moved
// from another entity, an unknown key id, a row that does not decode into
// T), as a writer of another partition could plant them, are skipped:
// they neither appear in nor stop a Find, as its documentation says.
func TestFindSkipsUnverifiableRows(t *testing.T) {
	testrig.StorageOnly(t, "which row a page holds first: key order; TestCosmosEncryption covers Query, Find and Reencrypt on Cosmos DB")
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	for _, pk := range []string{"Sales", "HR", "AAA"} {
		a := alice()
		a.PartitionKey = pk
		if _, err := p.Insert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	genuine, err := r.tbl.Get(ctx, "Sales", "001", nil)
	if err != nil {
		t.Fatal(err)
	}
	bidx := genuine.Value.Properties["Email_bidx"]
	// Planted in partition "A", which the query reads first.
	unknownKey := append([]byte{1, 5}, "nokey"...)
	unknownKey = append(unknownKey, make([]byte, 12+16+16)...)
	for rk, email := range map[string]any{
		"1 garbage":     []byte("not a value of this format"),
		"2 plain":       "alice@contoso.com",
		"3 moved":       genuine.Value.Properties["Email"],
		"4 unknown key": unknownKey,
	} {
		d := table.Dynamic{PartitionKey: "A", RowKey: rk, Properties: map[string]any{"Email": email, "Email_bidx": bidx}}
		if _, err := r.tbl.Insert(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// A genuine entity whose plain property was changed to another type.
	tamper(t, r, "AAA", "001", func(d *table.Dynamic) { d.Properties["Name"] = int32(7) })

	r.Faults.Reset()
	var got []string
	for v, err := range p.Find(ctx, "", "Email", "alice@contoso.com") {
		if err != nil {
			t.Fatalf("Find after %v: %v", got, err)
		}
		got = append(got, v.PartitionKey+"/"+v.RowKey)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"HR/001", "Sales/001"}) || r.Faults.Count() != 1 {
		t.Fatalf("Find = %v in %d round trips, want HR/001 and Sales/001 in 1", got, r.Faults.Count())
	}
	// Query with Where reads the same rows unverified and reports the
	// first one that fails.
	where, _ := p.Where("Email", "alice@contoso.com")
	_, err = table.Collect(p.Query(ctx, &table.Query{Filter: where}))
	if !errors.Is(err, encryption.ErrDecrypt) {
		t.Fatalf("Query with Where: %v", err)
	}
}

// TestKeyErrors: an invalid key, in every operation that takes one,
// matches both ErrInvalid and table.ErrInvalidKey, and nothing is sent.
func TestKeyErrors(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	with := func(pk, rk string) Person {
		a := alice()
		a.PartitionKey, a.RowKey = pk, rk
		return a
	}
	second := func(_ any, err error) error { return err }
	secondOps := func(_ table.Change, err error) error { return err }
	r.Faults.Reset()
	for what, err := range map[string]error{
		"Insert, '/' in the PartitionKey":  second(p.Insert(ctx, with("a/b", "1"))),
		"Upsert, '#' in the RowKey":        second(p.Upsert(ctx, with("Sales", "a#b"), table.Merge)),
		"Update, '?' in the RowKey":        second(p.Update(ctx, with("Sales", "a?"), azcore.ETagAny, table.Merge)),
		"Delete, an empty PartitionKey":    p.Delete(ctx, "", "1", azcore.ETagAny),
		"Get, '\\' in the PartitionKey":    second(p.Get(ctx, `a\b`, "1", nil)),
		"InsertOps, '/' in the RowKey":     secondOps(p.InsertOps(ctx, with("Sales", "a/b"))),
		"UpsertOps, a control character":   secondOps(p.UpsertOps(ctx, with("Sales", "a\x01"), table.Merge)),
		"UpdateOps, an empty PartitionKey": secondOps(p.UpdateOps(ctx, with("", "1"), azcore.ETagAny, table.Merge)),
	} {
		if !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) || !errors.Is(err, table.ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want ErrInvalid, table.ErrInvalid and table.ErrInvalidKey in one line", what, err)
		}
	}
	for _, err := range p.Find(ctx, "a/b", "Email", "x") {
		if !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("Find, '/' in the PartitionKey: %v, want ErrInvalid and table.ErrInvalidKey", err)
		}
	}
	_, err := p.Modify(ctx, "a/b", "1", func(*Person) error { return nil }, nil)
	if !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Modify, '/' in the PartitionKey: %v, want ErrInvalid and table.ErrInvalidKey", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
