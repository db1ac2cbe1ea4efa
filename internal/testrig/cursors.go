package testrig

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/patterns/table"
)

// CursorSecret is the secret of the rig's CursorKey.
var CursorSecret = []byte("tablekit test cursor secret, 32+")

// CursorKey returns a key made from CursorSecret: each call a new one, as
// another process would make it.
func CursorKey(t testing.TB) *table.CursorKey {
	t.Helper()
	k, err := table.NewCursorKey(CursorSecret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// MaxCursorError is the longest error text a refused cursor may give,
// however long the cursor.
const MaxCursorError = 200

// CursorShows reports whether cursor c shows s to whoever holds it: in
// its text, or in the base64 decoding of the whole or of any of its
// parts (separated by "." or "!"), and so on down (the service's
// continuation tokens are base64 of keys, inside the cursor's base64).
func CursorShows(c table.Cursor, s string) bool {
	return shows(string(c), s, 3)
}

func shows(text, s string, depth int) bool {
	if strings.Contains(text, s) {
		return true
	}
	if depth == 0 {
		return false
	}
	parts := strings.FieldsFunc(text, func(r rune) bool { return r == '.' || r == '!' })
	for _, p := range append(parts, text) {
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.StdEncoding, base64.RawStdEncoding} {
			if b, err := enc.DecodeString(p); err == nil && shows(string(b), s, depth-1) {
				return true
			}
		}
	}
	return false
}

// Alterations returns what a holder of cursor c might send instead: c
// with each character changed, c cut at each length but 0 (the empty
// cursor is the listing's start), and c with a
// character added at each end and in the middle (a line break too, which
// base64 decoders skip).
func Alterations(c table.Cursor) []table.Cursor {
	s := string(c)
	var out []table.Cursor
	for i := range len(s) {
		r := byte('A')
		if s[i] == r {
			r = 'B'
		}
		out = append(out, table.Cursor(s[:i]+string(r)+s[i+1:]))
		if i > 0 { // the empty cursor is the start
			out = append(out, table.Cursor(s[:i]))
		}
	}
	mid := len(s) / 2
	for _, x := range []string{s + "A", "A" + s, s[:mid] + "A" + s[mid:], s[:mid] + "\n" + s[mid:], s + "\n"} {
		out = append(out, table.Cursor(x))
	}
	return out
}

// CheckCursorsRefused checks that resume (a listing's page read from a
// cursor) refuses each of cursors with want (the package's ErrInvalid),
// each error within MaxCursorError bytes, and sends nothing.
func (r *Rig) CheckCursorsRefused(t testing.TB, want error, resume func(table.Cursor) error, cursors ...table.Cursor) {
	t.Helper()
	before := r.Faults.Count()
	for _, c := range cursors {
		err := resume(c)
		if !errors.Is(err, want) || !errors.Is(err, table.ErrInvalid) {
			t.Fatalf("cursor %.60q: %v; want %v", c, err, want)
		}
		if n := len(err.Error()); n > MaxCursorError {
			t.Fatalf("cursor of %d bytes: an error of %d bytes: %.300s", len(c), n, err)
		}
	}
	if n := r.Faults.Count() - before; n != 0 {
		t.Fatalf("refused cursors sent %d requests", n)
	}
}

// HugeCursors are cursors of a MiB each, plain-looking and not: what a
// caller may send to make an error, span or log echo it.
func HugeCursors() []table.Cursor {
	const mib = 1 << 20
	return []table.Cursor{
		table.Cursor(strings.Repeat("A", mib)),
		table.Cursor("c2." + strings.Repeat("A", mib)),
		table.Cursor("k1." + strings.Repeat(".", mib)),
		table.Cursor(strings.Repeat("\xff", mib)),
	}
}

// CheckSealed checks what a sealed cursor c promises: it shows none of
// shown (keys and indexed values of the listing); every alteration of c
// and every huge cursor is refused as CheckCursorsRefused checks; and c
// itself still resumes.
func (r *Rig) CheckSealed(t testing.TB, c table.Cursor, want error, resume func(table.Cursor) error, shown ...string) {
	t.Helper()
	if c == "" {
		t.Fatal("no cursor to check")
	}
	for _, s := range shown {
		if CursorShows(c, s) {
			t.Fatalf("sealed cursor %q shows %q", c, s)
		}
	}
	r.CheckCursorsRefused(t, want, resume, append(Alterations(c), HugeCursors()...)...)
	if err := resume(c); err != nil {
		t.Fatalf("the sealed cursor, unaltered: %v", err)
	}
}

// WalkPages reads a listing page by page with next (which may read each
// page in a fresh handle: another process), from the empty cursor to the
// end, and returns the ids (id of each item) of every page, sorted, and
// the first page's Next. It fails t on an error, after more than 100
// pages, and when a cursor shows any of shown (CursorShows).
func WalkPages[E any](t testing.TB, next func(table.Cursor) (table.Page[E], error), id func(E) string, shown ...string) (ids []string, first table.Cursor) {
	t.Helper()
	var c table.Cursor
	for pages := 1; ; pages++ {
		p, err := next(c)
		if err != nil || pages > 100 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, e := range p.Items {
			ids = append(ids, id(e))
		}
		if c = p.Next; c == "" {
			slices.Sort(ids)
			return ids, first
		}
		if first == "" {
			first = c
		}
		for _, s := range shown {
			if CursorShows(c, s) {
				t.Fatalf("page %d: cursor %q shows %q", pages, c, s)
			}
		}
	}
}
