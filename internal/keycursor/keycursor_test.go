package keycursor_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"
	"github.com/tablekit/tablekit/patterns/table"
)

func TestRoundTripAndForeign(t *testing.T) {
	l := keycursor.New(nil, "tbl", "log", "2024")
	c := l.Make("Sales", "a.b!c")
	got, ok := l.Parse(c, 2)
	if !ok || !slices.Equal(got, []string{"Sales", "a.b!c"}) {
		t.Fatalf("Parse(Make) = %q, %v", got, ok)
	}
	fp := strings.Split(string(c), ".")[1]
	for _, bad := range []struct {
		l keycursor.Listing
		c string
		n int
	}{
		{keycursor.New(nil, "tbl", "log", "2025"), string(c), 2},
		{l, string(c), 1},
		{l, "k1." + fp + ".!!", 1},
		{l, "x", 0},
		{l, string(c) + strings.Repeat(".", 1<<20), 2},
	} {
		if _, ok := bad.l.Parse(table.Cursor(bad.c), bad.n); ok {
			t.Errorf("Parse(%.40q, %d) accepted", bad.c, bad.n)
		}
	}
	if keycursor.New(nil, "", "ab", "c").Make() == keycursor.New(nil, "", "a", "bc").Make() {
		t.Fatal("fingerprints of different parts collide")
	}
}

// TestPlainCursorsUnchanged: without a key a cursor is the format earlier
// releases made ("k1.<fingerprint>.<keys>"), so cursors held across an
// upgrade resume.
func TestPlainCursorsUnchanged(t *testing.T) {
	const earlier = "k1.JKQG2ynxCgMO.U2FsZXM" // keycursor.Make(Fingerprint("log", "2024"), "Sales") before sealing
	if got := keycursor.New(nil, "any table", "log", "2024").Make("Sales"); got != earlier {
		t.Fatalf("Make = %q, want %q", got, earlier)
	}
}

// TestSealed: with a key a cursor holds no key readable, opens only in
// its listing and scope, and any altered character fails.
func TestSealed(t *testing.T) {
	key, err := table.NewCursorKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	l := keycursor.New(key, "tbl", "log", "2024")
	c := l.Make("jones@contoso.com")
	raw, _ := base64.RawURLEncoding.DecodeString(string(c))
	if strings.Contains(string(c), "jones") || bytes.Contains(raw, []byte("jones")) || strings.HasPrefix(string(c), "k1.") {
		t.Fatalf("sealed cursor %q shows its key", c)
	}
	if got, ok := l.Parse(c, 1); !ok || got[0] != "jones@contoso.com" {
		t.Fatalf("Parse = %q, %v", got, ok)
	}
	for _, other := range []keycursor.Listing{
		keycursor.New(key, "other", "log", "2024"),
		keycursor.New(key, "tbl", "log", "2025"),
		keycursor.New(nil, "tbl", "log", "2024"),
	} {
		if _, ok := other.Parse(c, 1); ok {
			t.Fatalf("cursor opened in another listing")
		}
	}
	if _, ok := l.Parse(keycursor.New(nil, "tbl", "log", "2024").Make("x"), 1); ok {
		t.Fatal("a sealed listing accepted a plain cursor")
	}
	for i := range len(c) {
		b := []byte(c)
		b[i] ^= 1
		if _, ok := l.Parse(table.Cursor(b), 1); ok {
			t.Fatalf("cursor altered at %d accepted", i)
		}
		if _, ok := l.Parse(c[:i], 1); ok {
			t.Fatalf("cursor cut to %d accepted", i)
		}
	}
}

func TestPageSize(t *testing.T) {
	sentinel := errors.New("pkg: invalid")
	for _, c := range []struct{ in, want int }{{0, table.MaxPageSize}, {1, 1}, {table.MaxPageSize, table.MaxPageSize}} {
		if got, err := keycursor.PageSize(sentinel, c.in); got != c.want || err != nil {
			t.Errorf("PageSize(%d) = %d, %v", c.in, got, err)
		}
	}
	for _, n := range []int{-1, table.MaxPageSize + 1} {
		if _, err := keycursor.PageSize(sentinel, n); !errors.Is(err, sentinel) {
			t.Errorf("PageSize(%d): %v, want the package's sentinel", n, err)
		}
	}
}
