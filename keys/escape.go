package keys

import (
	"strings"
	"unicode/utf8"
)

// The escape scheme. Every character that Escape changes is replaced by an
// escape character followed by the two upper-case hex digits of its code
// point. The characters are split into blocks; each block is a contiguous
// range of code points that holds the forbidden characters of one gap and the
// escape character next to them, so an escaped character sorts exactly where
// the original did:
//
//	block            escape  holds
//	U+0000-U+0023    '"'     controls, ' ', '!', '"', '#'
//	U+002E-U+002F    '.'     '.', '/'
//	U+003E-U+003F    '>'     '>', '?'
//	U+005C-U+005D    ']'     '\', ']'
//	U+007F-U+00A0    U+00A0  DEL, C1 controls, no-break space
//
// Invalid UTF-8 bytes become U+00A0, 'X' and the byte's two hex digits.
const (
	escLow   = '"'      // block U+0000-U+0023
	escDot   = '.'      // block U+002E-U+002F
	escGT    = '>'      // block U+003E-U+003F
	escBrack = ']'      // block U+005C-U+005D
	escHigh  = '\u00a0' // block U+007F-U+00A0, and invalid bytes
	badByte  = 'X'      // after escHigh: an invalid UTF-8 byte follows in hex
	hexDigit = "0123456789ABCDEF"
)

// escapeOf returns the escape character for r, or 0 when r passes unchanged.
func escapeOf(r rune) rune {
	switch {
	case r <= 0x23:
		return escLow
	case r == 0x2e || r == 0x2f:
		return escDot
	case r == 0x3e || r == 0x3f:
		return escGT
	case r == 0x5c || r == 0x5d:
		return escBrack
	case 0x7f <= r && r <= 0xa0:
		return escHigh
	}
	return 0
}

// clean reports whether Escape(s) == s: s is valid UTF-8 and holds no
// character that Escape changes.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b < utf8.RuneSelf {
			if escapeOf(rune(b)) != 0 {
				return false
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || escapeOf(r) != 0 {
			return false
		}
		i += size - 1
	}
	return true
}

// Escape turns any string into a valid key (see Validate; only the length
// limit is not guaranteed: each escaped character takes three). It is
// reversible (Unescape) and, for valid UTF-8, order-preserving: s < t exactly
// when Escape(s) < Escape(t), comparing by bytes or by UTF-16 code units.
//
// A string that contains none of the characters U+0000-U+0023 (controls,
// space, '!', '"', '#'), '.', '/', '>', '?', '\', ']' or U+007F-U+00A0, and is
// valid UTF-8, is returned unchanged. Changed characters become an escape
// character and two hex digits, as in "a b" -> "a\"20b" and
// "jo@contoso.com" -> "jo@contoso.2Ecom". Invalid UTF-8 bytes are escaped
// too and restored exactly by Unescape.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	appendEscaped(&b, s)
	return b.String()
}

// appendEscaped writes Escape(s) to b.
func appendEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch esc := escapeOf(r); {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(escHigh)
			b.WriteByte(badByte)
			writeHex(b, s[i])
		case esc != 0:
			b.WriteRune(esc)
			writeHex(b, byte(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

func writeHex(b *strings.Builder, c byte) {
	b.WriteByte(hexDigit[c>>4])
	b.WriteByte(hexDigit[c&0xf])
}

// Unescape reverses Escape. It fails with ErrInvalidKey when key is not an
// output of Escape: a malformed or non-canonical escape, a character Escape
// would have escaped, or invalid UTF-8.
func Unescape(key string) (string, error) {
	if clean(key) {
		return key, nil
	}
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); {
		r, size := utf8.DecodeRuneInString(key[i:])
		if r == utf8.RuneError && size == 1 {
			return "", newError(key, i, "invalid UTF-8 byte 0x%02x", key[i])
		}
		esc := escapeOf(r)
		if esc == 0 {
			b.WriteString(key[i : i+size])
			i += size
			continue
		}
		if r != esc {
			return "", newError(key, i, "character %U must be escaped", r)
		}
		i += size
		if r == escHigh && i < len(key) && key[i] == badByte {
			c, ok := unhex(key, i+1)
			if !ok {
				return "", newError(key, i-size, "malformed escape of an invalid byte")
			}
			b.WriteByte(c)
			i += 3
			continue
		}
		c, ok := unhex(key, i)
		if !ok || escapeOf(rune(c)) != esc {
			return "", newError(key, i-size, "malformed escape %q", key[i-size:min(len(key), i+2)])
		}
		b.WriteRune(rune(c))
		i += 2
	}
	out := b.String()
	if Escape(out) != key { // e.g. an escaped byte that is part of valid UTF-8
		return "", newError(key, -1, "not the canonical escape of any string")
	}
	return out, nil
}

// unhex decodes the two upper-case hex digits at s[i:].
func unhex(s string, i int) (byte, bool) {
	if i+2 > len(s) {
		return 0, false
	}
	hi, lo := strings.IndexByte(hexDigit, s[i]), strings.IndexByte(hexDigit, s[i+1])
	if hi < 0 || lo < 0 {
		return 0, false
	}
	return byte(hi<<4 | lo), true
}
