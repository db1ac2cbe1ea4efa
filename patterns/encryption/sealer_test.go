package encryption_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
)

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
	enc := tableFor[staff](t, r, []string{"Email"}, encryption.Index{Field: "Email", Normalize: encryption.TrimLower})
	byEmail, err := enc.IndexKey("Email", func(v *staff) string { return v.Email })
	if err != nil {
		t.Fatal(err)
	}
	opts := func(holds secondaryindex.Holds, fields ...string) *secondaryindex.Options[staff] {
		return &secondaryindex.Options[staff]{Primary: "emp", Sealer: enc, Indexes: []secondaryindex.Index[staff]{
			{Name: "email", Unique: true, Holds: holds, Fields: fields, On: []string{"Email"}, Key: byEmail},
			{Name: "name", Holds: secondaryindex.Listed, Fields: []string{"Name"}, On: []string{"Name"}},
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
	// The lookup takes the email as T holds it; the index's Key (IndexKey)
	// makes it the blind value (normalized: any case finds it).
	got, err := s.Lookup(ctx, "Sales", "email", "Xavier@contoso.com", &secondaryindex.LookupOptions{Fetch: true})
	if err != nil || got.Value.ID != "1" || got.Value.Email != "xavier@contoso.com" {
		t.Fatalf("secondaryindex lookup by the email's blind value: %+v, %v", got, err)
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
