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
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
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
	ID           table.GUID
	OK           bool
	Nick         *string
	Tags         []string `table:",json"`
}

var secret = []string{"Email", "SSN", "Age", "Big", "Score", "Born", "Photo", "ID", "OK", "Nick", "Tags"}

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

// fast is the retry policy of the test clients: real retries, short waits.
var fast = retry.Policy{Default: time.Millisecond, Max: 5 * time.Millisecond, MaxRetries: 5}

type rig struct {
	env *tabletest.Env
	raw *aztables.Client // no faults, no counting
	tbl *table.Table[table.Dynamic]
	ft  *faults.Transport
}

func newRig(t *testing.T) *rig {
	t.Helper()
	env := tabletest.New(t)
	r := &rig{env: env, ft: &faults.Transport{}}
	o := &aztables.ClientOptions{}
	o.Transport = r.ft
	fast.ApplyTo(&o.ClientOptions)
	c := env.Table(o)
	var err error
	if r.tbl, err = table.New[table.Dynamic](c); err != nil {
		t.Fatal(err)
	}
	r.raw = env.TableClient(r.tbl.Name(), nil)
	return r
}

func (r *rig) opts(keys encryption.KeyProvider) *encryption.Options {
	return &encryption.Options{
		Fields:   secret,
		Keys:     keys,
		Indexes:  []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}, {Field: "SSN", Property: "SSNIndex"}},
		IndexKey: key("index"),
	}
}

// optsFor is opts for other fields and indexes.
func (r *rig) optsFor(fields []string, indexes ...encryption.Index) *encryption.Options {
	return &encryption.Options{Fields: fields, Keys: keysOfKey("k1"), Indexes: indexes, IndexKey: key("index")}
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
	p, err := encryption.New[Person](r.tbl, r.opts(keys))
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
	b, ok := d.Properties[prop].([]byte)
	if !ok || len(b) < 2 || b[0] != 1 || len(b) < 2+int(b[1]) {
		t.Fatalf("%s is not an encrypted value: %T", prop, d.Properties[prop])
	}
	return string(b[2 : 2+int(b[1])])
}

func nick(s string) *string { return &s }

func alice() Person {
	return Person{
		PartitionKey: "Sales", RowKey: "001", Name: "Alice",
		Email: "Alice@Contoso.com", SSN: "123-45-6789", Age: 42, Big: -1 << 60, Score: 2,
		Born:  time.Date(1980, 5, 6, 7, 8, 9, 123456700, time.UTC),
		Photo: []byte{0, 1, 2, 255}, ID: table.GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
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
