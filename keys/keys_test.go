package keys_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablekit/tablekit/keys"
)

// interesting are the characters at the edges of every escape block and of
// the byte/UTF-16 order difference.
var interesting = []rune{
	0x00, 0x01, 0x1f, ' ', '!', '"', '#', '$', '-', '.', '/', '0', '9', '=', '>', '?', '@',
	'A', 'F', 'X', 'Z', '[', '\\', ']', '^', '_', 'a', 'z', '~', 0x7f, 0x80, 0x9f, 0xa0, 0xa1,
	'é', 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff,
}

func randString(r *rand.Rand, maxLen int) string {
	n := r.IntN(maxLen + 1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		if r.IntN(4) == 0 {
			b.WriteRune(rune(r.IntN(0x250))) // a spread of low code points
		} else {
			b.WriteRune(interesting[r.IntN(len(interesting))])
		}
	}
	return b.String()
}

// byteCmp and utf16Cmp are the two orders keys must preserve, computed
// independently of the package.
func byteCmp(a, b string) int { return strings.Compare(a, b) }

func utf16Cmp(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("a", keys.MaxKeyLength)
	tests := []struct {
		key  string
		ok   bool
		want string // part of the error message
	}{
		{"", true, ""},
		{"Sales", true, ""},
		{"email_jonesj@contoso.com", true, ""},
		{"o'brien & sons: 100%+é😀", true, ""},
		{long, true, ""},
		{strings.Repeat("😀", keys.MaxKeyLength/2), true, ""},
		{long + "a", false, "1025 UTF-16 code units"},
		{strings.Repeat("😀", keys.MaxKeyLength/2) + "a", false, "1025 UTF-16"},
		{"a/b", false, "U+002F"},
		{"a\\b", false, "U+005C"},
		{"a#b", false, "U+0023"},
		{"a?b", false, "U+003F"},
		{"a\x00", false, "U+0000"},
		{"\x1fa", false, "U+001F"},
		{"a\x7f", false, "U+007F"},
		{"a\u0080", false, "U+0080"},
		{"a\u009f", false, "U+009F"},
		{"a\u00a0", true, ""},
		{"a\xffb", false, "invalid UTF-8 byte 0xff at byte 1"},
		{"\xc3", false, "invalid UTF-8"},
		{"ok\ufffd", true, ""}, // a real U+FFFD is fine
	}
	for _, tt := range tests {
		err := keys.Validate(tt.key)
		if tt.ok {
			if err != nil {
				t.Errorf("Validate(%.20q) = %v, want nil", tt.key, err)
			}
			continue
		}
		if !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("Validate(%.20q) = %v, want ErrInvalidKey", tt.key, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%.20q) = %q, want it to mention %q", tt.key, err, tt.want)
		}
	}
	if err := keys.Validate("ab/c"); err == nil || !strings.Contains(err.Error(), `"ab/c"`) || !strings.Contains(err.Error(), "at byte 2") {
		t.Errorf("Validate(ab/c) = %v, want it to quote the key and name byte 2", err)
	}
}

func TestEscapeExamples(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"Sales", "Sales"},
		{"000123", "000123"},
		{"jo@contoso.com", "jo@contoso.2Ecom"},
		{"a b", `a"20b`},
		{"a/b", "a.2Fb"},
		{"a#b?c\\d", `a"23b>3Fc]5Cd`},
		{"tab\there", `tab"09here`},
		{"!", `"21`},
		{`"`, `"22`},
		{"\x7f\u0080\u009f\u00a0", "\u00a07F\u00a080\u00a09F\u00a0A0"},
		{"bad\xffbyte", "bad\u00a0XFFbyte"},
		{"é😀\ue000", "é😀\ue000"},
	}
	for _, tt := range tests {
		if got := keys.Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, err := keys.Unescape(tt.want); err != nil || got != tt.in {
			t.Errorf("Unescape(%q) = %q, %v, want %q", tt.want, got, err, tt.in)
		}
	}
}

func TestUnescapeRejects(t *testing.T) {
	for _, k := range []string{
		`"`, `"2`, `"2G`, `"24`, // dangling, short, bad hex, '$' is not in the low block
		"a.41",         // 'A' escaped under '.'
		"a b",          // a bare escape character... space is never emitted
		"a!b",          // '!' is never emitted by Escape
		"x/y", "x\x00", // forbidden characters
		"\u00a0XC3\u00a0XA9", // escaped bytes that form valid UTF-8 (é): not canonical
		"\u00a0X4",           // short byte escape
		"\xff",               // raw invalid UTF-8
		"]41",                // 'A' escaped under ']'
	} {
		if got, err := keys.Unescape(k); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("Unescape(%q) = %q, %v; want ErrInvalidKey", k, got, err)
		}
	}
}

// checkEscape asserts the Escape properties for one string.
func checkEscape(t *testing.T, s string) {
	t.Helper()
	e := keys.Escape(s)
	if err := keys.Validate(e); err != nil && len(utf16.Encode([]rune(e))) <= keys.MaxKeyLength {
		t.Fatalf("Escape(%q) = %q is not a valid key: %v", s, e, err)
	}
	u, err := keys.Unescape(e)
	if err != nil || u != s {
		t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, u, err)
	}
	if utf8.ValidString(s) && keys.Validate(s) == nil && !strings.ContainsAny(s, " !\".>]\u00a0") && e != s {
		t.Fatalf("Escape(%q) = %q: a valid key without escape characters must not change", s, e)
	}
}

// checkOrder asserts that f preserves both orders between s and t.
func checkOrder(t *testing.T, name string, s, t2, fs, ft string) {
	t.Helper()
	if b, fb := sign(byteCmp(s, t2)), sign(byteCmp(fs, ft)); b != fb {
		t.Fatalf("byte order: cmp(%q, %q) = %d but cmp(%s) = %d (%q, %q)", s, t2, b, name, fb, fs, ft)
	}
	if u, fu := sign(utf16Cmp(s, t2)), sign(utf16Cmp(fs, ft)); u != fu {
		t.Fatalf("UTF-16 order: cmp(%q, %q) = %d but cmp(%s) = %d (%q, %q)", s, t2, u, name, fu, fs, ft)
	}
}

func TestEscapeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		s, u := randString(r, 6), randString(r, 6)
		checkEscape(t, s)
		checkOrder(t, "Escape", s, u, keys.Escape(s), keys.Escape(u))
	}
	// Every pair of single interesting characters, and each followed by every other.
	for _, a := range interesting {
		for _, b := range interesting {
			s, u := string(a), string(b)
			checkOrder(t, "Escape", s, u, keys.Escape(s), keys.Escape(u))
			checkOrder(t, "Escape", s, s+u, keys.Escape(s), keys.Escape(s+u))
		}
	}
}

func TestEscapeInvalidUTF8(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50000; i++ {
		b := make([]byte, r.IntN(8))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		s := string(b)
		e := keys.Escape(s)
		if err := keys.Validate(e); err != nil {
			t.Fatalf("Escape(%q) = %q: %v", s, e, err)
		}
		if u, err := keys.Unescape(e); err != nil || u != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, u, err)
		}
	}
}

func randTuple(r *rand.Rand) []string {
	p := make([]string, 1+r.IntN(4))
	for i := range p {
		p[i] = randString(r, 4)
	}
	return p
}

// tupleCmp is tuple order: element by element, a proper prefix first.
func tupleCmp(a, b []string, cmp func(a, b string) int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmp(a[i], b[i]); c != 0 {
			return sign(c)
		}
	}
	return sign(len(a) - len(b))
}

func checkJoin(t *testing.T, a, b []string) {
	t.Helper()
	ja, jb := keys.Join(a...), keys.Join(b...)
	if err := keys.Validate(ja); err != nil && len(utf16.Encode([]rune(ja))) <= keys.MaxKeyLength {
		t.Fatalf("Join(%q) = %q is invalid: %v", a, ja, err)
	}
	got, err := keys.Split(ja)
	if err != nil || !slices.Equal(got, a) {
		t.Fatalf("Split(Join(%q)) = %q, %v", a, got, err)
	}
	if c, jc := tupleCmp(a, b, byteCmp), sign(byteCmp(ja, jb)); c != jc {
		t.Fatalf("byte order: tuples %q vs %q = %d, joined %q vs %q = %d", a, b, c, ja, jb, jc)
	}
	if c, jc := tupleCmp(a, b, utf16Cmp), sign(utf16Cmp(ja, jb)); c != jc {
		t.Fatalf("UTF-16 order: tuples %q vs %q = %d, joined %q vs %q = %d", a, b, c, ja, jb, jc)
	}
	// PrefixRange(a) holds Join(b) exactly when a is a prefix of b.
	lo, hi := keys.PrefixRange(a...)
	isPrefix := len(a) <= len(b) && slices.Equal(a, b[:len(a)])
	for _, cmp := range []func(a, b string) int{byteCmp, utf16Cmp} {
		if in := cmp(lo, jb) <= 0 && cmp(jb, hi) < 0; in != isPrefix {
			t.Fatalf("PrefixRange(%q) = [%q, %q): contains Join(%q) = %q is %v, want %v", a, lo, hi, b, jb, in, isPrefix)
		}
	}
}

func TestJoinProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 100000; i++ {
		a, b := randTuple(r), randTuple(r)
		checkJoin(t, a, b)
		// Extensions and shared prefixes are the interesting cases for order and ranges.
		checkJoin(t, a, append(slices.Clone(a), b...))
		checkJoin(t, append(slices.Clone(a), b...), a)
	}
}

func TestJoinExamples(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"empid", "000223"}, "empid!000223"},
		{[]string{"000123", "2012"}, "000123!2012"},
		{[]string{"BIB", "01234", "John", "M", "55"}, "BIB!01234!John!M!55"},
		{[]string{"a"}, "a"},
		{[]string{""}, ""},
		{[]string{"", ""}, "!"},
		{[]string{"a!b", "c"}, `a"21b!c`},
		{[]string{"x/y", "#"}, `x.2Fy!"23`},
	}
	for _, tt := range tests {
		if got := keys.Join(tt.parts...); got != tt.want {
			t.Errorf("Join(%q) = %q, want %q", tt.parts, got, tt.want)
		}
	}
	if got := keys.Join(); got != "" {
		t.Errorf("Join() = %q, want empty", got)
	}
	for _, k := range []string{"a!b/c", "a!\"2"} {
		if _, err := keys.Split(k); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("Split(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestPrefixRangePanicsWithoutParts(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "at least one part") {
			t.Fatalf("recover() = %v, want a panic naming the problem", r)
		}
	}()
	keys.PrefixRange()
}

func TestCompare(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 100000; i++ {
		a, b := randString(r, 5), randString(r, 5)
		if got, want := keys.Compare(a, b), sign(utf16Cmp(a, b)); got != want {
			t.Fatalf("Compare(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
	// The case where byte order and service order disagree.
	if keys.Compare("\ue000", "\U00010000") != 1 || strings.Compare("\ue000", "\U00010000") != -1 {
		t.Fatal("U+E000 must sort after U+10000 in service order and before it in byte order")
	}
}
