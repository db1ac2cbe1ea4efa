package table

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the JSON layer of the codec: an encoder that writes
// exactly what encoding/json would for the same values (so that the SDK's
// re-encoding of batch entities has the size tablekit planned for), and a
// scanner for the flat JSON objects the service returns as entities.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does
// (HTML-safe), and returns the buffer and the number of UTF-16 code units
// of s (the service measures strings in UTF-16).
func appendString(b []byte, s string) ([]byte, int) {
	b = append(b, '"')
	units := 0
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			units++
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			units++
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			units++
			continue
		}
		units += utf16.RuneLen(r)
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), units
}

// appendFloat appends f as encoding/json formats float64 values.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// jsonValue is one raw value of a flat JSON object.
type jsonValue struct {
	kind byte   // 's' string, 'n' number, 't' true, 'f' false, 'z' null
	raw  []byte // for strings: the contents between the quotes, still escaped
	esc  bool   // the string contains escapes
}

// property is one name/value pair of an entity, with its type annotation.
type property struct {
	name  []byte // unescaped
	value jsonValue
	edm   string // from "name@odata.type", or ""
}

var errSyntax = errors.New("malformed entity JSON")

const odataType = "@odata.type"

// scanObject parses a flat JSON object into props (reusing its storage).
// Annotations ("X@odata.type") are attached to their property; other
// "odata." metadata is returned only for odata.etag. Nested objects and
// arrays are rejected: entities are flat.
func scanObject(data []byte, props []property) ([]property, string, error) {
	var etag string
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return props, "", errSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return props, "", nil
	}
	type annotation struct{ name, edm []byte }
	var annBuf [16]annotation
	anns := annBuf[:0]
	for {
		if i >= len(data) || data[i] != '"' {
			return props, "", errSyntax
		}
		name, esc, next, err := scanString(data, i)
		if err != nil {
			return props, "", err
		}
		if esc {
			name = unescape(name)
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return props, "", errSyntax
		}
		i = skipSpace(data, i+1)
		var v jsonValue
		if v, i, err = scanValue(data, i); err != nil {
			return props, "", err
		}
		switch {
		case bytes.HasSuffix(name, []byte(odataType)):
			if v.kind == 's' {
				anns = append(anns, annotation{name[:len(name)-len(odataType)], v.raw})
			}
		case string(name) == "odata.etag":
			if v.kind == 's' {
				etag = stringOf(v)
			}
		case len(name) > 6 && string(name[:6]) == "odata.":
		default:
			props = append(props, property{name: name, value: v})
		}
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			break
		}
		return props, "", errSyntax
	}
	for _, a := range anns {
		for j := range props {
			if string(props[j].name) == string(a.name) {
				props[j].edm = string(a.edm)
				break
			}
		}
	}
	return props, etag, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the string starting at data[i] == '"'. It returns its
// raw contents, whether they contain escapes, and the index after it.
func scanString(data []byte, i int) ([]byte, bool, int, error) {
	esc := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '"':
			return data[i+1 : j], esc, j + 1, nil
		case '\\':
			esc = true
			j++
		}
	}
	return nil, false, 0, errSyntax
}

func scanValue(data []byte, i int) (jsonValue, int, error) {
	if i >= len(data) {
		return jsonValue{}, i, errSyntax
	}
	switch c := data[i]; {
	case c == '"':
		raw, esc, next, err := scanString(data, i)
		return jsonValue{kind: 's', raw: raw, esc: esc}, next, err
	case c == '-' || ('0' <= c && c <= '9'):
		j := i + 1
		for j < len(data) && (('0' <= data[j] && data[j] <= '9') || data[j] == '.' || data[j] == 'e' || data[j] == 'E' || data[j] == '+' || data[j] == '-') {
			j++
		}
		return jsonValue{kind: 'n', raw: data[i:j]}, j, nil
	case hasWord(data, i, "true"):
		return jsonValue{kind: 't'}, i + 4, nil
	case hasWord(data, i, "false"):
		return jsonValue{kind: 'f'}, i + 5, nil
	case hasWord(data, i, "null"):
		return jsonValue{kind: 'z'}, i + 4, nil
	}
	return jsonValue{}, i, errSyntax // objects and arrays: entities are flat
}

func hasWord(data []byte, i int, w string) bool {
	return len(data)-i >= len(w) && string(data[i:i+len(w)]) == w
}

// stringOf returns the unescaped string value.
func stringOf(v jsonValue) string {
	if !v.esc && utf8.Valid(v.raw) {
		return string(v.raw)
	}
	return string(unescape(v.raw))
}

// unescape decodes JSON string escapes. Invalid escapes, lone surrogates
// and invalid UTF-8 bytes decode as U+FFFD, as in encoding/json.
func unescape(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
				continue
			}
			out = append(out, s[i:i+size]...)
			i += size - 1
			continue
		}
		if c != '\\' || i+1 >= len(s) {
			out = append(out, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := hex4(s, i+1)
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, n2 := hex4(s, i+3); n2 == 4 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 2 + n2
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
	}
	return out
}

// hex4 decodes four hex digits at s[i:]; n is how many bytes it consumed
// (4, or 0 for a malformed escape, which decodes as U+FFFD).
func hex4(s []byte, i int) (rune, int) {
	if i+4 > len(s) {
		return utf8.RuneError, 0
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return utf8.RuneError, 0
		}
		r = r<<4 | rune(c)
	}
	return r, 4
}
