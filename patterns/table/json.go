package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
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
	raw   []byte // strings: the contents between the quotes, still escaped; numbers: the literal
	kind  byte   // 's' string, 'n' number, 't' true, 'f' false, 'z' null
	esc   bool   // the string contains escapes
	ascii bool   // the string's raw bytes are ASCII (so valid UTF-8)
}

// property is one name/value pair of an entity, with its type annotation.
type property struct {
	name  []byte // unescaped
	value jsonValue
	edm   string // from "name@odata.type", or ""
}

// errSyntax is matched (errors.Is) by every error of the scanner.
var errSyntax = errors.New("malformed entity JSON")

// A syntaxError says what is malformed in entity JSON and at which byte
// offset. It matches errSyntax.
type syntaxError struct {
	what string
	off  int
}

func (e *syntaxError) Error() string {
	return errSyntax.Error() + ": " + e.what + " at offset " + strconv.Itoa(e.off)
}

func (e *syntaxError) Unwrap() error { return errSyntax }

// syntaxAt reports what is wrong at data[i] (or that data ends there).
func syntaxAt(data []byte, i int, what string) error {
	if i >= len(data) {
		what = "unexpected end of input, " + what
	}
	return &syntaxError{what, i}
}

const odataType = "@odata.type"

// scanObject parses a flat JSON object into props (appending, so reusing
// its storage) and returns the odata.etag metadata.
//
// It accepts exactly the texts that encoding/json accepts and whose top
// level is an object of string, number, true, false and null values: the
// JSON grammar of RFC 8259 with its four whitespace bytes, escapes as
// listed there, no raw control characters in strings; invalid UTF-8 in a
// string reads as U+FFFD, as in encoding/json. Nested objects and arrays
// are rejected: entities are flat. Every error matches errSyntax and names
// the byte offset.
//
// Annotations ("X@odata.type") are attached to their property; other
// "odata." metadata is dropped. A name that occurs more than once keeps its
// last value, as encoding/json does; this holds for properties, annotations
// and odata.etag alike (a non-string annotation or etag counts as none).
// Properties keep the order of their first occurrence.
func scanObject(data []byte, props []property) ([]property, string, error) {
	var etag string
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return props, "", syntaxAt(data, i, "expected '{'")
	}
	type annotation struct {
		name []byte
		edm  string
		at   int // len(props) when read: where its property usually is
	}
	var annBuf [16]annotation
	anns := annBuf[:0]
	base := len(props)
	var seen nameSet
	i = skipSpace(data, i+1)
	more := i >= len(data) || data[i] != '}'
	if !more {
		i++
	}
	for more {
		if i >= len(data) || data[i] != '"' {
			return props, "", syntaxAt(data, i, "expected a property name")
		}
		name, esc, ascii, next, err := scanString(data, i)
		if err != nil {
			return props, "", err
		}
		if esc || !ascii && !utf8.Valid(name) {
			name = unescape(name)
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return props, "", syntaxAt(data, i, "expected ':'")
		}
		i = skipSpace(data, i+1)
		var v jsonValue
		if v, i, err = scanValue(data, i); err != nil {
			return props, "", err
		}
		switch {
		case bytes.HasSuffix(name, []byte(odataType)):
			a := annotation{name: name[:len(name)-len(odataType)], at: len(props)}
			if v.kind == 's' {
				a.edm = edmOf(v)
			}
			anns = append(anns, a)
		case string(name) == "odata.etag":
			etag = ""
			if v.kind == 's' {
				etag = stringOf(v)
			}
		case len(name) > 6 && string(name[:6]) == "odata.":
		default:
			if j := seen.find(props, base, name); j >= 0 {
				props[j].value = v
			} else {
				props = append(props, property{name: name, value: v})
			}
		}
		i = skipSpace(data, i)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == '}':
			i++
			more = false
		default:
			return props, "", syntaxAt(data, i, "expected ',' or '}'")
		}
	}
	if i = skipSpace(data, i); i < len(data) {
		return props, "", syntaxAt(data, i, "data after the object")
	}
	for _, a := range anns {
		if j := findName(props, base, a.name, a.at); j >= 0 {
			props[j].edm = a.edm
		}
	}
	return props, etag, nil
}

// nameSet is a Bloom filter of property names (1024 bits, one hash), so
// that looking for an earlier property of the same name is rarely needed.
type nameSet [16]uint64

// find returns the index in props[base:] of the property named name, or
// -1; in that case it adds name to the set, since the caller appends it.
func (s *nameSet) find(props []property, base int, name []byte) int {
	h := nameHash(name) >> 54
	w, bit := h>>6, uint64(1)<<(h&63)
	if s[w]&bit != 0 {
		for j := base; j < len(props); j++ {
			if string(props[j].name) == string(name) {
				return j
			}
		}
	}
	s[w] |= bit
	return -1
}

// nameHash hashes the length and the first and last 8 bytes of a name.
func nameHash(b []byte) uint64 {
	var x uint64
	switch n := len(b); {
	case n >= 8:
		x = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[n-8:]), 29)
	case n >= 4:
		x = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
	default:
		for _, c := range b {
			x = x<<8 | uint64(c)
		}
	}
	return (x ^ uint64(len(b))<<56) * 0x9e3779b97f4a7c15
}

// findName returns the index in props[base:] of the property named name,
// or -1. The service writes an annotation just before its property, so
// props[at] is tried first.
func findName(props []property, base int, name []byte, at int) int {
	for _, j := range [2]int{at, at - 1} {
		if j >= base && j < len(props) && string(props[j].name) == string(name) {
			return j
		}
	}
	for j := base; j < len(props); j++ {
		if string(props[j].name) == string(name) {
			return j
		}
	}
	return -1
}

// edmOf returns the value of an annotation, without allocating for the
// EDM type names the service writes.
func edmOf(v jsonValue) string {
	if !v.esc {
		switch string(v.raw) {
		case "Edm.Binary":
			return "Edm.Binary"
		case "Edm.Boolean":
			return "Edm.Boolean"
		case "Edm.DateTime":
			return "Edm.DateTime"
		case "Edm.Double":
			return "Edm.Double"
		case "Edm.Guid":
			return "Edm.Guid"
		case "Edm.Int32":
			return "Edm.Int32"
		case "Edm.Int64":
			return "Edm.Int64"
		case "Edm.String":
			return "Edm.String"
		}
	}
	return stringOf(v)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the string starting at data[i] == '"'. It returns its
// raw contents, whether they contain escapes, whether they are ASCII, and
// the index after it. Raw
// control characters and escapes other than \" \\ \/ \b \f \n \r \t
// \uXXXX are errors; invalid UTF-8 is not (it reads as U+FFFD).
func scanString(data []byte, i int) (raw []byte, esc, ascii bool, next int, err error) {
	var all byte // all bytes or'ed: bit 7 is set if one is not ASCII
	for j := i + 1; j < len(data); j++ {
		c := data[j]
		all |= c
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			return data[i+1 : j], esc, all < utf8.RuneSelf, j + 1, nil
		case '\\':
			esc = true
			if j+1 >= len(data) {
				return nil, false, false, 0, syntaxAt(data, j+1, "unterminated string")
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
				continue
			case 'u':
				if _, n := hex4(data, j+2); n == 4 {
					j += 5
					continue
				}
				return nil, false, false, 0, syntaxAt(data, j, "invalid \\u escape in string")
			}
			return nil, false, false, 0, syntaxAt(data, j, "invalid escape in string")
		default:
			return nil, false, false, 0, syntaxAt(data, j, "control character in string")
		}
	}
	return nil, false, false, 0, syntaxAt(data, len(data), "unterminated string")
}

// scanValue scans the scalar value at data[i:] and returns the index after
// it.
func scanValue(data []byte, i int) (jsonValue, int, error) {
	if i >= len(data) {
		return jsonValue{}, i, syntaxAt(data, i, "expected a value")
	}
	switch data[i] {
	case '"':
		raw, esc, ascii, next, err := scanString(data, i)
		return jsonValue{kind: 's', raw: raw, esc: esc, ascii: ascii}, next, err
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		next, err := scanNumber(data, i)
		return jsonValue{kind: 'n', raw: data[i:next]}, next, err
	case 't':
		if hasWord(data, i, "true") {
			return jsonValue{kind: 't'}, i + 4, nil
		}
	case 'f':
		if hasWord(data, i, "false") {
			return jsonValue{kind: 'f'}, i + 5, nil
		}
	case 'n':
		if hasWord(data, i, "null") {
			return jsonValue{kind: 'z'}, i + 4, nil
		}
	case '{', '[':
		return jsonValue{}, i, syntaxAt(data, i, "nested object or array (entities are flat)")
	}
	return jsonValue{}, i, syntaxAt(data, i, "invalid value")
}

// scanNumber scans the number (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?
// ([eE][+-]?[0-9]+)?) at data[i:] and returns the index after it. The
// byte after it must end a value (whitespace, ',' or '}').
func scanNumber(data []byte, i int) (int, error) {
	j := i
	if data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && '1' <= data[j] && data[j] <= '9':
		j = skipDigits(data, j+1)
	default:
		return j, syntaxAt(data, j, "expected a digit in number")
	}
	if j < len(data) && data[j] == '.' {
		k := skipDigits(data, j+1)
		if k == j+1 {
			return k, syntaxAt(data, k, "expected a digit after '.' in number")
		}
		j = k
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		k := skipDigits(data, j)
		if k == j {
			return k, syntaxAt(data, k, "expected a digit in exponent")
		}
		j = k
	}
	if j < len(data) {
		switch data[j] {
		case ',', '}', ' ', '\t', '\n', '\r':
		default:
			return j, syntaxAt(data, j, "malformed number")
		}
	}
	return j, nil
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

func hasWord(data []byte, i int, w string) bool {
	return len(data)-i >= len(w) && string(data[i:i+len(w)]) == w
}

// stringOf returns the unescaped string value.
func stringOf(v jsonValue) string {
	if !v.esc && (v.ascii || utf8.Valid(v.raw)) {
		return string(v.raw)
	}
	var buf [64]byte // on the stack: short strings cost one allocation
	return string(appendUnescaped(buf[:0], v.raw))
}

// unescape decodes the JSON string escapes of a string scanString
// accepted. Lone surrogates and invalid UTF-8 bytes decode as U+FFFD, as in
// encoding/json (and so would a malformed \u escape, which scanString
// rejects).
func unescape(s []byte) []byte {
	return appendUnescaped(make([]byte, 0, len(s)), s)
}

// appendUnescaped appends the unescaped s to out (see unescape).
func appendUnescaped(out, s []byte) []byte {
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
