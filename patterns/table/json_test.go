package table

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func randJSONString(r *rand.Rand) string {
	alphabet := []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '<', '>', '&', '\b', '\f', '\n', '\r', '\t', 0, 0x1f, 0x7f, 'é', 0x2028, 0x2029, 0xfffd, 0xffff, 0x1f600}
	var b strings.Builder
	for n := r.IntN(12); n > 0; n-- {
		if r.IntN(10) == 0 {
			b.WriteByte(byte(0x80 + r.IntN(0x80))) // invalid UTF-8
			continue
		}
		b.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// The encoder must write exactly what encoding/json writes: the SDK
// re-encodes batch entities with encoding/json, and batch sizes are planned
// from our bytes.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 100000; i++ {
		s := randJSONString(r)
		got, units := appendString(nil, s)
		want, _ := json.Marshal(s)
		if string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if utf8.ValidString(s) {
			if n := len(utf16.Encode([]rune(s))); n != units {
				t.Fatalf("appendString(%q) counted %d UTF-16 units, want %d", s, units, n)
			}
		}
		// And the scanner reads back what encoding/json reads.
		obj := `{"k":` + string(got) + `}`
		props, _, err := scanObject([]byte(obj), nil)
		var m map[string]string
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			t.Fatal(err)
		}
		if err != nil || len(props) != 1 || stringOf(props[0].value) != m["k"] {
			t.Fatalf("scanObject(%s) = %+v, %v; want %q", obj, props, err, m["k"])
		}
	}
}

func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	vals := []float64{0, math.Copysign(0, -1), 1, 2, 1e20, 1e21, 1e-6, 1e-7, 123.456, math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-300}
	for i := 0; i < 100000; i++ {
		vals = append(vals, math.Float64frombits(r.Uint64()))
	}
	for _, f := range vals {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f); string(got) != string(want) {
			t.Fatalf("appendFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	}
}

func TestScanObjectShapes(t *testing.T) {
	props, etag, err := scanObject([]byte(` { "odata.etag" : "W/\"x\"", "A@odata.type":"Edm.Int64","A":"5", "B":true,"C":null,"D":-1.5e3,"odata.metadata":"m","E":"\u00e9\ud83d\ude00" } `), nil)
	if err != nil || etag != `W/"x"` || len(props) != 5 || props[0].edm != "Edm.Int64" || stringOf(props[4].value) != "é😀" {
		t.Fatalf("props %+v etag %q err %v", props, etag, err)
	}
	for _, bad := range []string{``, `[]`, `{"a":{}}`, `{"a":[1]}`, `{"a":1`, `{"a" 1}`, `{"a":tru}`, `{"a":"x}`, `{a:1}`} {
		if _, _, err := scanObject([]byte(bad), nil); err == nil {
			t.Errorf("scanObject(%q) accepted malformed input", bad)
		}
	}
}

func FuzzScanObject(f *testing.F) {
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A":"5"}`))
	f.Add([]byte(`{"s":"\ud800\u0041\\\""}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, _, err := scanObject(data, nil) // must never panic
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			return // FuzzScanObjectVsEncodingJSON compares accept/reject decisions
		}
		names := map[string]bool{}
		for _, p := range props {
			names[string(p.name)] = true
		}
		if len(names) != len(props) {
			return // duplicate names: encoding/json keeps the last
		}
		for _, p := range props {
			if want, ok := m[string(p.name)].(string); ok && p.value.kind == 's' && stringOf(p.value) != want {
				t.Fatalf("property %q = %q, encoding/json %q", p.name, stringOf(p.value), want)
			}
		}
	})
}
