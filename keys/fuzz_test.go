package keys_test

import (
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/tablekit/tablekit/keys"
)

// The committed corpora in testdata/fuzz run as ordinary tests; run
// `go test -fuzz=FuzzEscape ./keys` to search further.

func FuzzEscape(f *testing.F) {
	f.Add("jo@contoso.com", "jo@contoso")
	f.Add("a b", "a!")
	f.Add("\x7f", "\u00a0")
	f.Add("\ue000", "\U00010000")
	f.Add("bad\xff", "bad\xc3")
	f.Fuzz(func(t *testing.T, s, u string) {
		checkEscape(t, s)
		checkEscape(t, u)
		if utf8.ValidString(s) && utf8.ValidString(u) {
			checkOrder(t, "Escape", s, u, keys.Escape(s), keys.Escape(u))
		}
	})
}

// tuples cuts fuzz input into two tuples of one or more parts at the
// positions the fuzzer chooses.
func tuples(a, b, c, d string, cut uint8) (x, y []string) {
	parts := []string{a, b, c, d}
	n := 1 + int(cut%4)
	m := 1 + int(cut/4%4)
	x = parts[:n]
	y = append([]string{}, parts[4-m:]...)
	if cut&0x80 != 0 { // also exercise shared prefixes
		y = append(slices.Clone(x), y...)
	}
	return x, y
}

func FuzzJoin(f *testing.F) {
	f.Add("empid", "000223", "", "x", uint8(0x85))
	f.Add("a!b", "a", "!", "\"", uint8(0x0f))
	f.Add("", "", "", "", uint8(0xff))
	f.Add("x/y", "#", "\x00", "\U0010ffff", uint8(0x21))
	f.Fuzz(func(t *testing.T, a, b, c, d string, cut uint8) {
		x, y := tuples(a, b, c, d, cut)
		for _, p := range append(slices.Clone(x), y...) {
			if !utf8.ValidString(p) {
				// Round trip only: order is not promised for invalid UTF-8.
				if got, err := keys.Split(keys.Join(x...)); err != nil || !slices.Equal(got, x) {
					t.Fatalf("Split(Join(%q)) = %q, %v", x, got, err)
				}
				return
			}
		}
		checkJoin(t, x, y)
	})
}
