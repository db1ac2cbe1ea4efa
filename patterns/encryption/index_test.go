package encryption_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

func rowKeys(t *testing.T, seq func(func(Person, error) bool)) []string {
	t.Helper()
	var out []string
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.PartitionKey+"/"+v.RowKey)
	}
	slices.Sort(out)
	return out
}

func TestBlindIndexLookup(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	for _, e := range []struct{ pk, rk, email, ssn string }{
		{"Sales", "1", "alice@contoso.com", "111"},
		{"Sales", "2", "  ALICE@Contoso.com ", "222"}, // the same after TrimLower
		{"HR", "3", "alice@contoso.com", "111"},
		{"Sales", "4", "alice@contoso.co", "1111"},
		{"Sales", "5", "bob@contoso.com", "111 "}, // SSN has no normalizer
	} {
		a := alice()
		a.PartitionKey, a.RowKey, a.Email, a.SSN = e.pk, e.rk, e.email, e.ssn
		if _, err := p.Insert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	r.ft.Reset()
	got := rowKeys(t, p.Lookup(ctx, "Email", "Alice@contoso.com", table.Filter{}))
	if !slices.Equal(got, []string{"HR/3", "Sales/1", "Sales/2"}) || r.ft.Count() != 1 {
		t.Errorf("Lookup email: %v in %d round trips", got, r.ft.Count())
	}
	if got := rowKeys(t, p.Lookup(ctx, "Email", "alice@contoso.com", table.PartitionKey("Sales"))); !slices.Equal(got, []string{"Sales/1", "Sales/2"}) {
		t.Errorf("Lookup email in Sales: %v", got)
	}
	if got := rowKeys(t, p.Lookup(ctx, "SSN", "111", table.Filter{})); !slices.Equal(got, []string{"HR/3", "Sales/1"}) {
		t.Errorf("Lookup SSN: %v", got)
	}
	if got := rowKeys(t, p.Lookup(ctx, "SSN", "nobody", table.Filter{})); len(got) != 0 {
		t.Errorf("Lookup of a missing value: %v", got)
	}
	// Where composes with other filters in an ordinary query.
	f, err := p.Where("Email", "bob@contoso.com")
	if err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(t, p.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales"), f)})); !slices.Equal(got, []string{"Sales/5"}) {
		t.Errorf("Where: %v", got)
	}
	if _, err := p.Where("Name", "Alice"); !errors.Is(err, encryption.ErrInvalid) {
		t.Errorf("Where on a field without an index: %v", err)
	}
	// A stale index (a forged or outdated blind value) never yields a
	// non-matching entity: Lookup checks the decrypted value.
	bob, err := r.tbl.Get(ctx, "Sales", "5", nil)
	if err != nil {
		t.Fatal(err)
	}
	alices, err := r.tbl.Get(ctx, "Sales", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	bob.Properties["Email_bidx"] = alices.Properties["Email_bidx"]
	if _, err := r.tbl.Update(ctx, bob, bob.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(t, p.Lookup(ctx, "Email", "alice@contoso.com", table.PartitionKey("Sales"))); !slices.Equal(got, []string{"Sales/1", "Sales/2"}) {
		t.Errorf("Lookup with a forged index row: %v", got)
	}
	// The stored index is the blind value, and integer types compare alike.
	b, _ := p.BlindValue("Email", "ALICE@contoso.com")
	if alices.Properties["Email_bidx"] != b {
		t.Errorf("stored %v, BlindValue %v", alices.Properties["Email_bidx"], b)
	}
}

func TestBlindValueTypes(t *testing.T) {
	r := newRig(t)
	keys := keysOf(t, "k1", "k1")
	dyn, err := encryption.New[table.Dynamic](r.tbl, &encryption.Options{Fields: []string{"N", "S"}, Keys: keys, Indexes: []encryption.Index{{Field: "N"}, {Field: "S"}}, IndexKey: key("i")})
	if err != nil {
		t.Fatal(err)
	}
	i32, _ := dyn.BlindValue("N", int32(5))
	i64, _ := dyn.BlindValue("N", int64(5))
	i, _ := dyn.BlindValue("N", 5)
	s, _ := dyn.BlindValue("S", "5")
	other, _ := dyn.BlindValue("S", "6")
	n5s, _ := dyn.BlindValue("N", "5")
	if i32 != i64 || i64 != i || s == other || n5s == i || len(i) != 22 {
		t.Errorf("blind values: %q %q %q %q %q %q", i32, i64, i, s, other, n5s)
	}
	// Another field, another value: the field name is part of the input.
	if s == n5s {
		t.Errorf("two fields with one value have one blind value")
	}
	// Another index key, another value.
	dyn2, _ := encryption.New[table.Dynamic](r.tbl, &encryption.Options{Fields: []string{"S"}, Keys: keys, Indexes: []encryption.Index{{Field: "S"}}, IndexKey: key("j")})
	if s2, _ := dyn2.BlindValue("S", "5"); s2 == s {
		t.Errorf("the index key does not key the blind value")
	}
}

// IndexKey plugs the blind value into a secondaryindex Index: its copies'
// RowKeys hold the blind value, not the email.
func TestSecondaryIndexKey(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	keyFn, err := p.IndexKey("Email", func(v *Person) string { return v.Email })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.IndexKey("Name", func(v *Person) string { return v.Name }); !errors.Is(err, encryption.ErrInvalid) {
		t.Errorf("IndexKey on a field without an index: %v", err)
	}
	a := alice()
	want, _ := p.BlindValue("Email", a.Email)
	if got := keyFn(&a); !slices.Equal(got, []string{want}) {
		t.Errorf("Key: %v, want [%s]", got, want)
	}
	if got := keyFn(&Person{}); got != nil {
		t.Errorf("an empty email has copies: %v", got)
	}
	type staff struct {
		Department string `table:",pk"`
		ID         string `table:",rk"`
		Name       string
		Email      string
	}
	// The Store's primary rows are sealed by an encryption Table over
	// staff; its copies hold keys, or plain fields, only.
	enc, err := encryption.New[staff](r.tbl, r.optsFor([]string{"Email"}, encryption.Index{Field: "Email", Normalize: encryption.TrimLower}))
	if err != nil {
		t.Fatal(err)
	}
	byEmail, err := enc.IndexKey("Email", func(v *staff) string { return v.Email })
	if err != nil {
		t.Fatal(err)
	}
	opts := func(holds secondaryindex.Holds, fields ...string) *secondaryindex.Options[staff] {
		return &secondaryindex.Options[staff]{Primary: "emp", Sealer: enc, Indexes: []secondaryindex.Index[staff]{
			{Name: "email", Unique: true, Holds: holds, Fields: fields, Key: byEmail},
			{Name: "name", Holds: secondaryindex.Listed, Fields: []string{"Name"}, Key: func(v *staff) []string { return []string{v.Name} }},
		}}
	}
	// Copies that would hold Email in plaintext are refused.
	for _, o := range []*secondaryindex.Options[staff]{opts(secondaryindex.Whole), opts(secondaryindex.Listed, "Email")} {
		if _, err := secondaryindex.New(r.tbl, o); !errors.Is(err, secondaryindex.ErrInvalid) {
			t.Errorf("%v: %v", o.Indexes[0].Holds, err)
		}
	}
	s, err := secondaryindex.New(r.tbl, opts(secondaryindex.KeysOnly))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Insert(ctx, staff{Department: "Sales", ID: "1", Name: "Xavier", Email: "x@contoso.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Modify(ctx, "Sales", "1", func(v *staff) error { v.Email = "xavier@contoso.com"; return nil }); err != nil {
		t.Fatal(err)
	}
	bv, _ := enc.BlindValue("Email", "Xavier@contoso.com")
	got, err := s.Lookup(ctx, "Sales", "email", []string{bv}, &secondaryindex.LookupOptions{Fetch: true})
	if err != nil || got.Value.ID != "1" || got.Value.Email != "xavier@contoso.com" {
		t.Fatalf("secondaryindex lookup by blind value: %+v, %v", got, err)
	}
	// Nothing stored, primary or copy, holds an email in plaintext.
	rows := r.rawRows(t)
	if len(rows) != 3 {
		t.Errorf("%d rows stored, want the primary and 2 copies", len(rows))
	}
	for _, row := range rows {
		noPlaintext(t, row, "x@contoso.com", "xavier@contoso.com")
	}
	if drift, err := s.Check(ctx, ""); err != nil || !drift.Clean() {
		t.Errorf("Check: %+v, %v", drift, err)
	}
}

// Merges: each encrypted property is self-contained, so a merge that
// leaves one out keeps it (and its index) as stored, and a merge that
// sets one writes it and its index together.
func TestMergeSemantics(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	a := alice()
	if _, err := p.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	before, err := r.tbl.Get(ctx, a.PartitionKey, a.RowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A Fields merge of a plain field: the ciphertexts and indexes stay.
	if _, err := p.Update(ctx, Person{PartitionKey: a.PartitionKey, RowKey: a.RowKey, Name: "Alicia"}, azcore.ETagAny, table.Fields("Name")); err != nil {
		t.Fatal(err)
	}
	after, err := r.tbl.Get(ctx, a.PartitionKey, a.RowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, prop := range []string{"Email", "SSN", "Email_bidx", "SSNIndex", "Nick"} {
		if !equalValue(before.Properties[prop], after.Properties[prop]) {
			t.Errorf("%s changed by a merge that left it out", prop)
		}
	}
	got, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
	if err != nil || got.Name != "Alicia" || got.Email != a.Email || *got.Nick != "Al" {
		t.Fatalf("after a Fields merge: %+v, %v", got, err)
	}
	// A merge of the whole struct leaves a nil pointer out: Nick is kept.
	got.Nick, got.Age = nil, 7
	if _, err := p.Update(ctx, got, got.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	if got, err = p.Get(ctx, a.PartitionKey, a.RowKey, nil); err != nil || got.Nick == nil || *got.Nick != "Al" || got.Age != 7 {
		t.Fatalf("after a Merge: %+v, %v", got, err)
	}
	// A Fields merge naming an encrypted field writes its index too.
	r.ft.Reset()
	if _, err := p.Update(ctx, Person{PartitionKey: a.PartitionKey, RowKey: a.RowKey, Email: "new@contoso.com"}, got.ETag, table.Fields("Email")); err != nil || r.ft.Count() != 1 {
		t.Fatalf("%v, %d round trips", err, r.ft.Count())
	}
	if got := rowKeys(t, p.Lookup(ctx, "Email", "new@contoso.com", table.Filter{})); len(got) != 1 {
		t.Errorf("the new email is not found: %v", got)
	}
	if got := rowKeys(t, p.Lookup(ctx, "Email", a.Email, table.Filter{})); len(got) != 0 {
		t.Errorf("the old email is still found: %v", got)
	}
	if got, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil); err != nil || got.Email != "new@contoso.com" || got.SSN != a.SSN || got.Age != 7 {
		t.Fatalf("after a Fields merge of Email: %+v, %v", got, err)
	}
	// The same through Upsert and Modify with a Fields mode.
	if _, err := p.Upsert(ctx, Person{PartitionKey: a.PartitionKey, RowKey: a.RowKey, SSN: "999"}, table.Fields("SSN")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Modify(ctx, a.PartitionKey, a.RowKey, func(v *Person) error { v.Email = "third@contoso.com"; return nil }, &table.ModifyOptions{Mode: table.Fields("Email")}); err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(t, p.Lookup(ctx, "SSN", "999", table.Filter{})); len(got) != 1 {
		t.Errorf("Upsert Fields(SSN): %v", got)
	}
	if got := rowKeys(t, p.Lookup(ctx, "Email", "third@contoso.com", table.Filter{})); len(got) != 1 {
		t.Errorf("Modify Fields(Email): %v", got)
	}
	// What cannot be done safely is refused before the network.
	r.ft.Reset()
	for _, m := range []table.Mode{table.Fields("Email_bidx"), table.Fields("Nope")} {
		if _, err := p.Update(ctx, got, azcore.ETagAny, m); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("%v: %v", m, err)
		}
	}
	if r.ft.Count() != 0 {
		t.Errorf("%d requests sent", r.ft.Count())
	}
}

func equalValue(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

// A lookup value is typed as T's field stores it: a `guid` string field
// (whatever the case of its hex digits) and a `json` field (by a value of
// its type) are found.
func TestLookupTypedAsTheField(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	type device struct {
		PartitionKey, RowKey string
		G                    string   `table:",guid"`
		Tags                 []string `table:",json"`
		Nick                 *string
	}
	o := r.optsFor([]string{"G", "Tags", "Nick"}, encryption.Index{Field: "G"}, encryption.Index{Field: "Tags"}, encryption.Index{Field: "Nick"})
	p, err := encryption.New[device](r.tbl, o)
	if err != nil {
		t.Fatal(err)
	}
	const g = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if _, err := p.Insert(ctx, device{PartitionKey: "p", RowKey: "1", G: g, Tags: []string{"vip", "emea"}, Nick: nick("Al")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		value any
	}{{"G", g}, {"G", strings.ToUpper(g)}, {"Tags", []string{"vip", "emea"}}, {"Tags", `["vip","emea"]`}, {"Nick", "Al"}} {
		n := 0
		for v, err := range p.Lookup(ctx, c.field, c.value, table.PartitionKey("p")) {
			if err != nil || v.RowKey != "1" {
				t.Fatalf("%s %v: %+v, %v", c.field, c.value, v, err)
			}
			n++
		}
		if n != 1 {
			t.Errorf("Lookup %s %v: %d found", c.field, c.value, n)
		}
	}
	if _, err := p.BlindValue("G", "SECRET-not-a-guid"); !errors.Is(err, table.ErrInvalidEntity) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("an invalid GUID: %v", err)
	}
}
