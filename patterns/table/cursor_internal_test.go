package table

import (
	"errors"
	"strings"
	"testing"
)

// FuzzCursor: whatever string a caller sends as a cursor, the plain
// parser neither panics nor misreads it (what it accepts encodes back to
// the same position), and a sealed table refuses it unless it is the one
// cursor sealed here (a seed), each refusal an ErrInvalidFilter of
// bounded text. The seeds run in every test run.
func FuzzCursor(f *testing.F) {
	key, err := NewCursorKey([]byte("the fuzz test's secret, 32 bytes"))
	if err != nil {
		f.Fatal(err)
	}
	sealed := &Table[struct{}]{name: "fuzz", cursorKey: key}
	pk, rk := "Sales", "000001"
	good := position{pk: &pk, rk: &rk, returned: 3, fp: "abc"}
	for _, s := range []string{
		"", string(good.cursor()), string(sealed.cursorOf(good)), "c1.U2FsZXM.MDAx", "c2.U2FsZXM.MDAx.-1.abc",
		"c2.U2FsZXM.MDAx.3.abc.x", "c2.!!.MDAx.3.abc", "c2....", strings.Repeat(".", 64), "\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Cursor(s)
		if p, ok := c.position(); ok && (deref(p.pk) != "" || deref(p.rk) != "") {
			back, ok := p.cursor().position()
			if !ok || deref(back.pk) != deref(p.pk) || deref(back.rk) != deref(p.rk) || back.returned != p.returned || back.fp != p.fp {
				t.Fatalf("%q parses to %+v, which encodes to %q", s, p, p.cursor())
			}
		}
		if p, err := sealed.positionOf(c, "abc"); s != "" && err == nil && (deref(p.pk) != pk || deref(p.rk) != rk || p.returned != 3) {
			t.Fatalf("a sealed table took %q as %+v", s, p)
		} else if err != nil && (!errors.Is(err, ErrInvalidFilter) || len(err.Error()) > 150) {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
