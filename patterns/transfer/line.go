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
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
)

// One entity is one line of JSON (JSON Lines), every property with its EDM
// type spelled out, so that nothing depends on how a reader guesses types:
//
//	{"PartitionKey":"Sales","RowKey":"000223","Timestamp":"2026-11-29T03:41:07.1234567Z",
//	 "Properties":[["Age","Edm.Int32",41],["Id","Edm.Int64","9223372036854775807"],
//	               ["Photo","Edm.Binary","AAEC/w=="],["Hired","Edm.DateTime","2020-01-02T03:04:05.0000001Z"],
//	               ["Ref","Edm.Guid","4185404a-..."],["Score","Edm.Double",2.5],["Name","Edm.String","Jo"],
//	               ["Active","Edm.Boolean",true]]}
//
// Properties are sorted by name, so an entity has one encoding; Timestamp
// is the source's (informational: a write sets the target's own).

// Edm type names of the line format.
const (
	edmString   = "Edm.String"
	edmBoolean  = "Edm.Boolean"
	edmInt32    = "Edm.Int32"
	edmInt64    = "Edm.Int64"
	edmDouble   = "Edm.Double"
	edmDateTime = "Edm.DateTime"
	edmBinary   = "Edm.Binary"
	edmGUID     = "Edm.Guid"
)

// maxLine bounds one line of an export: an entity is at most 2 MB of JSON
// (Cosmos DB) or 1 MiB of property data counted as UTF-16 (Table
// Storage); base64 of binary values and escaping of strings grow it by at
// most about 6x in the worst case, so 16 MiB leaves room and still caps what
// one line can make a reader allocate.
const maxLine = 16 << 20

// timeLayout is Edm.DateTime's text: UTC, 100 ns, always 7 digits.
const timeLayout = "2006-01-02T15:04:05.0000000Z"

// appendLine appends d's line (with a trailing newline) to b. ts false
// leaves the Timestamp out (for the content hash).
func appendLine(b []byte, d *table.Dynamic, ts bool) ([]byte, error) {
	b = append(b, `{"PartitionKey":`...)
	b = appendJSONString(b, d.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b = appendJSONString(b, d.RowKey)
	if ts && !d.Timestamp.IsZero() {
		b = append(b, `,"Timestamp":"`...)
		b = d.Timestamp.UTC().AppendFormat(b, timeLayout)
		b = append(b, '"')
	}
	b = append(b, `,"Properties":[`...)
	names := make([]string, 0, len(d.Properties))
	for n := range d.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendJSONString(b, n)
		var err error
		if b, err = appendValue(b, d.Properties[n]); err != nil {
			return b, fmt.Errorf("property %s: %w", n, err)
		}
		b = append(b, ']')
	}
	return append(b, "]}\n"...), nil
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		b = append(b, `,"`+edmString+`",`...)
		return appendJSONString(b, x), nil
	case bool:
		b = append(b, `,"`+edmBoolean+`",`...)
		return strconv.AppendBool(b, x), nil
	case int32:
		b = append(b, `,"`+edmInt32+`",`...)
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		b = append(b, `,"`+edmInt64+`","`...)
		return append(strconv.AppendInt(b, x, 10), '"'), nil
	case float64:
		b = append(b, `,"`+edmDouble+`",`...)
		switch {
		case math.IsNaN(x):
			return append(b, `"NaN"`...), nil
		case math.IsInf(x, 1):
			return append(b, `"Infinity"`...), nil
		case math.IsInf(x, -1):
			return append(b, `"-Infinity"`...), nil
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64), nil
	case time.Time:
		b = append(b, `,"`+edmDateTime+`","`...)
		return append(x.UTC().AppendFormat(b, timeLayout), '"'), nil
	case []byte:
		b = append(b, `,"`+edmBinary+`","`...)
		return append(base64.StdEncoding.AppendEncode(b, x), '"'), nil
	case table.GUID:
		b = append(b, `,"`+edmGUID+`","`...)
		return append(b, guidString(x)+`"`...), nil
	}
	return b, fmt.Errorf("value of type %T has no EDM type", v)
}

func guidString(g table.GUID) string {
	const hex = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, c := range g {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[c>>4], hex[c&15]
		j += 2
	}
	return string(s[:])
}

// parseGUID parses the 8-4-4-4-12 hex form (either case).
func parseGUID(s string) (table.GUID, bool) {
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

func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain { // printable ASCII without quotes or backslashes: as it is
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	// encoding/json's escaping, without HTML escapes: exact and valid
	// UTF-8 in, invalid UTF-8 replaced (the services store UTF-8 only).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// errLine is what a malformed line wraps (inside ErrCorrupt).
var errLine = errors.New("malformed entity line")

// decodeLine decodes one line strictly: one JSON object with exactly the
// known members, each once; every property a [name, type, value] triple
// of a known EDM type whose value is of that type; no duplicate property
// names, no system property names; nothing after the object.
func decodeLine(line []byte) (table.Dynamic, error) {
	var d table.Dynamic
	if !utf8.Valid(line) {
		return d, fmt.Errorf("%w: not UTF-8", errLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := delim(dec, '{'); err != nil {
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
			d.PartitionKey, err = stringToken(dec)
		case "RowKey":
			d.RowKey, err = stringToken(dec)
		case "Timestamp":
			var s string
			if s, err = stringToken(dec); err == nil {
				d.Timestamp, err = parseTime(s)
			}
		case "Properties":
			d.Properties, err = decodeProperties(dec)
		default:
			return d, fmt.Errorf("%w: unknown member %.40q", errLine, key)
		}
		if err != nil {
			return d, fmt.Errorf("%w: %s: %v", errLine, key, err)
		}
	}
	if err := delim(dec, '}'); err != nil {
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

func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errLine, err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: expected %q", errLine, string(want))
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
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

func parseTime(s string) (time.Time, error) {
	if len(s) != len(timeLayout) {
		return time.Time{}, fmt.Errorf("time %.40q is not of the form %s", s, timeLayout)
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %.40q: not of the form %s", s, timeLayout)
	}
	return t, nil
}

func decodeProperties(dec *json.Decoder) (map[string]any, error) {
	if err := delim(dec, '['); err != nil {
		return nil, err
	}
	props := map[string]any{}
	for dec.More() {
		if err := delim(dec, '['); err != nil {
			return nil, err
		}
		name, err := stringToken(dec)
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
		typ, err := stringToken(dec)
		if err != nil {
			return nil, fmt.Errorf("property %.40q type: %v", name, err)
		}
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("property %.40q value: %v", name, err)
		}
		v, err := typedValue(typ, t)
		if err != nil {
			return nil, fmt.Errorf("property %.40q: %v", name, err)
		}
		props[name] = v
		if err := delim(dec, ']'); err != nil {
			return nil, err
		}
	}
	if err := delim(dec, ']'); err != nil {
		return nil, err
	}
	return props, nil
}

// typedValue converts a JSON token to the Go value of EDM type typ, as
// table.Dynamic holds it.
func typedValue(typ string, t json.Token) (any, error) {
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
			return parseTime(s)
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
			g, ok := parseGUID(s)
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
