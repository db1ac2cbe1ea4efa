package encryption_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// same compares two Persons without their Meta.
func same(t *testing.T, got, want Person) {
	t.Helper()
	got.Meta, want.Meta = table.Meta{}, table.Meta{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestRoundTripEveryType(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	a := alice()
	empty := Person{PartitionKey: "Sales", RowKey: "002"} // zero values; nil pointer, zero time, nil slices omitted
	for _, v := range []Person{a, empty} {
		r.Faults.Reset()
		res, err := p.Insert(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if n := r.Faults.Count(); n != 1 || res.ETag == "" {
			t.Fatalf("insert: %d round trips, ETag %q", n, res.ETag)
		}
		r.Faults.Reset()
		got, err := p.Get(ctx, v.PartitionKey, v.RowKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := r.Faults.Count(); n != 1 || got.ETag != res.ETag || got.Value.ETag != res.ETag {
			t.Fatalf("get: %d round trips, ETag %q, want %q", n, got.ETag, res.ETag)
		}
		if got.PartitionKey != v.PartitionKey || got.RowKey != v.RowKey {
			t.Fatalf("get: keys %q, %q", got.PartitionKey, got.RowKey)
		}
		same(t, got.Value, v)
	}
	// The empty entity stores no property for the omitted values.
	e, err := r.tbl.Get(ctx, "Sales", "002", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Value
	for _, f := range []string{"Nick", "Born", "Photo"} {
		if _, ok := d.Properties[f]; ok {
			t.Errorf("omitted %s is stored", f)
		}
	}
	// Every other encrypted field, zero values included, is ciphertext.
	for _, f := range []string{"Email", "SSN", "Age", "Big", "Score", "Badge", "OK"} {
		if _, ok := d.Properties[f].([]byte); !ok {
			t.Errorf("%s stored as %T", f, d.Properties[f])
		}
	}
}

func TestDynamicRoundTrip(t *testing.T) {
	r := newRig(t)
	dyn, err := encryption.New[table.Dynamic](r.tbl, keysOf(t, "k1", "k1"), []string{"A", "B", "C"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": 7, "B": float32(1.5), "C": "x", "D": "plain"}}
	if _, err := dyn.Insert(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Get(ctx, "p", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"A": int64(7), "B": 1.5, "C": "x", "D": "plain"}
	if !reflect.DeepEqual(got.Value.Properties, want) {
		t.Fatalf("got %#v, want %#v", got.Value.Properties, want)
	}
}

func TestStoredBytesHoldNoPlaintext(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	a := alice()
	if _, err := p.Insert(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	m := r.rawEntity(t, a.PartitionKey, a.RowKey)
	raw := m["raw"].(string)
	// The JSON text, and the Edm.Binary bytes decoded.
	noPlaintext(t, storedText(t, []byte(raw)), a.Email, strings.ToLower(a.Email), a.SSN, "vip", "emea", "Alice@")
	for _, f := range secret {
		if m[f+"@odata.type"] != "Edm.Binary" {
			t.Errorf("%s is stored as %v, not Edm.Binary", f, m[f+"@odata.type"])
		}
	}
	if m["Name"] != "Alice" {
		t.Errorf("the plain field Name is %v", m["Name"])
	}
	if _, ok := m["Email_bidx"].(string); !ok {
		t.Errorf("no blind index for Email: %v", raw)
	}
	if got := r.storedKeyID(t, a.PartitionKey, a.RowKey, "Email"); got != "k1" {
		t.Errorf("key id %q", got)
	}
}

// tamper reads the stored entity with Table[Dynamic], lets change alter
// it, and writes it back as it is (no encryption).
func tamper(t *testing.T, r *rig, pk, rk string, change func(d *table.Dynamic)) {
	t.Helper()
	ctx := context.Background()
	e, err := r.tbl.Get(ctx, pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	change(&e.Value)
	if _, err := r.tbl.Update(ctx, e.Value, e.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	r := newRig(t)
	keys := keysOf(t, "k1", "k1")
	p := people(t, r, keys)
	ctx := context.Background()
	a, b := alice(), alice()
	b.RowKey, b.Email, b.SSN = "002", "bob@contoso.com", "987-65-4321"
	for _, v := range []Person{a, b} {
		if _, err := p.Insert(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := r.tbl.Get(ctx, "Sales", "002", nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(d *table.Dynamic)
		want   error
		prop   string
	}{
		{"flipped bit", func(d *table.Dynamic) {
			c := append([]byte{}, d.Properties["SSN"].([]byte)...)
			c[len(c)-20] ^= 1
			d.Properties["SSN"] = c
		}, encryption.ErrDecrypt, "SSN"},
		{"flipped header key id", func(d *table.Dynamic) {
			c := append([]byte{}, d.Properties["SSN"].([]byte)...)
			c[2] = 'x'
			d.Properties["SSN"] = c
		}, encryption.ErrUnknownKey, "SSN"},
		{"swapped between entities", func(d *table.Dynamic) { d.Properties["SSN"] = stored.Value.Properties["SSN"] }, encryption.ErrDecrypt, "SSN"},
		{"swapped between properties", func(d *table.Dynamic) {
			d.Properties["SSN"], d.Properties["Email"] = d.Properties["Email"], d.Properties["SSN"]
		}, encryption.ErrDecrypt, "Email"},
		{"stored as plaintext", func(d *table.Dynamic) { d.Properties["SSN"] = "123-45-6789" }, encryption.ErrDecrypt, "SSN"},
		{"truncated", func(d *table.Dynamic) { d.Properties["SSN"] = d.Properties["SSN"].([]byte)[:20] }, encryption.ErrDecrypt, "SSN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := p.Insert(ctx, a); err != nil && !errors.Is(err, table.ErrAlreadyExists) {
				t.Fatal(err)
			}
			tamper(t, r, "Sales", "001", c.change)
			_, err := p.Get(ctx, "Sales", "001", nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			var e *encryption.Error
			if !errors.As(err, &e) || e.Property != c.prop || e.RowKey != "001" {
				t.Errorf("error does not name the property and entity: %#v", e)
			}
			noPlaintext(t, err.Error(), a.SSN, a.Email, b.SSN, b.Email)
			if err := r.tbl.Delete(ctx, "Sales", "001", azcore.ETagAny); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A copy of the value into another table fails too: the table name is
	// bound; TableName reads it back.
	other := newRig(t)
	d, err := r.tbl.Get(ctx, "Sales", "002", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.tbl.Insert(ctx, d.Value); err != nil {
		t.Fatal(err)
	}
	if _, err := people(t, other, keys).Get(ctx, "Sales", "002", nil); !errors.Is(err, encryption.ErrDecrypt) {
		t.Fatalf("a value copied to another table: %v", err)
	}
	o := other.opts()
	o.TableName = r.tbl.Name()
	restored, err := encryption.New[Person](other.tbl, keys, secret, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := restored.Get(ctx, "Sales", "002", nil); err != nil || got.Value.SSN != b.SSN {
		t.Fatalf("with TableName: %v", err)
	}
}

func TestWrongKeys(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	a := alice()
	if _, err := p.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	// A provider that does not know k1.
	_, err := people(t, r, keysOf(t, "k2", "k2")).Get(ctx, a.PartitionKey, a.RowKey, nil)
	if !errors.Is(err, encryption.ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
	// A provider with other bytes under the id k1.
	wrong, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": key("not k1")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = people(t, r, wrong).Get(ctx, a.PartitionKey, a.RowKey, nil)
	if !errors.Is(err, encryption.ErrDecrypt) {
		t.Fatalf("wrong key: %v", err)
	}
	noPlaintext(t, err.Error(), a.Email, a.SSN, string(key("not k1")), string(key("k1")))
}

// badProvider returns a key of the wrong length.
type badProvider struct{}

func (badProvider) CurrentKey(context.Context) (string, []byte, error) {
	return "short", make([]byte, 16), nil
}
func (badProvider) Key(context.Context, string) ([]byte, error) { return make([]byte, 16), nil }

func TestValidatedBeforeTheNetwork(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	for what, want := range map[string]error{"31-byte key": encryption.ErrBadKey, "key id with a space": encryption.ErrBadKey, "missing current key": encryption.ErrUnknownKey} {
		keys := map[string][]byte{"k": make([]byte, 32)}
		current := "k"
		switch what {
		case "31-byte key":
			keys["k"] = keys["k"][:31]
		case "key id with a space":
			keys = map[string][]byte{"k b": make([]byte, 32)}
		default:
			current = "k2"
		}
		_, err := encryption.NewStaticKeys(current, keys)
		if !errors.Is(err, want) || !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want %v, ErrInvalid and table.ErrInvalid", what, err, want)
		}
	}
	r.Faults.Reset()
	_, err := people(t, r, badProvider{}).Insert(ctx, alice())
	if !errors.Is(err, encryption.ErrBadKey) || r.Faults.Count() != 0 {
		t.Errorf("a 16-byte key: %v after %d requests", err, r.Faults.Count())
	}
	p := people(t, r, keysOf(t, "k1", "k1"))
	big := alice()
	// 2+2 header bytes ("k1"), 12 nonce, 16 tag: 65,504 bytes of padded
	// plaintext, of which the type byte and at least one padding byte.
	big.Photo = make([]byte, 65503)
	_, err = p.Insert(ctx, big)
	if !errors.Is(err, table.ErrTooLarge) || !errors.Is(err, encryption.ErrInvalid) || r.Faults.Count() != 0 {
		t.Errorf("a value too large once encrypted: %v after %d requests", err, r.Faults.Count())
	}
	big.Photo = make([]byte, 65502) // stored as exactly 64 KiB
	if _, err := p.Insert(ctx, big); err != nil {
		t.Errorf("the largest value that fits: %v", err)
	}
	// Every mistake in New's inputs is an ErrInvalid (a short IndexKey
	// an ErrBadKey, which is one too), also a table.ErrInvalid.
	type config struct {
		tbl    *table.Table[table.Dynamic]
		keys   encryption.KeyProvider
		fields []string
		opts   *encryption.Options
	}
	index := func(ix ...encryption.Index) func(c *config) { return func(c *config) { c.opts.Indexes = ix } }
	r.Faults.Reset()
	for name, change := range map[string]func(c *config){
		"no table":             func(c *config) { c.tbl = nil },
		"no keys":              func(c *config) { c.keys = nil },
		"no fields":            func(c *config) { c.fields = nil },
		"unknown field":        func(c *config) { c.fields = append(c.fields, "Nope") },
		"a field twice":        func(c *config) { c.fields = append(c.fields, "SSN") },
		"key field":            func(c *config) { c.fields = []string{"RowKey"} },
		"index not encrypted":  index(encryption.Index{Field: "Name"}),
		"two indexes":          index(encryption.Index{Field: "Email"}, encryption.Index{Field: "Email", Property: "E2"}),
		"index property taken": index(encryption.Index{Field: "Email", Property: "Name"}),
		"index on a field":     index(encryption.Index{Field: "Email", Property: "SSN"}),
		"short index key":      func(c *config) { c.opts.IndexKey = c.opts.IndexKey[:16] },
		"index key, no index":  index(),
		"bad index property":   index(encryption.Index{Field: "Email", Property: "a b"}),
		"index on RowKey":      index(encryption.Index{Field: "Email", Property: "RowKey"}),
		"index on PK":          index(encryption.Index{Field: "Email", Property: "PartitionKey"}),
		"index on Timestamp":   index(encryption.Index{Field: "Email", Property: "Timestamp"}),
		"index on the history": index(encryption.Index{Field: "Email", Property: reserved.WriteProperty}),
		"a reserved index":     index(encryption.Index{Field: "Email", Property: reserved.PropertyPrefix + "Email"}),
	} {
		c := config{r.tbl, keysOf(t, "k1", "k1"), slices.Clone(secret), r.opts()}
		change(&c)
		_, err := encryption.New[Person](c.tbl, c.keys, c.fields, c.opts)
		if !errors.Is(err, encryption.ErrInvalid) || !errors.Is(err, table.ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
		if name == "short index key" && !errors.Is(err, encryption.ErrBadKey) {
			t.Errorf("%s: %v, want ErrBadKey", name, err)
		}
	}
	// Nor the names of a type's key fields (the service needs the keys).
	type tagged struct {
		Dept  string `table:",pk"`
		ID    string `table:"Ident,rk"`
		Email string
	}
	for _, name := range []string{"Dept", "ID"} {
		if _, err := encryption.New[tagged](r.tbl, keysOf(t, "k1", "k1"), []string{"Email"}, &encryption.Options{Indexes: []encryption.Index{{Field: "Email", Property: name}}, IndexKey: key("i")}); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("index property %s: %v", name, err)
		}
		if _, err := encryption.New[tagged](r.tbl, keysOf(t, "k1", "k1"), []string{name}, nil); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("field %s: %v", name, err)
		}
	}
	// Nor, in a property bag, a name tablekit keeps for itself.
	for _, name := range []string{reserved.PropertyPrefix + "Secret", "PartitionKey", "not valid"} {
		if _, err := encryption.New[table.Dynamic](r.tbl, keysOf(t, "k1", "k1"), []string{name}, nil); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("Dynamic field %s: %v", name, err)
		}
	}
	if r.Faults.Count() != 0 {
		t.Errorf("New sent %d requests", r.Faults.Count())
	}
	// A property bag cannot carry an index property of its own.
	dyn, err := encryption.New[table.Dynamic](r.tbl, keysOf(t, "k1", "k1"), []string{"A"}, &encryption.Options{Indexes: []encryption.Index{{Field: "A"}}, IndexKey: key("i")})
	if err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	_, err = dyn.Insert(ctx, table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "x", "A_bidx": "forged"}})
	if !errors.Is(err, encryption.ErrInvalid) || r.Faults.Count() != 0 {
		t.Errorf("a forged index property: %v after %d requests", err, r.Faults.Count())
	}
}

func TestQueryPages(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	for i := range 5 {
		a := alice()
		a.RowKey, a.Age = string(rune('a'+i)), int32(i)
		if _, err := p.Insert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	q := &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 2}
	var ages []int32
	for {
		r.Faults.Reset()
		page, err := p.QueryPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if r.Faults.Count() != 1 {
			t.Fatalf("QueryPage: %d round trips", r.Faults.Count())
		}
		for _, v := range page.Items {
			if v.ETag == "" || v.SSN != "123-45-6789" {
				t.Fatalf("page item %+v", v)
			}
			ages = append(ages, v.Age)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	all, err := table.Collect(p.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if testrig.Cosmos() {
		slices.Sort(ages) // every row once, in no order
	}
	if err != nil || len(all) != 5 || !reflect.DeepEqual(ages, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("Query: %d entities, %v; pages gave %v", len(all), err, ages)
	}
}

func TestModifyAndDelete(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	a := alice()
	if _, err := p.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	got, err := p.Modify(ctx, a.PartitionKey, a.RowKey, func(v *Person) error { v.Age++; v.Email = "new@contoso.com"; return nil }, nil)
	if err != nil || got.Value.Age != 43 || got.ETag == "" || got.Value.ETag != got.ETag || got.RowKey != a.RowKey || r.Faults.Count() != 2 {
		t.Fatalf("Modify: %v, age %d, %d round trips", err, got.Value.Age, r.Faults.Count())
	}
	// The entity Modify returns carries the version written.
	got.Value.Name = "Al"
	if _, err := p.Update(ctx, got.Value, got.ETag, table.Fields("Name")); err != nil {
		t.Fatalf("Update with the ETag Modify returned: %v", err)
	}
	e, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
	read := e.Value
	if err != nil || read.Email != "new@contoso.com" || read.Age != 43 || read.SSN != a.SSN || read.Name != "Al" {
		t.Fatalf("after Modify: %+v, %v", read, err)
	}
	if n := count(t, p.Find(ctx, "", "Email", "NEW@contoso.com")); n != 1 {
		t.Errorf("Find after Modify: %d", n)
	}
	// An Update with the ETag read, then a stale one.
	read.Name = "Alicia"
	if _, err := p.Update(ctx, read, e.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Update(ctx, read, e.ETag, table.Merge); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("stale ETag: %v", err)
	}
	// fn's error ends Modify as it is, even one that looks like a
	// validation error of the core's.
	for _, stop := range []error{errors.New("stop"), table.ErrInvalidEntity} {
		if _, err := p.Modify(ctx, a.PartitionKey, a.RowKey, func(*Person) error { return stop }, nil); !errors.Is(err, stop) || errors.Is(err, encryption.ErrInvalid) {
			t.Fatalf("fn's error: %v", err)
		}
	}
	if _, err := p.Update(ctx, read, "", table.Merge); !errors.Is(err, table.ErrNoETag) || !errors.Is(err, encryption.ErrInvalid) {
		t.Fatalf("no ETag: %v", err)
	}
	if err := p.Delete(ctx, a.PartitionKey, a.RowKey, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
}

// InsertOps, UpsertOps and UpdateOps: encrypted writes as changes that
// one Apply writes in one transaction (1 round trip), read back
// decrypted.
func TestOps(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	var changes []table.Change
	for i := range 3 {
		a := alice()
		a.RowKey = string(rune('a' + i))
		ch, err := p.InsertOps(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, ch)
	}
	c := alice()
	c.RowKey, c.SSN = "c", "123-45-6789"
	ch, err := p.UpsertOps(ctx, c, table.Replace)
	if err != nil {
		t.Fatal(err)
	}
	changes[2] = ch
	r.Faults.Reset()
	if _, err := p.Table().Apply(ctx, changes...); err != nil || r.Faults.Count() != 1 {
		t.Fatalf("Apply: %v, %d round trips", err, r.Faults.Count())
	}
	got, err := p.Get(ctx, "Sales", "b", nil)
	if err != nil || got.Value.SSN != alice().SSN {
		t.Fatalf("%+v, %v", got, err)
	}
	if got, err := p.Get(ctx, "Sales", "c", nil); err != nil || got.Value.SSN != c.SSN {
		t.Fatalf("the upsert: %+v, %v", got, err)
	}
	got.Value.Age = 1
	up, err := p.UpdateOps(ctx, got.Value, got.ETag, table.Fields("Age"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Table().Apply(ctx, up); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Get(ctx, "Sales", "b", nil); err != nil || got.Value.Age != 1 || got.Value.SSN != alice().SSN {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := p.Table().Apply(ctx, up); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("the update again, on the ETag it replaced: %v", err)
	}
}

// A change that cannot be built is an error, and no change: the
// KeyProvider's, this package's or the core's, each matching its
// sentinels, with nothing sent.
func TestOpsErrors(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	bad := people(t, r, badProvider{})
	p := people(t, r, keysOf(t, "k1", "k1"))
	second := func(_ table.Change, err error) error { return err }
	r.Faults.Reset()
	for what, c := range map[string]struct {
		err  error
		want []error
	}{
		"InsertOps, a 16-byte key": {second(bad.InsertOps(ctx, alice())), []error{encryption.ErrBadKey, encryption.ErrInvalid, table.ErrInvalid}},
		"UpsertOps, a 16-byte key": {second(bad.UpsertOps(ctx, alice(), table.Replace)), []error{encryption.ErrBadKey, encryption.ErrInvalid}},
		"UpdateOps, a 16-byte key": {second(bad.UpdateOps(ctx, alice(), azcore.ETagAny, table.Merge)), []error{encryption.ErrBadKey, encryption.ErrInvalid}},
		"UpdateOps, no ETag":       {second(p.UpdateOps(ctx, alice(), "", table.Merge)), []error{table.ErrNoETag, encryption.ErrInvalid, table.ErrInvalid}},
		"UpsertOps, a blind index": {second(p.UpsertOps(ctx, alice(), table.Fields("Email_bidx"))), []error{encryption.ErrInvalid, table.ErrInvalid}},
		"InsertOps, too large":     {second(p.InsertOps(ctx, Person{PartitionKey: "p", RowKey: "r", Photo: make([]byte, 65503)})), []error{table.ErrTooLarge, encryption.ErrInvalid}},
	} {
		for _, want := range c.want {
			if !errors.Is(c.err, want) {
				t.Errorf("%s: %v, want %v", what, c.err, want)
			}
		}
	}
	if r.Faults.Count() != 0 {
		t.Errorf("%d requests sent", r.Faults.Count())
	}
}

func TestConcurrentUse(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := alice()
			a.RowKey = string(rune('a' + i))
			a.Age = int32(i)
			if _, err := p.Insert(ctx, a); err != nil {
				errs <- err
				return
			}
			got, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
			if err == nil && got.Value.Age != int32(i) {
				err = errors.New("wrong entity")
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestContextCancelled(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Faults.Reset()
	if _, err := p.Insert(ctx, alice()); !errors.Is(err, context.Canceled) || r.Faults.Count() != 0 {
		t.Fatalf("%v, %d requests", err, r.Faults.Count())
	}
	if _, err := p.Reencrypt(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reencrypt: %v", err)
	}
}

func count(t *testing.T, seq func(func(table.Entity[Person], error) bool)) int {
	t.Helper()
	n := 0
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// A lost response of an Update is settled by the core's read, as for any
// Table: encryption never resends a write itself.
func TestLostResponseVerified(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	if _, err := p.Insert(ctx, alice()); err != nil {
		t.Fatal(err)
	}
	e, err := p.Get(ctx, "Sales", "001", nil)
	if err != nil {
		t.Fatal(err)
	}
	v := e.Value
	// The entity read carries its whole Meta (the write history the core
	// verifies with) through decryption.
	d, err := r.tbl.Get(ctx, "Sales", "001", nil)
	if err != nil || !reflect.DeepEqual(d.Value.Meta, v.Meta) {
		t.Fatalf("Meta through decryption: %+v, stored %+v, %v", v.Meta, d.Value.Meta, err)
	}
	v.Age = 50
	r.Faults.Reset()
	r.Faults.Inject(faults.Fault{Match: func(req *http.Request) bool { return faults.IsMerge(req) }, LoseResponse: true})
	res, err := p.Update(ctx, v, v.ETag, table.Merge)
	if err != nil || !res.Verified || r.Faults.Count() != 3 {
		t.Fatalf("lost response of a conditional update: %+v, %v after %d requests (want write, resend, read)", res, err, r.Faults.Count())
	}
	if got, err := p.Get(ctx, "Sales", "001", nil); err != nil || got.Value.Age != 50 {
		t.Fatalf("%d, %v", got.Value.Age, err)
	}
}

// Table names are case-insensitive, so the name bound into each value is
// lower-cased: a value written through one spelling reads through another.
func TestTableNameCaseInsensitive(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	keys := keysOf(t, "k1", "k1")
	upper := testrig.NewTable[table.Dynamic](t, r.TableClient(strings.ToUpper(r.tbl.Name()), nil))
	viaUpper, err := encryption.New[Person](upper, keys, secret, r.opts())
	if err != nil {
		t.Fatal(err)
	}
	a, b := alice(), alice()
	b.RowKey = "002"
	if _, err := people(t, r, keys).Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := viaUpper.Insert(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got, err := viaUpper.Get(ctx, a.PartitionKey, a.RowKey, nil); err != nil || got.Value.SSN != a.SSN {
		t.Fatalf("written in lower case, read in upper case: %v", err)
	}
	if got, err := people(t, r, keys).Get(ctx, b.PartitionKey, b.RowKey, nil); err != nil || got.Value.SSN != b.SSN {
		t.Fatalf("written in upper case, read in lower case: %v", err)
	}
}

// countingKeys records the ids Key is asked for.
type countingKeys struct {
	encryption.KeyProvider
	mu  sync.Mutex
	ids []string
}

func (c *countingKeys) Key(ctx context.Context, id string) ([]byte, error) {
	c.mu.Lock()
	c.ids = append(c.ids, id)
	c.mu.Unlock()
	return c.KeyProvider.Key(ctx, id)
}

// A key id read from storage is attacker-controlled: a malformed one is
// ErrDecrypt and never reaches the KeyProvider.
func TestForgedKeyIDNeverReachesTheProvider(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	keys := &countingKeys{KeyProvider: keysOf(t, "k1", "k1")}
	p := people(t, r, keys)
	a := alice()
	if _, err := p.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a b", "k\x00", "https://vault/\n", "\xff"} {
		tamper(t, r, a.PartitionKey, a.RowKey, func(d *table.Dynamic) {
			forged := append([]byte{1, byte(len(id))}, id...)
			d.Properties["SSN"] = append(forged, make([]byte, 12+16+16)...)
		})
		_, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
		var e *encryption.Error
		if !errors.Is(err, encryption.ErrDecrypt) || !errors.As(err, &e) || e.Property != "SSN" {
			t.Errorf("key id %q: %v", id, err)
		}
	}
	for _, id := range keys.ids {
		if id != "k1" {
			t.Errorf("the provider was asked for %q", id)
		}
	}
}
