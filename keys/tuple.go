package keys

import "strings"

// delimiter separates the parts of a compound key made by Join. Escape never
// produces it (it escapes '!' itself), so it is unambiguous, and it sorts
// below every character of an escaped part, which makes Join order-preserving
// over tuples.
const delimiter = '!'

// prefixEnd is the character right after delimiter: the exclusive upper bound
// of a prefix range.
const prefixEnd = delimiter + 1

// Join builds a compound key from one or more parts: each part escaped with
// Escape, separated by '!'. Parts made only of ASCII letters and digits
// (and most other characters, see Escape) are not changed:
// Join("empid", "000223") == "empid!000223".
//
// For valid UTF-8 parts Join preserves tuple order, by bytes and by UTF-16
// code units: Join(a...) < Join(b...) exactly when a sorts before b element
// by element, a proper prefix first. Split reverses it. Join() with no parts
// returns "", the same as Join("").
func Join(parts ...string) string {
	n := len(parts)
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(delimiter)
		}
		if clean(p) {
			b.WriteString(p)
		} else {
			appendEscaped(&b, p)
		}
	}
	return b.String()
}

// Split reverses Join. It fails with ErrInvalidKey when a part is not a
// valid output of Escape. Split("") returns one empty part.
func Split(key string) ([]string, error) {
	parts := strings.Split(key, string(delimiter))
	for i, p := range parts {
		u, err := Unescape(p)
		if err != nil {
			return nil, newError(key, -1, "part %d: %v", i, err)
		}
		parts[i] = u
	}
	return parts, nil
}

// PrefixRange returns the key range of every compound key that starts with
// parts: lo <= Join(q...) < hi exactly when parts is a prefix of q (q may
// equal parts). Use it as `RowKey ge lo and RowKey lt hi`:
//
//	lo, hi := keys.PrefixRange("000123") // all reviews of employee 000123
//
// It panics when called with no parts (every key would match; query without
// a RowKey bound instead).
func PrefixRange(parts ...string) (lo, hi string) {
	if len(parts) == 0 {
		panic("keys.PrefixRange: at least one part is required")
	}
	lo = Join(parts...)
	return lo, lo + string(rune(prefixEnd))
}
