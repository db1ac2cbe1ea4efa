package transfer

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
)

// benchLine is the line of an entity like BenchmarkTransfer's: 8
// properties, about 330 bytes.
func benchLine(tb testing.TB, i int) []byte {
	d := table.Dynamic{PartitionKey: fmt.Sprintf("part%02d", i%10), RowKey: fmt.Sprintf("row%08d", i),
		Properties: map[string]any{
			"Name": fmt.Sprintf("customer %d", i), "Email": fmt.Sprintf("c%d@example.com", i),
			"Total": int64(i) * 1_000_003, "Count": int32(i % 1000), "Score": float64(i) / 7,
			"Active": i%3 == 0, "Since": time.Unix(int64(i), 0).UTC(), "Note": strings.Repeat("n", 80),
		}}
	d.Timestamp = time.Date(2026, 11, 29, 3, 41, 7, 123456700, time.UTC)
	line, err := appendLine(nil, &d, true)
	if err != nil {
		tb.Fatal(err)
	}
	return line[:len(line)-1]
}

// BenchmarkDecodeLine decodes the line of one entity like
// BenchmarkTransfer's (and, as a baseline, the same with encoding/json's
// Token API, the decoder it replaced).
func BenchmarkDecodeLine(b *testing.B) {
	line := benchLine(b, 12345)
	for _, c := range []struct {
		name   string
		decode func([]byte) (table.Dynamic, error)
	}{{"scanner", decodeLine}, {"tokens", refDecodeLine}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, err := c.decode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// refDecodeLine is decodeLine as it was written with encoding/json's
// Token API: the reference FuzzDecodeLine holds the scanner to (the same
// lines accepted, with the same values).
func refDecodeLine(line []byte) (table.Dynamic, error) {
	var d table.Dynamic
	if !utf8.Valid(line) {
		return d, fmt.Errorf("%w: not UTF-8", errLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := refDelim(dec, '{'); err != nil {
		return d, err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return d, fmt.Errorf("%w: %v", errLine, err)
		}
		key, _ := t.(string)
		if seen[key] {
			return d, fmt.Errorf("%w: member %q twice", errLine, key)
		}
		seen[key] = true
		switch key {
		case "PartitionKey":
			d.PartitionKey, err = refStringToken(dec)
		case "RowKey":
			d.RowKey, err = refStringToken(dec)
		case "Timestamp":
			var s string
			if s, err = refStringToken(dec); err == nil {
				d.Timestamp, err = refParseTime(s)
			}
		case "Properties":
			d.Properties, err = refDecodeProperties(dec)
		default:
			return d, fmt.Errorf("%w: unknown member %.40q", errLine, key)
		}
		if err != nil {
			return d, fmt.Errorf("%w: %s: %v", errLine, key, err)
		}
	}
	if err := refDelim(dec, '}'); err != nil {
		return d, err
	}
	if !seen["PartitionKey"] || !seen["RowKey"] || !seen["Properties"] {
		return d, fmt.Errorf("%w: PartitionKey, RowKey and Properties are required", errLine)
	}
	if _, err := dec.Token(); err != io.EOF {
		return d, fmt.Errorf("%w: data after the entity", errLine)
	}
	return d, nil
}

func refDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errLine, err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: expected %q", errLine, string(want))
	}
	return nil
}

func refStringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", errors.New("not a string")
	}
	return s, nil
}

func refParseTime(s string) (time.Time, error) {
	if len(s) != len(timeLayout) {
		return time.Time{}, fmt.Errorf("time %.40q is not of the form %s", s, timeLayout)
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %.40q: not of the form %s", s, timeLayout)
	}
	return t, nil
}

func refParseGUID(s string) (table.GUID, bool) {
	var g table.GUID
	if len(s) != 36 {
		return g, false
	}
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, false
	}
	if _, err := hex.Decode(g[:], []byte(h)); err != nil {
		return g, false
	}
	return g, true
}

func refDecodeProperties(dec *json.Decoder) (map[string]any, error) {
	if err := refDelim(dec, '['); err != nil {
		return nil, err
	}
	props := map[string]any{}
	for dec.More() {
		if err := refDelim(dec, '['); err != nil {
			return nil, err
		}
		name, err := refStringToken(dec)
		if err != nil {
			return nil, fmt.Errorf("property name: %v", err)
		}
		switch {
		case name == "PartitionKey" || name == "RowKey" || name == "Timestamp" || name == reserved.WriteProperty:
			return nil, fmt.Errorf("property %q is a system property", name)
		case strings.Contains(name, "@odata") || strings.HasPrefix(name, "odata."):
			return nil, fmt.Errorf("property %.40q is an annotation", name)
		}
		if _, dup := props[name]; dup {
			return nil, fmt.Errorf("property %.40q twice", name)
		}
		typ, err := refStringToken(dec)
		if err != nil {
			return nil, fmt.Errorf("property %.40q type: %v", name, err)
		}
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("property %.40q value: %v", name, err)
		}
		v, err := refTypedValue(typ, t)
		if err != nil {
			return nil, fmt.Errorf("property %.40q: %v", name, err)
		}
		props[name] = v
		if err := refDelim(dec, ']'); err != nil {
			return nil, err
		}
	}
	if err := refDelim(dec, ']'); err != nil {
		return nil, err
	}
	return props, nil
}

func refTypedValue(typ string, t json.Token) (any, error) {
	s, isString := t.(string)
	n, isNumber := t.(json.Number)
	switch typ {
	case edmString:
		if isString {
			return s, nil
		}
	case edmBoolean:
		if b, ok := t.(bool); ok {
			return b, nil
		}
	case edmInt32:
		if isNumber {
			i, err := strconv.ParseInt(string(n), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%.40q is not an Edm.Int32", string(n))
			}
			return int32(i), nil
		}
	case edmInt64:
		if isString {
			i, err := strconv.ParseInt(s, 10, 64)
			if err != nil || strconv.FormatInt(i, 10) != s {
				return nil, fmt.Errorf("%.40q is not an Edm.Int64", s)
			}
			return i, nil
		}
	case edmDouble:
		switch {
		case isNumber:
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return nil, fmt.Errorf("%.40q is not an Edm.Double", string(n))
			}
			return f, nil
		case s == "NaN":
			return math.NaN(), nil
		case s == "Infinity":
			return math.Inf(1), nil
		case s == "-Infinity":
			return math.Inf(-1), nil
		}
	case edmDateTime:
		if isString {
			return refParseTime(s)
		}
	case edmBinary:
		if isString {
			b, err := base64.StdEncoding.Strict().DecodeString(s)
			if err != nil {
				return nil, errors.New("Edm.Binary is not base64")
			}
			return b, nil
		}
	case edmGUID:
		if isString {
			g, ok := refParseGUID(s)
			if !ok {
				return nil, fmt.Errorf("%.40q is not an Edm.Guid", s)
			}
			return g, nil
		}
	default:
		return nil, fmt.Errorf("unknown type %.40q", typ)
	}
	return nil, fmt.Errorf("value is not an %s", typ)
}

// sameEntity reports whether a and b hold the same keys, Timestamp and
// properties (a NaN equal to a NaN).
func sameEntity(a, b table.Dynamic) bool {
	if a.PartitionKey != b.PartitionKey || a.RowKey != b.RowKey || a.Timestamp != b.Timestamp ||
		len(a.Properties) != len(b.Properties) || (a.Properties == nil) != (b.Properties == nil) {
		return false
	}
	for n, v := range a.Properties {
		w, ok := b.Properties[n]
		if !ok {
			return false
		}
		if f, isF := v.(float64); isF {
			if g, isG := w.(float64); !isG || math.Float64bits(f) != math.Float64bits(g) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(v, w) {
			return false
		}
	}
	return true
}

// FuzzDecodeLine holds decodeLine to refDecodeLine (the same lines
// accepted, with the same values), checks that it never panics and that
// what it decodes round-trips: appendLine of it decodes to it again, and
// encodes to the same line.
func FuzzDecodeLine(f *testing.F) {
	for i := range 3 {
		f.Add(benchLine(f, i))
	}
	for _, line := range decodeLineSeeds {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d, err := decodeLine(line)
		ref, refErr := refDecodeLine(line)
		switch {
		case (err == nil) != (refErr == nil):
			t.Fatalf("%q:\n decodeLine: %v\nencoding/json: %v", line, err, refErr)
		case err != nil:
			if !errors.Is(err, errLine) {
				t.Fatalf("%q: %v does not wrap errLine", line, err)
			}
			return
		case !sameEntity(d, ref):
			t.Fatalf("%q:\n decodeLine: %#v\nencoding/json: %#v", line, d, ref)
		}
		again, err := appendLine(nil, &d, true)
		if err != nil {
			t.Fatalf("%q: appendLine: %v", line, err)
		}
		d2, err := decodeLine(again[:len(again)-1])
		if err != nil || !sameEntity(d2, d) {
			t.Fatalf("%q: appendLine gives %q, decoded to %#v, %v", line, again, d2, err)
		}
		if third, _ := appendLine(nil, &d2, true); !bytes.Equal(third, again) {
			t.Fatalf("%q: appendLine gives %q, then %q", line, again, third)
		}
	})
}

// decodeLineSeeds are lines at the edges of the format, accepted or not.
var decodeLineSeeds = []string{
	`{"PartitionKey":"p","RowKey":"r","Properties":[]}`,
	" \t\r\n{ \"RowKey\" : \"r\" , \"Properties\" : [ ] , \"PartitionKey\" : \"p\" } \r\n\t",
	`{"PartitionKey":"p","RowKey":"r","Properties":[[ "A" , "Edm.Int32" , -0 ] , ["B","Edm.Double",-0.0e-0]]}`,
	`{"Partition\u004bey":"\ud83d\ude00\ud800\udc00x\ud800","RowKey":"\"\\\/\b\f\n\r\t\u00e9","Properties":[]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.\u0053tring","\udc00\ud800\ud800\ud83d\ude00"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double","NaN"],["B","Edm.Double","-Infinity"],["C","Edm.Double",1E+308]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double",1e309]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double",1e-400]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",-2147483648],["B","Edm.Int64","-9223372036854775808"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",01]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",1.]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",1e]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64","-0"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64","+1"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Boolean",truex]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Boolean",false]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String",null]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Binary",""],["B","Edm.Binary","AA\n=="],["C","Edm.Binary","AB=="]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Guid","4185404A-0f1e-4c2d-8b3a-000000000000"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Guid","4185404a-0f1e-4c2d-8b3a-00000000000-"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2024-02-29T23:59:59.9999999Z"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2023-02-29T00:00:00.0000000Z"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Timestamp":"2026-01-02T03:04:05,1234567Z","Properties":[]}`,
	`{"PartitionKey":"p","RowKey":"r","Timestamp":"2026-01-02T03:04:05.+123456Z","Properties":[]}`,
	`{"PartitionKey":"p","RowKey":"r","Timestamp":"2026-01-02T03:04:05.-000000Z","Properties":[]}`,
	`{"PartitionKey":"p","RowKey":"r","Timestamp":"0000-01-01T24:00:60.0000000Z","Properties":[]}`,
	`{"PartitionKey":"p","RowKey":"r","Timestamp":"0001-01-01T00:00:00.0000000Z","Properties":[]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"],]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]["B","Edm.String","x"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]],}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]]}x`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]]}1`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["","Edm.String","\u0000"],["odata.x","Edm.String",""]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","a\u"]]}`,
	`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","a\'"]]}`,
	"{\"PartitionKey\":\"p\",\"RowKey\":\"r\x7f\",\"Properties\":[[\"A\",\"Edm.String\",\"\t\"]]}",
}
