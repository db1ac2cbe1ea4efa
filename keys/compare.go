package keys

import "unicode/utf8"

// Compare compares two keys the way the service orders them: ordinally by
// UTF-16 code units. It returns -1, 0 or +1.
//
// Go's < compares bytes, which orders code points. The two orders agree
// except between U+E000-U+FFFF and the supplementary planes (U+10000 and
// up): UTF-16 stores the latter as surrogates U+D800-U+DFFF, which sort
// below U+E000. Code that sorts or merges keys on the client, to match what a
// query returns, must use Compare. Invalid UTF-8 bytes compare as their byte
// values, after every valid character.
func Compare(a, b string) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb || na != nb {
			return compareRunes(a, ra, na, b, rb, nb)
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) > 0:
		return 1
	case len(b) > 0:
		return -1
	}
	return 0
}

func compareRunes(a string, ra rune, na int, b string, rb rune, nb int) int {
	badA, badB := ra == utf8.RuneError && na == 1, rb == utf8.RuneError && nb == 1
	switch {
	case badA && badB:
		return cmp(int(a[0]), int(b[0]))
	case badA:
		return 1
	case badB:
		return -1
	}
	if ua, ub := utf16First(ra), utf16First(rb); ua != ub {
		return cmp(ua, ub)
	}
	return cmp(int(ra), int(rb)) // same high surrogate: low surrogates order as code points
}

// utf16First is the first UTF-16 code unit of r.
func utf16First(r rune) int {
	if r >= 0x10000 {
		return 0xd800 + int((r-0x10000)>>10)
	}
	return int(r)
}

func cmp(x, y int) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
