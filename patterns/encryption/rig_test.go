package encryption_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// Person has a field of every supported type; all but Name are encrypted.
type Person struct {
	table.Meta
	PartitionKey string
	RowKey       string
	Name         string
	Email        string
	SSN          string
	Age          int32
	Big          int64
	Score        float64
	Born         time.Time
	Photo        []byte
	Badge        table.GUID
	OK           bool
	Nick         *string
	Tags         []string `table:",json"`
}

var secret = []string{"Email", "SSN", "Age", "Big", "Score", "Born", "Photo", "Badge", "OK", "Nick", "Tags"}

// key returns a deterministic 32-byte key named by s.
func key(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func keysOf(t testing.TB, current string, ids ...string) *encryption.StaticKeys {
	t.Helper()
	m := map[string][]byte{}
	for _, id := range ids {
		m[id] = key(id)
	}
	k, err := encryption.NewStaticKeys(current, m)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rig is a test's table: a testrig.Rig (its Faults count and fail the
// requests of tbl), tbl as a Table[Dynamic], and raw, a client of the same
// table without faults, for reading what is stored.
type rig struct {
	*testrig.Rig
	tbl *table.Table[table.Dynamic]
	raw *aztables.Client
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, testrig.New(t))
}

// newRigOn is newRig on tr (one of testrig.Services').
func newRigOn(t *testing.T, tr *testrig.Rig) *rig {
	t.Helper()
	c := tr.Table()
	return &rig{Rig: tr, tbl: testrig.NewTable[table.Dynamic](t, c), raw: tr.Clean(c)}
}

// opts are the options of Person in most tests (with secret encrypted):
// Email and SSN indexed.
func (r *rig) opts() *encryption.Options {
	return &encryption.Options{
		Indexes:  []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}, {Field: "SSN", Property: "SSNIndex"}},
		IndexKey: key("index"),
	}
}

// tableFor returns a Table[T] of r's table encrypting fields (with key
// k1) with these blind indexes.
func tableFor[T any](t *testing.T, r *rig, fields []string, indexes ...encryption.Index) *encryption.Table[T] {
	t.Helper()
	o := &encryption.Options{Indexes: indexes}
	if len(indexes) > 0 {
		o.IndexKey = key("index")
	}
	p, err := encryption.New[T](r.tbl, keysOfKey("k1"), fields, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func keysOfKey(id string) *encryption.StaticKeys {
	k, err := encryption.NewStaticKeys(id, map[string][]byte{id: key(id)})
	if err != nil {
		panic(err)
	}
	return k
}

// storedText is the stored JSON of an entity followed by the bytes of its
// Edm.Binary values, decoded: what to search for plaintext.
func storedText(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := string(raw)
	for k, typ := range m {
		if prop, ok := strings.CutSuffix(k, "@odata.type"); ok && typ == "Edm.Binary" {
			b, err := base64.StdEncoding.DecodeString(m[prop].(string))
			if err != nil {
				t.Fatalf("%s: %v", prop, err)
			}
			out += "\n" + string(b)
		}
	}
	return out
}

// rawRows returns storedText of every row of the table.
func (r *rig) rawRows(t *testing.T) []string {
	t.Helper()
	var out []string
	pager := r.raw.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entities {
			out = append(out, storedText(t, e))
		}
	}
	return out
}

func people(t *testing.T, r *rig, keys encryption.KeyProvider) *encryption.Table[Person] {
	t.Helper()
	p, err := encryption.New[Person](r.tbl, keys, secret, r.opts())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rawEntity reads the stored JSON of an entity with the raw client.
func (r *rig) rawEntity(t *testing.T, pk, rk string) map[string]any {
	t.Helper()
	resp, err := r.raw.GetEntity(context.Background(), pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		t.Fatal(err)
	}
	m["raw"] = string(resp.Value)
	return m
}

// storedKeyID returns the key id in the header of the stored value of prop.
func (r *rig) storedKeyID(t *testing.T, pk, rk, prop string) string {
	t.Helper()
	d, err := r.tbl.Get(context.Background(), pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := d.Value.Properties[prop].([]byte)
	if !ok || len(b) < 2 || b[0] != 1 || len(b) < 2+int(b[1]) {
		t.Fatalf("%s is not an encrypted value: %T", prop, d.Value.Properties[prop])
	}
	return string(b[2 : 2+int(b[1])])
}

func nick(s string) *string { return &s }

func alice() Person {
	return Person{
		PartitionKey: "Sales", RowKey: "001", Name: "Alice",
		Email: "Alice@Contoso.com", SSN: "123-45-6789", Age: 42, Big: -1 << 60, Score: 2,
		Born:  time.Date(1980, 5, 6, 7, 8, 9, 123456700, time.UTC),
		Photo: []byte{0, 1, 2, 255}, Badge: table.GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		OK: true, Nick: nick("Al"), Tags: []string{"vip", "emea"},
	}
}

// noPlaintext fails when text contains any of the secrets.
func noPlaintext(t *testing.T, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && bytes.Contains([]byte(text), []byte(s)) {
			t.Errorf("%q appears in %s", s, text)
		}
	}
}
