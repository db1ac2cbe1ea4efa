package transfer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
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
func parseGUID(s []byte) (table.GUID, bool) {
	var g table.GUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, false
	}
	for k, i := range [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34} {
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return g, false
		}
		g[k] = hi<<4 | lo
	}
	return g, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
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

// strictBase64 decodes Edm.Binary values (made once: Strict copies the
// encoding).
var strictBase64 = base64.StdEncoding.Strict()

// decodeLine decodes one line strictly: one JSON object (RFC 8259 exactly,
// as encoding/json reads it: UTF-8, any JSON whitespace between tokens)
// with exactly the known members, each once; every property a [name,
// type, value] triple of a known EDM type whose value is of that type;
// no duplicate property names, no system or annotation property names;
// nothing after the object but whitespace.
//
// It scans the bytes itself (encoding/json's Token API, which it replaced,
// allocated for every token): the entity's strings (keys, property names,
// Edm.String values) are one allocation; the others are the property map
// and the values that are not strings.
func decodeLine(line []byte) (table.Dynamic, error) {
	if !utf8.Valid(line) {
		return table.Dynamic{}, fmt.Errorf("%w: not UTF-8", errLine)
	}
	s := lineScanner{line: line}
	d, err := s.entity()
	if err != nil {
		return table.Dynamic{}, fmt.Errorf("%w: %w", errLine, err)
	}
	return d, nil
}

// lineScanner reads one line: line[i:] is what is left of it.
//
// The strings the entity keeps are gathered, unescaped, one after another
// in strs, and its properties in props, until the entity is made of them:
// both start on entity's stack, so they are passed and returned by value
// (a pointer to them, or a slice of strs in an error, would move them to
// the heap).
type lineScanner struct {
	line []byte
	i    int
}

// lineProp is one property: its name is strs[name.from:name.to]; an
// Edm.String value is strs[str.from:str.to] (isStr), any other is val.
type lineProp struct {
	name, str strSpan
	isStr     bool
	val       any
}

type strSpan struct{ from, to int }

func (p strSpan) of(s string) string { return s[p.from:p.to] }

// Member bits of an entity's line, in seen.
const (
	memberPartitionKey = 1 << iota
	memberRowKey
	memberTimestamp
	memberProperties
)

func (s *lineScanner) entity() (table.Dynamic, error) {
	var (
		d          table.Dynamic
		pk, rk     strSpan
		seen       int
		strsArray  [1024]byte // most entities' strings fit
		propsArray [16]lineProp
		strs       = strsArray[:0]
		props      = propsArray[:0]
	)
	if err := s.expect('{'); err != nil {
		return d, err
	}
	if !s.next('}') {
		for {
			key, err := s.transient(strs)
			if err != nil {
				return d, err
			}
			var m int
			switch string(key) {
			case "PartitionKey":
				m = memberPartitionKey
			case "RowKey":
				m = memberRowKey
			case "Timestamp":
				m = memberTimestamp
			case "Properties":
				m = memberProperties
			default:
				return d, fmt.Errorf("unknown member %.40q", string(key))
			}
			if seen&m != 0 {
				return d, fmt.Errorf("member %s twice", memberName(m))
			}
			seen |= m
			if err := s.expect(':'); err != nil {
				return d, err
			}
			switch m {
			case memberPartitionKey:
				strs, pk, err = s.keep(strs)
			case memberRowKey:
				strs, rk, err = s.keep(strs)
			case memberTimestamp:
				var t []byte
				if t, err = s.transient(strs); err == nil {
					d.Timestamp, err = parseTime(t)
				}
			case memberProperties:
				strs, props, err = s.properties(strs, props)
			}
			if err != nil {
				return d, fmt.Errorf("%s: %w", memberName(m), err)
			}
			if !s.next(',') {
				break
			}
		}
		if err := s.expect('}'); err != nil {
			return d, err
		}
	}
	if s.space(); s.i != len(s.line) {
		return d, s.errorf("data after the entity")
	}
	if all := memberPartitionKey | memberRowKey | memberProperties; seen&all != all {
		return d, errors.New("PartitionKey, RowKey and Properties are required")
	}
	all := string(strs) // the one allocation of all the entity's strings
	d.PartitionKey, d.RowKey = pk.of(all), rk.of(all)
	d.Properties = make(map[string]any, len(props))
	for _, p := range props {
		name := p.name.of(all)
		if _, dup := d.Properties[name]; dup {
			return table.Dynamic{}, fmt.Errorf("property %.40q twice", name)
		}
		if p.isStr {
			d.Properties[name] = p.str.of(all)
		} else {
			d.Properties[name] = p.val
		}
	}
	return d, nil
}

func memberName(m int) string {
	switch m {
	case memberPartitionKey:
		return "PartitionKey"
	case memberRowKey:
		return "RowKey"
	case memberTimestamp:
		return "Timestamp"
	}
	return "Properties"
}

// properties reads the array of properties, appending their strings to
// strs and the properties to props.
func (s *lineScanner) properties(strs []byte, props []lineProp) ([]byte, []lineProp, error) {
	if err := s.expect('['); err != nil {
		return strs, props, err
	}
	if s.next(']') {
		return strs, props, nil
	}
	for {
		var (
			p   lineProp
			err error
		)
		if strs, p, err = s.property(strs); err != nil {
			return strs, props, err
		}
		props = append(props, p)
		if !s.next(',') {
			return strs, props, s.expect(']')
		}
	}
}

// property reads one [name, type, value] triple. Its errors quote the
// name copied (see lineScanner).
func (s *lineScanner) property(strs []byte) ([]byte, lineProp, error) {
	var p lineProp
	if err := s.expect('['); err != nil {
		return strs, p, err
	}
	var err error
	if strs, p.name, err = s.keep(strs); err != nil {
		return strs, p, fmt.Errorf("property name: %w", err)
	}
	name := strs[p.name.from:p.name.to]
	switch {
	case string(name) == "PartitionKey" || string(name) == "RowKey" || string(name) == "Timestamp" || string(name) == reserved.WriteProperty:
		return strs, p, fmt.Errorf("property %q is a system property", string(name))
	case bytes.Contains(name, []byte("@odata")) || bytes.HasPrefix(name, []byte("odata.")):
		return strs, p, fmt.Errorf("property %.40q is an annotation", string(name))
	}
	if err := s.expect(','); err != nil {
		return strs, p, fmt.Errorf("property %.40q: %w", string(name), err)
	}
	typ, err := s.transient(strs)
	if err != nil {
		return strs, p, fmt.Errorf("property %.40q type: %w", string(name), err)
	}
	k := edmKindOf(typ)
	if k == 0 {
		return strs, p, fmt.Errorf("property %.40q: unknown type %.40q", string(name), string(typ))
	}
	if err := s.expect(','); err != nil {
		return strs, p, fmt.Errorf("property %.40q: %w", string(name), err)
	}
	if strs, err = s.value(k, strs, &p); err == nil {
		err = s.expect(']')
	}
	if err != nil {
		return strs, p, fmt.Errorf("property %.40q: %w", string(strs[p.name.from:p.name.to]), err)
	}
	return strs, p, nil
}

// edmKind is an EDM type of the line format.
type edmKind uint8

const (
	kindString edmKind = 1 + iota
	kindBoolean
	kindInt32
	kindInt64
	kindDouble
	kindDateTime
	kindBinary
	kindGUID
)

var edmNames = [...]string{kindString: edmString, kindBoolean: edmBoolean, kindInt32: edmInt32,
	kindInt64: edmInt64, kindDouble: edmDouble, kindDateTime: edmDateTime, kindBinary: edmBinary, kindGUID: edmGUID}

// edmKindOf returns typ's kind, 0 if it names none.
func edmKindOf(typ []byte) edmKind {
	for k, n := range edmNames {
		if k > 0 && string(typ) == n {
			return edmKind(k)
		}
	}
	return 0
}

// value reads a value of kind k into p: the JSON value the line format
// gives that type (Int64 as a decimal string written as strconv writes
// it, Double as a number or "NaN", "Infinity", "-Infinity", DateTime as
// timeLayout, Binary as strict standard base64, Guid as 8-4-4-4-12 hex).
func (s *lineScanner) value(k edmKind, strs []byte, p *lineProp) ([]byte, error) {
	s.space()
	var c byte
	if s.i < len(s.line) {
		c = s.line[s.i]
	}
	isString, isNumber := c == '"', c == '-' || '0' <= c && c <= '9'
	switch {
	case k == kindString && isString:
		p.isStr = true
		var err error
		strs, p.str, err = s.keep(strs)
		return strs, err
	case k == kindBoolean && s.word("true"):
		p.val = true
		return strs, nil
	case k == kindBoolean && s.word("false"):
		p.val = false
		return strs, nil
	case k == kindInt32 && isNumber:
		n, err := s.number()
		if err != nil {
			return strs, err
		}
		i, err := strconv.ParseInt(string(n), 10, 32)
		if err != nil {
			return strs, fmt.Errorf("%.40q is not an Edm.Int32", string(n))
		}
		p.val = int32(i)
		return strs, nil
	case k == kindDouble && isNumber:
		n, err := s.number()
		if err != nil {
			return strs, err
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return strs, fmt.Errorf("%.40q is not an Edm.Double", string(n))
		}
		p.val = f
		return strs, nil
	case isString && k != kindBoolean && k != kindInt32:
		t, err := s.transient(strs)
		if err != nil {
			return strs, err
		}
		p.val, err = stringValue(k, t)
		return strs, err
	}
	return strs, s.errorf("value is not an %s", edmNames[k])
}

// stringValue converts t, the string of a value of kind k that the line
// writes as a string, to the value.
func stringValue(k edmKind, t []byte) (any, error) {
	switch k {
	case kindInt64:
		i, err := strconv.ParseInt(string(t), 10, 64)
		var b [20]byte
		if err != nil || !bytes.Equal(strconv.AppendInt(b[:0], i, 10), t) {
			return nil, fmt.Errorf("%.40q is not an Edm.Int64", string(t))
		}
		return i, nil
	case kindDouble:
		switch string(t) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
	case kindDateTime:
		return parseTime(t)
	case kindBinary:
		b := make([]byte, strictBase64.DecodedLen(len(t)))
		n, err := strictBase64.Decode(b, t)
		if err != nil {
			return nil, errors.New("Edm.Binary is not base64")
		}
		return b[:n], nil
	case kindGUID:
		g, ok := parseGUID(t)
		if !ok {
			return nil, fmt.Errorf("%.40q is not an Edm.Guid", string(t))
		}
		return g, nil
	}
	return nil, fmt.Errorf("value is not an %s", edmNames[k])
}

func (s *lineScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

// space skips JSON whitespace.
func (s *lineScanner) space() {
	for s.i < len(s.line) {
		switch s.line[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and reads c if it comes next.
func (s *lineScanner) next(c byte) bool {
	s.space()
	if s.i < len(s.line) && s.line[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *lineScanner) expect(c byte) error {
	if !s.next(c) {
		return s.errorf("expected %q", c)
	}
	return nil
}

// word reads the literal w if it comes next.
func (s *lineScanner) word(w string) bool {
	if !bytes.HasPrefix(s.line[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

// number reads a JSON number, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// and returns its text.
func (s *lineScanner) number() ([]byte, error) {
	l, j := s.line, s.i
	if j < len(l) && l[j] == '-' {
		j++
	}
	switch {
	case j < len(l) && l[j] == '0':
		j++
	case j < len(l) && '1' <= l[j] && l[j] <= '9':
		j = skipDigits(l, j+1)
	default:
		s.i = j
		return nil, s.errorf("expected a digit")
	}
	if j < len(l) && l[j] == '.' {
		k := skipDigits(l, j+1)
		if k == j+1 {
			s.i = k
			return nil, s.errorf("expected a digit after '.'")
		}
		j = k
	}
	if j < len(l) && (l[j] == 'e' || l[j] == 'E') {
		j++
		if j < len(l) && (l[j] == '+' || l[j] == '-') {
			j++
		}
		k := skipDigits(l, j)
		if k == j {
			s.i = j
			return nil, s.errorf("expected a digit in the exponent")
		}
		j = k
	}
	n := l[s.i:j]
	s.i = j
	return n, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// rawString reads a JSON string and returns its contents as written and
// whether they hold escapes. Escapes other than \" \\ \/ \b \f \n \r \t
// \uXXXX, and raw control characters, are errors.
func (s *lineScanner) rawString() (raw []byte, esc bool, err error) {
	s.space()
	if s.i >= len(s.line) || s.line[s.i] != '"' {
		return nil, false, s.errorf("expected a string")
	}
	l := s.line
	for j := s.i + 1; j < len(l); j++ {
		switch c := l[j]; {
		case c == '"':
			raw, s.i = l[s.i+1:j], j+1
			return raw, esc, nil
		case c == '\\':
			esc = true
			if j+1 < len(l) {
				switch l[j+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					j++
					continue
				case 'u':
					if _, ok := hex4(l[j+2:]); ok {
						j += 5
						continue
					}
				}
			}
			s.i = j
			return nil, false, s.errorf("invalid escape in string")
		case c < 0x20:
			s.i = j
			return nil, false, s.errorf("control character in string")
		}
	}
	s.i = len(l)
	return nil, false, s.errorf("unterminated string")
}

// keep reads a string the entity keeps: appended to strs, at span.
func (s *lineScanner) keep(strs []byte) ([]byte, strSpan, error) {
	raw, esc, err := s.rawString()
	if err != nil {
		return strs, strSpan{}, err
	}
	from := len(strs)
	if esc {
		strs = appendUnescaped(strs, raw)
	} else {
		strs = append(strs, raw...)
	}
	return strs, strSpan{from, len(strs)}, nil
}

// transient reads a string the entity does not keep. Unescaped, it is
// written after strs's length (in place when strs has room), so it is
// valid until the next string is read.
func (s *lineScanner) transient(strs []byte) ([]byte, error) {
	raw, esc, err := s.rawString()
	if err != nil || !esc {
		return raw, err
	}
	return appendUnescaped(strs, raw)[len(strs):], nil
}

// appendUnescaped appends the unescaped raw, a string rawString read, to b,
// as encoding/json unescapes: a \u escape of a lone surrogate, or of a
// surrogate not followed by the escape of its pair, reads as U+FFFD.
func appendUnescaped(b, raw []byte) []byte {
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(b, raw...)
		}
		b = append(b, raw[:k]...)
		c := raw[k+1]
		raw = raw[k+2:]
		switch c {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, _ := hex4(raw)
			raw = raw[4:]
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					r2, ok = hex4(raw[2:])
				}
				if r = utf16.DecodeRune(r, r2); ok && r != utf8.RuneError {
					raw = raw[6:]
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
			continue
		}
		b = append(b, c) // '"', '\\', '/' as they are
	}
}

// hex4 decodes four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		h, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// parseTime parses an Edm.DateTime: timeLayout, as time.Parse reads it.
func parseTime(b []byte) (time.Time, error) {
	if len(b) != len(timeLayout) {
		return time.Time{}, fmt.Errorf("time %.40q is not of the form %s", string(b), timeLayout)
	}
	if t, ok := parseTimeDigits(b); ok {
		return t, nil
	}
	t, err := time.Parse(timeLayout, string(b))
	if err != nil {
		return time.Time{}, fmt.Errorf("time %.40q: not of the form %s", string(b), timeLayout)
	}
	return t, nil
}

// parseTimeDigits parses the time b of timeLayout's length that is
// written as Export writes it: digits where timeLayout has them and every
// field in range. Any other it leaves to time.Parse (false), which also
// takes a ',' for the '.' and a sign in the fraction.
func parseTimeDigits(b []byte) (time.Time, bool) {
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[27] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	num := func(from, to int) int {
		n := 0
		for _, c := range b[from:to] {
			ok = ok && '0' <= c && c <= '9'
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec, frac := num(11, 13), num(14, 16), num(17, 19), num(20, 27)
	if !ok || month < 1 || month > 12 || day < 1 || day > daysIn(time.Month(month), year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, frac*100, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}
