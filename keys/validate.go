package keys

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxKeyLength is the longest PartitionKey or RowKey the service accepts:
// 1,024 characters, counted as UTF-16 code units (a character outside the
// Basic Multilingual Plane counts twice). Microsoft's documents disagree:
// the Table Storage scalability targets say "a string up to 1024
// characters", the data model says "up to 1 KiB in size" (which, read as
// UTF-16 bytes, would be 512). tablekit follows the specific figure.
// Azurite follows the other reading and rejects keys over 512 code units
// with 400 InvalidInput, so tests of keys longer than 512 need a real
// account.
const MaxKeyLength = 1024

// ErrInvalidKey is the sentinel for every error of this package: a key that
// the service would reject, or a string that is not an encoding this package
// produced. Test with errors.Is(err, keys.ErrInvalidKey).
var ErrInvalidKey = errors.New("invalid key")

// keyError describes why a key is invalid: its message quotes the key and
// names the offending character and its byte offset, or the length. It
// satisfies errors.Is(err, ErrInvalidKey).
type keyError struct {
	Key    string // the offending key (or its first 64 bytes)
	Pos    int    // byte offset of the offending character; -1 when not about one character
	Reason string // what is wrong
}

// Error describes the problem, quoting the key.
func (e *keyError) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("invalid key %q: %s at byte %d", e.Key, e.Reason, e.Pos)
	}
	return fmt.Sprintf("invalid key %q: %s", e.Key, e.Reason)
}

// Is reports whether target is ErrInvalidKey.
func (e *keyError) Is(target error) bool { return target == ErrInvalidKey }

func newError(key string, pos int, format string, args ...any) error {
	if len(key) > 64 {
		key = key[:64] + "..."
	}
	return &keyError{Key: key, Pos: pos, Reason: fmt.Sprintf(format, args...)}
}

// forbidden reports whether the service rejects r in a key: '/', '\\', '#',
// '?' and the control characters U+0000-U+001F and U+007F-U+009F.
func forbidden(r rune) bool {
	return r < 0x20 || (0x7f <= r && r <= 0x9f) || r == '/' || r == '\\' || r == '#' || r == '?'
}

// Validate returns nil if key can be used as a PartitionKey or RowKey on the
// real service: valid UTF-8, none of the characters '/', '\\', '#', '?',
// U+0000-U+001F, U+007F-U+009F, and at most MaxKeyLength UTF-16 code units.
// The empty string is valid. The error names the character and its position,
// or the length.
func Validate(key string) error {
	units := 0
	for i, r := range key {
		switch {
		case r == utf8.RuneError && !validAt(key, i):
			return newError(key, i, "invalid UTF-8 byte 0x%02x", key[i])
		case forbidden(r):
			return newError(key, i, "character %U (%q) is not allowed in keys", r, r)
		}
		units += utf16Len(r)
	}
	if units > MaxKeyLength {
		return newError(key, -1, "%d UTF-16 code units, more than the maximum %d", units, MaxKeyLength)
	}
	return nil
}

// validAt reports whether the rune at key[i:] is a real U+FFFD rather than
// the result of an invalid byte.
func validAt(key string, i int) bool {
	_, size := utf8.DecodeRuneInString(key[i:])
	return size == 3
}

// utf16Len is the number of UTF-16 code units of r.
func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}
