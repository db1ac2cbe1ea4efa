package encryption_test

import (
	"net/http"

	"context"
	"errors"
	"github.com/tablekit/tablekit/internal/faults"
	"reflect"
	"strings"
	"sync"
	"testing"

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
		r.ft.Reset()
		res, err := p.Insert(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if n := r.ft.Count(); n != 1 || res.ETag == "" {
			t.Fatalf("insert: %d round trips, ETag %q", n, res.ETag)
		}
		r.ft.Reset()
		got, err := p.Get(ctx, v.PartitionKey, v.RowKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := r.ft.Count(); n != 1 || got.ETag != res.ETag {
			t.Fatalf("get: %d round trips, ETag %q, want %q", n, got.ETag, res.ETag)
		}
		same(t, got, v)
	}
	// The empty entity stores no property for the omitted values.
	d, err := r.tbl.Get(ctx, "Sales", "002", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Nick", "Born", "Photo"} {
		if _, ok := d.Properties[f]; ok {
			t.Errorf("omitted %s is stored", f)
		}
	}
	// Every other encrypted field, zero values included, is ciphertext.
	for _, f := range []string{"Email", "SSN", "Age", "Big", "Score", "ID", "OK"} {
		if _, ok := d.Properties[f].([]byte); !ok {
			t.Errorf("%s stored as %T", f, d.Properties[f])
		}
	}
}

func TestDynamicRoundTrip(t *testing.T) {
	r := newRig(t)
	dyn, err := encryption.New[table.Dynamic](r.tbl, &encryption.Options{Fields: []string{"A", "B", "C"}, Keys: keysOf(t, "k1", "k1")})
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
	if !reflect.DeepEqual(got.Properties, want) {
		t.Fatalf("got %#v, want %#v", got.Properties, want)
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
	d, err := r.tbl.Get(ctx, pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	change(&d)
	if _, err := r.tbl.Update(ctx, d, d.ETag, table.Replace); err != nil {
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
		{"swapped between entities", func(d *table.Dynamic) { d.Properties["SSN"] = stored.Properties["SSN"] }, encryption.ErrDecrypt, "SSN"},
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
	if _, err := other.tbl.Insert(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := people(t, other, keys).Get(ctx, "Sales", "002", nil); !errors.Is(err, encryption.ErrDecrypt) {
		t.Fatalf("a value copied to another table: %v", err)
	}
	o := other.opts(keys)
	o.TableName = r.tbl.Name()
	restored, err := encryption.New[Person](other.tbl, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := restored.Get(ctx, "Sales", "002", nil); err != nil || got.SSN != b.SSN {
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
	if _, err := encryption.NewStaticKeys("k", map[string][]byte{"k": make([]byte, 31)}); !errors.Is(err, encryption.ErrBadKey) {
		t.Errorf("31-byte key: %v", err)
	}
	if _, err := encryption.NewStaticKeys("k", map[string][]byte{"k b": make([]byte, 32)}); !errors.Is(err, encryption.ErrBadKey) {
		t.Errorf("key id with a space: %v", err)
	}
	if _, err := encryption.NewStaticKeys("k2", map[string][]byte{"k": make([]byte, 32)}); !errors.Is(err, encryption.ErrUnknownKey) {
		t.Errorf("missing current key: %v", err)
	}
	r.ft.Reset()
	_, err := people(t, r, badProvider{}).Insert(ctx, alice())
	if !errors.Is(err, encryption.ErrBadKey) || r.ft.Count() != 0 {
		t.Errorf("a 16-byte key: %v after %d requests", err, r.ft.Count())
	}
	p := people(t, r, keysOf(t, "k1", "k1"))
	big := alice()
	// 2+2 header bytes ("k1"), 12 nonce, 16 tag: 65,504 bytes of padded
	// plaintext, of which the type byte and at least one padding byte.
	big.Photo = make([]byte, 65503)
	_, err = p.Insert(ctx, big)
	if !errors.Is(err, table.ErrTooLarge) || r.ft.Count() != 0 {
		t.Errorf("a value too large once encrypted: %v after %d requests", err, r.ft.Count())
	}
	big.Photo = make([]byte, 65502) // stored as exactly 64 KiB
	if _, err := p.Insert(ctx, big); err != nil {
		t.Errorf("the largest value that fits: %v", err)
	}
	o := r.opts(keysOf(t, "k1", "k1"))
	r.ft.Reset()
	for name, change := range map[string]func(o *encryption.Options){
		"unknown field":        func(o *encryption.Options) { o.Fields = append(o.Fields, "Nope") },
		"key field":            func(o *encryption.Options) { o.Fields = []string{"RowKey"} },
		"index not encrypted":  func(o *encryption.Options) { o.Indexes = []encryption.Index{{Field: "Name"}} },
		"index property taken": func(o *encryption.Options) { o.Indexes = []encryption.Index{{Field: "Email", Property: "Name"}} },
		"short index key":      func(o *encryption.Options) { o.IndexKey = o.IndexKey[:16] },
		"index key, no index":  func(o *encryption.Options) { o.Indexes = nil },
		"no keys":              func(o *encryption.Options) { o.Keys = nil },
		"bad index property":   func(o *encryption.Options) { o.Indexes = []encryption.Index{{Field: "Email", Property: "a b"}} },
		"index on RowKey":      func(o *encryption.Options) { o.Indexes = []encryption.Index{{Field: "Email", Property: "RowKey"}} },
		"index on PK": func(o *encryption.Options) {
			o.Indexes = []encryption.Index{{Field: "Email", Property: "PartitionKey"}}
		},
		"index on Timestamp": func(o *encryption.Options) { o.Indexes = []encryption.Index{{Field: "Email", Property: "Timestamp"}} },
		"index on the history": func(o *encryption.Options) {
			o.Indexes = []encryption.Index{{Field: "Email", Property: table.WriteProperty}}
		},
	} {
		c := *o
		change(&c)
		if _, err := encryption.New[Person](r.tbl, &c); !errors.Is(err, encryption.ErrInvalid) && !errors.Is(err, encryption.ErrBadKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Nor the names of a type's tagged key fields.
	type tagged struct {
		Dept  string `table:",pk"`
		ID    string `table:"Ident,rk"`
		Email string
	}
	for _, name := range []string{"Dept", "ID", "Ident"} {
		if _, err := encryption.New[tagged](r.tbl, &encryption.Options{Fields: []string{"Email"}, Keys: o.Keys, Indexes: []encryption.Index{{Field: "Email", Property: name}}, IndexKey: key("i")}); !errors.Is(err, encryption.ErrInvalid) {
			t.Errorf("index property %s: %v", name, err)
		}
	}
	if r.ft.Count() != 0 {
		t.Errorf("New sent %d requests", r.ft.Count())
	}
	// A property bag cannot carry an index property of its own.
	dyn, err := encryption.New[table.Dynamic](r.tbl, &encryption.Options{Fields: []string{"A"}, Keys: keysOf(t, "k1", "k1"), Indexes: []encryption.Index{{Field: "A"}}, IndexKey: key("i")})
	if err != nil {
		t.Fatal(err)
	}
	r.ft.Reset()
	_, err = dyn.Insert(ctx, table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "x", "A_bidx": "forged"}})
	if !errors.Is(err, encryption.ErrInvalid) || r.ft.Count() != 0 {
		t.Errorf("a forged index property: %v after %d requests", err, r.ft.Count())
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
		r.ft.Reset()
		page, err := p.QueryPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if r.ft.Count() != 1 {
			t.Fatalf("QueryPage: %d round trips", r.ft.Count())
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
	r.ft.Reset()
	got, res, err := p.Modify(ctx, a.PartitionKey, a.RowKey, func(v *Person) error { v.Age++; v.Email = "new@contoso.com"; return nil }, nil)
	if err != nil || got.Age != 43 || got.ETag != res.ETag || r.ft.Count() != 2 {
		t.Fatalf("Modify: %v, age %d, %d round trips", err, got.Age, r.ft.Count())
	}
	// The entity Modify returns carries the version written.
	got.Name = "Al"
	if _, err := p.Update(ctx, got, got.ETag, table.Fields("Name")); err != nil {
		t.Fatalf("Update with the ETag Modify returned: %v", err)
	}
	read, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
	if err != nil || read.Email != "new@contoso.com" || read.Age != 43 || read.SSN != a.SSN || read.Name != "Al" {
		t.Fatalf("after Modify: %+v, %v", read, err)
	}
	if n := count(t, p.Lookup(ctx, "Email", "NEW@contoso.com", table.Filter{})); n != 1 {
		t.Errorf("Lookup after Modify: %d", n)
	}
	// An Update with the ETag read, then a stale one.
	read.Name = "Alicia"
	if _, err := p.Update(ctx, read, read.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Update(ctx, read, read.ETag, table.Merge); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("stale ETag: %v", err)
	}
	stop := errors.New("stop")
	if _, _, err := p.Modify(ctx, a.PartitionKey, a.RowKey, func(*Person) error { return stop }, nil); !errors.Is(err, stop) {
		t.Fatalf("fn's error: %v", err)
	}
	if err := p.Delete(ctx, a.PartitionKey, a.RowKey, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
}

func TestSubmit(t *testing.T) {
	r := newRig(t)
	p := people(t, r, keysOf(t, "k1", "k1"))
	ctx := context.Background()
	var ops []table.Op
	for i := range 3 {
		a := alice()
		a.RowKey = string(rune('a' + i))
		op, err := p.InsertOp(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	r.ft.Reset()
	if _, err := p.Table().Submit(ctx, ops, nil); err != nil || r.ft.Count() != 1 {
		t.Fatalf("Submit: %v, %d round trips", err, r.ft.Count())
	}
	got, err := p.Get(ctx, "Sales", "b", nil)
	if err != nil || got.SSN != alice().SSN {
		t.Fatalf("%+v, %v", got, err)
	}
	got.Age = 1
	up, err := p.UpdateOp(ctx, got, got.ETag, table.Fields("Age"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Table().Submit(ctx, []table.Op{up}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Get(ctx, "Sales", "b", nil); err != nil || got.Age != 1 || got.SSN != alice().SSN {
		t.Fatalf("%+v, %v", got, err)
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
			if err == nil && got.Age != int32(i) {
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
	r.ft.Reset()
	if _, err := p.Insert(ctx, alice()); !errors.Is(err, context.Canceled) || r.ft.Count() != 0 {
		t.Fatalf("%v, %d requests", err, r.ft.Count())
	}
	if _, err := p.Reencrypt(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reencrypt: %v", err)
	}
}

func count(t *testing.T, seq func(func(Person, error) bool)) int {
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
	v, err := p.Get(ctx, "Sales", "001", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The entity read carries its whole Meta (the write history the core
	// verifies with) through decryption.
	d, err := r.tbl.Get(ctx, "Sales", "001", nil)
	if err != nil || !reflect.DeepEqual(d.Meta, v.Meta) {
		t.Fatalf("Meta through decryption: %+v, stored %+v, %v", v.Meta, d.Meta, err)
	}
	v.Age = 50
	r.ft.Reset()
	r.ft.Inject(faults.Fault{Match: func(req *http.Request) bool { return req.Method == http.MethodPatch }, LoseResponse: true})
	res, err := p.Update(ctx, v, v.ETag, table.Merge)
	if err != nil || !res.Verified || r.ft.Count() != 3 {
		t.Fatalf("lost response of a conditional update: %+v, %v after %d requests (want write, resend, read)", res, err, r.ft.Count())
	}
	if got, err := p.Get(ctx, "Sales", "001", nil); err != nil || got.Age != 50 {
		t.Fatalf("%d, %v", got.Age, err)
	}
}

// Table names are case-insensitive, so the name bound into each value is
// lower-cased: a value written through one spelling reads through another.
func TestTableNameCaseInsensitive(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	keys := keysOf(t, "k1", "k1")
	upper, err := table.New[table.Dynamic](r.env.TableClient(strings.ToUpper(r.tbl.Name()), nil))
	if err != nil {
		t.Fatal(err)
	}
	viaUpper, err := encryption.New[Person](upper, r.opts(keys))
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
	if got, err := viaUpper.Get(ctx, a.PartitionKey, a.RowKey, nil); err != nil || got.SSN != a.SSN {
		t.Fatalf("written in lower case, read in upper case: %v", err)
	}
	if got, err := people(t, r, keys).Get(ctx, b.PartitionKey, b.RowKey, nil); err != nil || got.SSN != b.SSN {
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
