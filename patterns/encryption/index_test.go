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
	"github.com/tablekit/tablekit/patterns/table"
)

func rowKeys(t *testing.T, seq func(func(table.Entity[Person], error) bool)) []string {
	t.Helper()
	var out []string
	for e, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if e.PartitionKey != e.Value.PartitionKey || e.RowKey != e.Value.RowKey || e.ETag == "" || e.ETag != e.Value.ETag {
			t.Fatalf("envelope %q %q %q of %+v", e.PartitionKey, e.RowKey, e.ETag, e.Value)
		}
		out = append(out, e.PartitionKey+"/"+e.RowKey)
	}
	slices.Sort(out)
	return out
}

func TestBlindIndexFind(t *testing.T) {
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
	r.Faults.Reset()
	got := rowKeys(t, p.Find(ctx, "", "Email", "Alice@contoso.com"))
	if !slices.Equal(got, []string{"HR/3", "Sales/1", "Sales/2"}) || r.Faults.Count() != 1 {
		t.Errorf("Find email: %v in %d round trips", got, r.Faults.Count())
	}
	if got := rowKeys(t, p.Find(ctx, "Sales", "Email", "alice@contoso.com")); !slices.Equal(got, []string{"Sales/1", "Sales/2"}) {
		t.Errorf("Find email in Sales: %v", got)
	}
	if got := rowKeys(t, p.Find(ctx, "", "SSN", "111")); !slices.Equal(got, []string{"HR/3", "Sales/1"}) {
		t.Errorf("Find SSN: %v", got)
	}
	if got := rowKeys(t, p.Find(ctx, "", "SSN", "nobody")); len(got) != 0 {
		t.Errorf("Find of a missing value: %v", got)
	}
	// Where composes with other filters in an ordinary query.
	f, err := p.Where("Email", "bob@contoso.com")
	if err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(t, p.QueryEntities(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales"), f)})); !slices.Equal(got, []string{"Sales/5"}) {
		t.Errorf("Where: %v", got)
	}
	if _, err := p.Where("Name", "Alice"); !errors.Is(err, encryption.ErrInvalid) {
		t.Errorf("Where on a field without an index: %v", err)
	}
	// A stale index (a forged or outdated blind value) never yields a
	// non-matching entity: Find checks the decrypted value.
	bob, err := r.tbl.Get(ctx, "Sales", "5", nil)
	if err != nil {
		t.Fatal(err)
	}
	alices, err := r.tbl.Get(ctx, "Sales", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	bob.Value.Properties["Email_bidx"] = alices.Value.Properties["Email_bidx"]
	if _, err := r.tbl.Update(ctx, bob.Value, bob.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(t, p.Find(ctx, "Sales", "Email", "alice@contoso.com")); !slices.Equal(got, []string{"Sales/1", "Sales/2"}) {
		t.Errorf("Find with a forged index row: %v", got)
	}
	// The stored index is the blind value, and integer types compare alike.
	b, _ := p.BlindValue("Email", "ALICE@contoso.com")
	if alices.Value.Properties["Email_bidx"] != b {
		t.Errorf("stored %v, BlindValue %v", alices.Value.Properties["Email_bidx"], b)
	}
}

func TestBlindValueTypes(t *testing.T) {
	r := newRig(t)
	keys := keysOf(t, "k1", "k1")
	dyn, err := encryption.New[table.Dynamic](r.tbl, keys, []string{"N", "S"}, &encryption.Options{Indexes: []encryption.Index{{Field: "N"}, {Field: "S"}}, IndexKey: key("i")})
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
	dyn2, _ := encryption.New[table.Dynamic](r.tbl, keys, []string{"S"}, &encryption.Options{Indexes: []encryption.Index{{Field: "S"}}, IndexKey: key("j")})
	if s2, _ := dyn2.BlindValue("S", "5"); s2 == s {
		t.Errorf("the index key does not key the blind value")
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
		if !equalValue(before.Value.Properties[prop], after.Value.Properties[prop]) {
			t.Errorf("%s changed by a merge that left it out", prop)
		}
	}
	e, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
	got := e.Value
	if err != nil || got.Name != "Alicia" || got.Email != a.Email || *got.Nick != "Al" {
		t.Fatalf("after a Fields merge: %+v, %v", got, err)
	}
	// A merge of the whole struct leaves a nil pointer out: Nick is kept.
	got.Nick, got.Age = nil, 7
	if _, err := p.Update(ctx, got, e.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	if e, err = p.Get(ctx, a.PartitionKey, a.RowKey, nil); err != nil || e.Value.Nick == nil || *e.Value.Nick != "Al" || e.Value.Age != 7 {
		t.Fatalf("after a Merge: %+v, %v", e.Value, err)
	}
	got = e.Value
	// A Fields merge naming an encrypted field writes its index too.
	r.Faults.Reset()
	if _, err := p.Update(ctx, Person{PartitionKey: a.PartitionKey, RowKey: a.RowKey, Email: "new@contoso.com"}, got.ETag, table.Fields("Email")); err != nil || r.Faults.Count() != 1 {
		t.Fatalf("%v, %d round trips", err, r.Faults.Count())
	}
	if got := rowKeys(t, p.Find(ctx, "", "Email", "new@contoso.com")); len(got) != 1 {
		t.Errorf("the new email is not found: %v", got)
	}
	if got := rowKeys(t, p.Find(ctx, "", "Email", a.Email)); len(got) != 0 {
		t.Errorf("the old email is still found: %v", got)
	}
	if e, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil); err != nil || e.Value.Email != "new@contoso.com" || e.Value.SSN != a.SSN || e.Value.Age != 7 {
		t.Fatalf("after a Fields merge of Email: %+v, %v", e.Value, err)
	}
	// The same through Upsert and Modify with a Fields mode.
	if _, err := p.Upsert(ctx, Person{PartitionKey: a.PartitionKey, RowKey: a.RowKey, SSN: "999"}, table.Fields("SSN")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Modify(ctx, a.PartitionKey, a.RowKey, func(v *Person) error { v.Email = "third@contoso.com"; return nil }, &table.ModifyOptions{Mode: table.Fields("Email")}); err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(t, p.Find(ctx, "", "SSN", "999")); len(got) != 1 {
		t.Errorf("Upsert Fields(SSN): %v", got)
	}
	if got := rowKeys(t, p.Find(ctx, "", "Email", "third@contoso.com")); len(got) != 1 {
		t.Errorf("Modify Fields(Email): %v", got)
	}
	// What cannot be done safely is refused before the network.
	r.Faults.Reset()
	for _, m := range []table.Mode{table.Fields("Email_bidx"), table.Fields("Nope")} {
		if _, err := p.Update(ctx, got, azcore.ETagAny, m); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("%v: %v", m, err)
		}
	}
	if r.Faults.Count() != 0 {
		t.Errorf("%d requests sent", r.Faults.Count())
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
func TestFindTypedAsTheField(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	type device struct {
		PartitionKey, RowKey string
		G                    string   `table:",guid"`
		Tags                 []string `table:",json"`
		Nick                 *string
	}
	p := tableFor[device](t, r, []string{"G", "Tags", "Nick"}, encryption.Index{Field: "G"}, encryption.Index{Field: "Tags"}, encryption.Index{Field: "Nick"})
	const g = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if _, err := p.Insert(ctx, device{PartitionKey: "p", RowKey: "1", G: g, Tags: []string{"vip", "emea"}, Nick: nick("Al")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		value any
	}{{"G", g}, {"G", strings.ToUpper(g)}, {"Tags", []string{"vip", "emea"}}, {"Tags", `["vip","emea"]`}, {"Nick", "Al"}} {
		n := 0
		for v, err := range p.Find(ctx, "p", c.field, c.value) {
			if err != nil || v.RowKey != "1" || v.Value.RowKey != "1" || *v.Value.Nick != "Al" {
				t.Fatalf("%s %v: %+v, %v", c.field, c.value, v, err)
			}
			n++
		}
		if n != 1 {
			t.Errorf("Find %s %v: %d found", c.field, c.value, n)
		}
	}
	if _, err := p.BlindValue("G", "SECRET-not-a-guid"); !errors.Is(err, table.ErrInvalidEntity) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("an invalid GUID: %v", err)
	}
}

// Find's value is the field's value as T holds it: any integer that fits
// an integer field finds it; a value of another type is ErrInvalid naming
// the index and the type wanted, with nothing sent.
func TestFindValueTypes(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	type badge struct {
		PartitionKey, RowKey string
		Level                int64
		Code                 string
	}
	p := tableFor[badge](t, r, []string{"Level", "Code"}, encryption.Index{Field: "Level"}, encryption.Index{Field: "Code"})
	if _, err := p.Insert(ctx, badge{PartitionKey: "p", RowKey: "1", Level: 3, Code: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{3, int64(3), int32(3), uint8(3)} {
		n := 0
		for e, err := range p.Find(ctx, "p", "Level", v) {
			if err != nil || e.RowKey != "1" {
				t.Fatalf("Find Level %T: %+v, %v", v, e, err)
			}
			n++
		}
		if n != 1 {
			t.Errorf("Find Level %T(3): %d found", v, n)
		}
	}
	r.Faults.Reset()
	for _, c := range []struct {
		field string
		value any
		want  string
	}{{"Level", "3", "int64"}, {"Level", 1.0, "int64"}, {"Code", 3, "string"}, {"Code", nil, "string"}} {
		for _, err := range p.Find(ctx, "p", c.field, c.value) {
			if !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalid) || !strings.Contains(err.Error(), `index "`+c.field+`"`) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Find %s %#v: %v; want ErrInvalid naming the index and %s", c.field, c.value, err, c.want)
			}
		}
		if _, err := p.Where(c.field, c.value); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("Where %s %#v: %v", c.field, c.value, err)
		}
	}
	if r.Faults.Count() != 0 {
		t.Errorf("%d requests sent for refused values", r.Faults.Count())
	}
}
