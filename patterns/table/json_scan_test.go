package table

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The scanner accepts exactly the flat objects encoding/json accepts. The
// oracle is json.Valid (the syntax check json.Unmarshal runs before it
// decodes) plus a decoder with UseNumber, so that numbers compare as their
// text and a valid number beyond float64 (1e400) is not mistaken for a
// syntax error; a valid object with a nested value is rejected by design.

// flatJSON returns what encoding/json makes of data, and whether that is
// an object whose values are all scalars.
func flatJSON(t testing.TB, data []byte) (map[string]any, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json: Valid(%q), but Decode: %v", data, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false // null, an array, a string, ...
	}
	for _, v := range m {
		switch v.(type) {
		case map[string]any, []any:
			return nil, false // valid JSON, but not an entity
		}
	}
	return m, true
}

// valueOf is a scanned value as encoding/json (with UseNumber) decodes it.
func valueOf(v jsonValue) any {
	switch v.kind {
	case 's':
		return stringOf(v)
	case 'n':
		return json.Number(v.raw)
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}

// checkVsEncodingJSON scans data and checks the result against
// encoding/json: the same accept/reject decision, and when both accept,
// the same properties, values, annotations and etag (the last of
// duplicates wins in both). It returns the scanner's results.
func checkVsEncodingJSON(t testing.TB, data []byte) ([]property, string, error) {
	t.Helper()
	props, etag, err := scanObject(data, nil)
	m, ok := flatJSON(t, data)
	if err != nil {
		var se *syntaxError
		if !errors.Is(err, errSyntax) || !errors.As(err, &se) || se.off < 0 || se.off > len(data) {
			t.Fatalf("scanObject(%q) error %v: want a *syntaxError within the input", data, err)
		}
	}
	if ok != (err == nil) {
		t.Fatalf("scanObject(%q) error %v, but encoding/json accepts it as a flat object: %v", data, err, ok)
	}
	if !ok {
		return props, etag, err
	}
	want := map[string]any{}
	for k, v := range m {
		switch {
		case strings.HasSuffix(k, odataType):
		case k == "odata.etag":
		case len(k) > 6 && strings.HasPrefix(k, "odata."):
		default:
			want[k] = v
		}
	}
	if e, _ := m["odata.etag"].(string); etag != e {
		t.Fatalf("scanObject(%q) etag %q, encoding/json %q", data, etag, e)
	}
	if len(props) != len(want) {
		t.Fatalf("scanObject(%q) = %d properties %+v, encoding/json %d: %v", data, len(props), props, len(want), want)
	}
	for _, p := range props {
		name := string(p.name)
		w, ok := want[name]
		if !ok {
			t.Fatalf("scanObject(%q): property %q is not in encoding/json's %v (or twice)", data, name, want)
		}
		delete(want, name)
		if got := valueOf(p.value); got != w {
			t.Fatalf("scanObject(%q): property %q = %#v, encoding/json %#v", data, name, got, w)
		}
		if e, _ := m[name+odataType].(string); p.edm != e {
			t.Fatalf("scanObject(%q): property %q annotation %q, encoding/json %q", data, name, p.edm, e)
		}
	}
	return props, etag, nil
}

// serviceEntity is an entity as the service returns it (minimal metadata).
const serviceEntity = `{"odata.etag":"W/\"datetime'2024-01-01T00%3A00%3A00Z'\"","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00.0000000Z","Age":5,"Big@odata.type":"Edm.Int64","Big":"123"}`

var scanAccepts = []struct {
	name, in string
	want     map[string]any // property -> value (json.Number for numbers); nil to skip
	edm      map[string]string
	etag     string
}{
	{"empty", `{}`, map[string]any{}, nil, ""},
	{"empty with whitespace", " \t\r\n{ \t\r\n} \t\r\n", map[string]any{}, nil, ""},
	{"service entity", serviceEntity,
		map[string]any{"PartitionKey": "p", "RowKey": "r", "Timestamp": "2024-01-01T00:00:00.0000000Z", "Age": json.Number("5"), "Big": "123"},
		map[string]string{"Big": "Edm.Int64"}, `W/"datetime'2024-01-01T00%3A00%3A00Z'"`},
	{"full metadata", `{"odata.metadata":"https://a.table.core.windows.net/$metadata#t/@Element","odata.type":"a.t","odata.id":"https://a/t(PartitionKey='p',RowKey='r')","odata.etag":"W/\"1\"","odata.editLink":"t(PartitionKey='p',RowKey='r')","PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-01T00:00:00Z"}`,
		map[string]any{"PartitionKey": "p", "RowKey": "r", "Timestamp": "2024-01-01T00:00:00Z"}, map[string]string{"Timestamp": "Edm.DateTime"}, `W/"1"`},
	{"whitespace everywhere", "{ \"a\" :\t1 ,\n\"b\"\r:\"x\" }\n", map[string]any{"a": json.Number("1"), "b": "x"}, nil, ""},
	{"literals", `{"t":true,"f":false,"z":null}`, map[string]any{"t": true, "f": false, "z": nil}, nil, ""},

	{"number zero", `{"n":0}`, map[string]any{"n": json.Number("0")}, nil, ""},
	{"number minus zero", `{"n":-0}`, map[string]any{"n": json.Number("-0")}, nil, ""},
	{"number fraction", `{"n":-12.50}`, map[string]any{"n": json.Number("-12.50")}, nil, ""},
	{"number zero fraction", `{"n":0.5}`, map[string]any{"n": json.Number("0.5")}, nil, ""},
	{"number exponents", `{"a":1e5,"b":1E5,"c":1e+5,"d":1e-5,"e":-0.0e-0,"f":2.5E+10}`, map[string]any{
		"a": json.Number("1e5"), "b": json.Number("1E5"), "c": json.Number("1e+5"), "d": json.Number("1e-5"), "e": json.Number("-0.0e-0"), "f": json.Number("2.5E+10")}, nil, ""},
	{"number long", `{"n":123456789012345678901234567890}`, map[string]any{"n": json.Number("123456789012345678901234567890")}, nil, ""},
	{"number beyond float64", `{"n":1e400}`, map[string]any{"n": json.Number("1e400")}, nil, ""}, // valid JSON; decoding it into a field is another matter
	{"number then space", `{"n":1 }`, map[string]any{"n": json.Number("1")}, nil, ""},

	{"all escapes", `{"s":"\"\\\/\b\f\n\r\t\u00e9\u00E9\uD83D\uDE00"}`, map[string]any{"s": "\"\\/\b\f\n\r\té\u00e9😀"}, nil, ""},
	{"lone high surrogate", `{"s":"\ud800x"}`, map[string]any{"s": "\ufffdx"}, nil, ""},
	{"lone low surrogate", `{"s":"\udc00"}`, map[string]any{"s": "\ufffd"}, nil, ""},
	{"surrogate then escape", `{"s":"\ud800\u0041"}`, map[string]any{"s": "\ufffdA"}, nil, ""},
	{"invalid UTF-8", "{\"s\":\"a\xffb\xc3\"}", map[string]any{"s": "a\ufffdb\ufffd"}, nil, ""},
	{"invalid UTF-8 in a name", "{\"\xff\":1}", map[string]any{"\ufffd": json.Number("1")}, nil, ""},
	{"non-ASCII raw", `{"é":"😀"}`, map[string]any{"é": "😀"}, nil, ""},
	{"long escaped string", `{"s":"` + strings.Repeat(`\"x`, 40) + `"}`, map[string]any{"s": strings.Repeat(`"x`, 40)}, nil, ""},
	{"DEL and U+2028 raw", "{\"s\":\"\x7f\u2028\"}", map[string]any{"s": "\x7f\u2028"}, nil, ""},
	{"escaped name", `{"\u0041ge":5}`, map[string]any{"Age": json.Number("5")}, nil, ""},
	{"escaped annotation", `{"A@odata.type":"Edm.\u0049nt64","A":"5"}`, map[string]any{"A": "5"}, map[string]string{"A": "Edm.Int64"}, ""},
	{"annotation after its property", `{"A":"5","A@odata.type":"Edm.Int64"}`, map[string]any{"A": "5"}, map[string]string{"A": "Edm.Int64"}, ""},
	{"annotation without property", `{"A@odata.type":"Edm.Int64"}`, map[string]any{}, nil, ""},
	{"empty name", `{"":1,"@odata.type":"Edm.Int32"}`, map[string]any{"": json.Number("1")}, map[string]string{"": "Edm.Int32"}, ""},
	{"name odata. is a property", `{"odata.":1}`, map[string]any{"odata.": json.Number("1")}, nil, ""},

	{"duplicate: last wins", `{"A":1,"B":2,"A":"x"}`, map[string]any{"A": "x", "B": json.Number("2")}, nil, ""},
	{"duplicate annotation: last wins", `{"A@odata.type":"Edm.Int64","A":"5","A@odata.type":"Edm.String"}`, map[string]any{"A": "5"}, map[string]string{"A": "Edm.String"}, ""},
	{"duplicate annotation: last is not a string", `{"A@odata.type":"Edm.Int64","A":"5","A@odata.type":null}`, map[string]any{"A": "5"}, map[string]string{}, ""},
	{"duplicate etag: last wins", `{"odata.etag":"1","odata.etag":"2"}`, map[string]any{}, nil, "2"},
	{"duplicate etag: last is not a string", `{"odata.etag":"1","odata.etag":5}`, map[string]any{}, nil, ""},
}

func TestScanObjectAccepts(t *testing.T) {
	for _, tc := range scanAccepts {
		t.Run(tc.name, func(t *testing.T) {
			props, etag, err := checkVsEncodingJSON(t, []byte(tc.in))
			if err != nil {
				t.Fatalf("scanObject(%q): %v", tc.in, err)
			}
			if etag != tc.etag {
				t.Errorf("etag %q, want %q", etag, tc.etag)
			}
			got := map[string]any{}
			edm := map[string]string{}
			for _, p := range props {
				got[string(p.name)] = valueOf(p.value)
				if p.edm != "" {
					edm[string(p.name)] = p.edm
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
				t.Errorf("properties %v, want %v", got, tc.want)
			}
			if fmt.Sprint(edm) != fmt.Sprint(tc.edm) && !(len(edm) == 0 && len(tc.edm) == 0) {
				t.Errorf("annotations %v, want %v", edm, tc.edm)
			}
		})
	}
}

var scanRejects = []struct {
	class, in string
	off       int // the byte offset the error names
}{
	// Escapes.
	{"escape", `{"s":"\x"}`, 6},
	{"escape", `{"s":"\u12"}`, 6},
	{"escape", `{"s":"\u12G4"}`, 6},
	{"escape", `{"s":"\U0041"}`, 6},
	{"escape", `{"s":"\'"}`, 6},
	{"escape", `{"s":"\a"}`, 6},
	{"escape", `{"s":"\0"}`, 6},
	{"escape", `{"s":"ok\ud800\u"}`, 14},
	{"escape", `{"\x":1}`, 2},
	{"escape", `{"s":"\`, 7},
	{"escape", `{"s":"\u00`, 6},
	// Raw control characters.
	{"control", "{\"s\":\"\x00\"}", 6},
	{"control", "{\"s\":\"a\x1f\"}", 7},
	{"control", "{\"s\":\"\n\"}", 6},
	{"control", "{\"s\":\"\t\"}", 6},
	{"control", "{\"a\rb\":1}", 3},
	// Trailing data.
	{"trailing", `{}x`, 2},
	{"trailing", `{} {}`, 3},
	{"trailing", `{"a":1}}`, 7},
	{"trailing", `{"a":1},`, 7},
	{"trailing", "{}\x00", 2},
	{"trailing", "{}\v", 2},
	{"trailing", "{}\u00a0", 2},
	// Numbers.
	{"number", `{"n":0x1p4}`, 6},
	{"number", `{"n":0x10}`, 6},
	{"number", `{"n":1.2.3}`, 8},
	{"number", `{"n":--1}`, 6},
	{"number", `{"n":01}`, 6},
	{"number", `{"n":-01}`, 7},
	{"number", `{"n":00}`, 6},
	{"number", `{"n":1e}`, 7},
	{"number", `{"n":1e+}`, 8},
	{"number", `{"n":1ee5}`, 7},
	{"number", `{"n":+1}`, 5},
	{"number", `{"n":Inf}`, 5},
	{"number", `{"n":-Inf}`, 6},
	{"number", `{"n":Infinity}`, 5},
	{"number", `{"n":NaN}`, 5},
	{"number", `{"n":1.}`, 7},
	{"number", `{"n":1.e5}`, 7},
	{"number", `{"n":.5}`, 5},
	{"number", `{"n":-}`, 6},
	{"number", `{"n":1_000}`, 6},
	{"number", `{"n":1`, 6},
	{"number", `{"n":1/}`, 6},
	// Literals.
	{"literal", `{"a":tru}`, 5},
	{"literal", `{"a":truex}`, 9},
	{"literal", `{"a":nul}`, 5},
	{"literal", `{"a":True}`, 5},
	{"literal", `{"a":undefined}`, 5},
	{"literal", `{"a":'x'}`, 5},
	// Structure.
	{"structure", ``, 0},
	{"structure", ` `, 1},
	{"structure", `null`, 0},
	{"structure", `[]`, 0},
	{"structure", `"x"`, 0},
	{"structure", `1`, 0},
	{"structure", "\ufeff{}", 0},
	{"structure", `{`, 1},
	{"structure", `{"a"}`, 4},
	{"structure", `{"a":}`, 5},
	{"structure", `{"a":1,}`, 7},
	{"structure", `{,}`, 1},
	{"structure", `{"a" 1}`, 5},
	{"structure", `{"a":1 "b":2}`, 7},
	{"structure", `{a:1}`, 1},
	{"structure", `{'a':1}`, 1},
	{"structure", `{"a":1;"b":2}`, 6},
	{"structure", "{\"a\":1,\v\"b\":2}", 7},
	{"structure", `{"a":"x}`, 8},
	// Nested values: valid JSON, but entities are flat.
	{"nested", `{"a":{}}`, 5},
	{"nested", `{"a":[1]}`, 5},
	{"nested", `{"odata.etag":"x","a":{"b":1}}`, 22},
}

func TestScanObjectRejects(t *testing.T) {
	for _, tc := range scanRejects {
		t.Run(tc.class, func(t *testing.T) {
			_, _, err := checkVsEncodingJSON(t, []byte(tc.in))
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("scanObject(%q) = %v, want a syntax error", tc.in, err)
			}
			if se.off != tc.off {
				t.Errorf("scanObject(%q) = %v, want offset %d", tc.in, err, tc.off)
			}
		})
	}
}

// scanObject appends to the slice it is given and leaves what was there.
func TestScanObjectAppends(t *testing.T) {
	props := []property{{name: []byte("A")}}
	props, _, err := scanObject([]byte(`{"A":1,"A":2}`), props)
	if err != nil || len(props) != 2 || string(props[1].name) != "A" || string(props[1].value.raw) != "2" {
		t.Fatalf("scanObject = %+v, %v", props, err)
	}
}

// Duplicates among many names (past the Bloom filter's first bits).
func TestScanObjectManyDuplicates(t *testing.T) {
	var b strings.Builder
	b.WriteByte('{')
	for i := range 600 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"Property%03d":%d,"Property%03d@odata.type":"Edm.Int32"`, i%300, i, i%300)
	}
	b.WriteByte('}')
	props, _, err := checkVsEncodingJSON(t, []byte(b.String()))
	if err != nil || len(props) != 300 {
		t.Fatalf("scanObject: %d properties, %v", len(props), err)
	}
}

func FuzzScanObjectVsEncodingJSON(f *testing.F) {
	f.Add([]byte(serviceEntity))
	f.Add([]byte(`{"odata.etag":"W/\"datetime'2024-05-06T07%3A08%3A09.1234567Z'\"","PartitionKey":"Sales","RowKey":"000223","Timestamp":"2024-05-06T07:08:09.1234567Z","Name":"Jo Jones","Age":29,"Balance@odata.type":"Edm.Double","Balance":1234.5,"Visits@odata.type":"Edm.Int64","Visits":"1099511627776","Active":true,"Joined@odata.type":"Edm.DateTime","Joined":"2024-05-06T07:08:09Z","Avatar@odata.type":"Edm.Binary","Avatar":"MDEyMzQ1Njc4OWFiY2RlZg==","Id@odata.type":"Edm.Guid","Id":"4185404a-5818-48c3-b9be-f217df0dba6f","Score@odata.type":"Edm.Double","Score":"NaN","Notes":"a note with some \u003chtml\u003e \u0026 \"quotes\"","Gone":null}`))
	f.Add([]byte(`{"odata.metadata":"https://a.table.core.windows.net/$metadata#t/@Element","odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-01T00:00:00Z"}`))
	for _, tc := range scanAccepts {
		f.Add([]byte(tc.in))
	}
	for _, tc := range scanRejects {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkVsEncodingJSON(t, data)
	})
}

// BenchmarkScanObject scans entities as the service returns them.
func BenchmarkScanObject(b *testing.B) {
	var wide strings.Builder
	wide.WriteString(`{"odata.etag":"W/\"datetime'2024-01-01T00%3A00%3A00Z'\"","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00.0000000Z"`)
	for i := range Storage.MaxProperties {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&wide, `,"Property%03d":%d`, i, i)
		case 1:
			fmt.Fprintf(&wide, `,"Property%03d@odata.type":"Edm.Int64","Property%03d":"%d"`, i, i, i<<40)
		default:
			fmt.Fprintf(&wide, `,"Property%03d":"value number %d"`, i, i)
		}
	}
	wide.WriteByte('}')
	for _, bc := range []struct{ name, body string }{
		{"entity", `{"odata.etag":"W/\"datetime'2024-05-06T07%3A08%3A09.1234567Z'\"","PartitionKey":"Sales","RowKey":"000223","Timestamp":"2024-05-06T07:08:09.1234567Z","Name":"Jo Jones","Email":"jonesj@contoso.com","Age":29,"Balance@odata.type":"Edm.Double","Balance":1234.5,"Visits@odata.type":"Edm.Int64","Visits":"1099511627776","Active":true,"Joined@odata.type":"Edm.DateTime","Joined":"2024-05-06T07:08:09Z","Avatar@odata.type":"Edm.Binary","Avatar":"MDEyMzQ1Njc4OWFiY2RlZg==","Score@odata.type":"Edm.Double","Score":0.75,"Notes":"a note with some \u003chtml\u003e \u0026 \"quotes\""}`},
		{"wide", wide.String()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.body)
			props := make([]property, 0, 300)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var err error
				if props, _, err = scanObject(data, props[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
		})
	}
}
