package cursorseal_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/cursorseal"
)

var (
	secretA = bytes.Repeat([]byte{'a'}, 32)
	secretB = bytes.Repeat([]byte{'b'}, 40)
)

func mustKey(t testing.TB, secrets ...[]byte) *cursorseal.Key {
	t.Helper()
	k, err := cursorseal.New(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Altered returns what a holder of c might try instead of it: each
// character changed (to a base64url character, and to another byte),
// c cut at each length, and c with a character added at each end or in
// its middle (a line break too, which base64 decoders skip).
func altered(c string) []string {
	var out []string
	for i := range len(c) {
		for _, r := range []byte{'A', 'B', '\n', 0xff} {
			if c[i] != r {
				out = append(out, c[:i]+string(r)+c[i+1:])
			}
		}
		out = append(out, c[:i])
	}
	mid := len(c) / 2
	return append(out, c+"A", "A"+c, c[:mid]+"A"+c[mid:], c[:mid]+"\n"+c[mid:], c+"\n")
}

func TestSealOpen(t *testing.T) {
	k := mustKey(t, secretA)
	plain := "c2.am9uZXNAY29udG9zby5jb20.eA.3.abc"
	c := k.Seal("listing", plain)
	if got, ok := k.Open("listing", c); !ok || got != plain {
		t.Fatalf("Open(Seal) = %q, %v", got, ok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || strings.Contains(c, plain) || bytes.Contains(raw, []byte(plain)) || bytes.Contains(raw, []byte("jones")) {
		t.Fatalf("sealed cursor %q shows its plain text (%v)", c, err)
	}
	if c2 := k.Seal("listing", plain); c2 == c {
		t.Fatal("two seals of one cursor are the same: no random salt")
	}
	if _, ok := k.Open("other listing", c); ok {
		t.Fatal("opened as a cursor of another listing")
	}
	if _, ok := mustKey(t, secretB).Open("listing", c); ok {
		t.Fatal("opened with another secret")
	}
	for _, a := range altered(c) {
		if _, ok := k.Open("listing", a); ok {
			t.Fatalf("altered cursor %q opened", a)
		}
	}
	for _, bad := range []string{"", "A", plain, strings.Repeat("A", 1<<20)} {
		if _, ok := k.Open("listing", bad); ok {
			t.Fatalf("Open(%.40q) succeeded", bad)
		}
	}
}

// TestRotation: a Key seals with its first secret and opens with any, so
// cursors sealed before a rotation resume after it.
func TestRotation(t *testing.T) {
	before := mustKey(t, secretA).Seal("l", "x")
	rotated := mustKey(t, secretB, secretA)
	if got, ok := rotated.Open("l", before); !ok || got != "x" {
		t.Fatalf("rotated key: Open(earlier cursor) = %q, %v", got, ok)
	}
	after := rotated.Seal("l", "y")
	if _, ok := mustKey(t, secretA).Open("l", after); ok {
		t.Fatal("the rotated key sealed with its older secret")
	}
	if got, ok := mustKey(t, secretB).Open("l", after); !ok || got != "y" {
		t.Fatalf("new secret: Open = %q, %v", got, ok)
	}
}

func TestNewRefusesShortSecrets(t *testing.T) {
	for _, secrets := range [][][]byte{nil, {make([]byte, 31)}, {secretA, []byte("short")}} {
		if _, err := cursorseal.New(secrets...); err == nil {
			t.Fatalf("New(%d secrets) accepted", len(secrets))
		} else if strings.Contains(err.Error(), "short") {
			t.Fatalf("error shows a secret: %v", err)
		}
	}
	s := bytes.Repeat([]byte{1}, 32)
	k := mustKey(t, s)
	c := k.Seal("l", "x")
	s[0] = 2 // the caller reuses its buffer
	if _, ok := k.Open("l", c); !ok {
		t.Fatal("the Key did not copy its secret")
	}
}

func TestQuoteIsBounded(t *testing.T) {
	if got := cursorseal.Quote("short"); got != `"short"` {
		t.Fatalf("Quote(short) = %s", got)
	}
	long := strings.Repeat("\xff", 1<<20)
	if got := cursorseal.Quote(long); len(got) > 100 || !strings.Contains(got, "1048576 bytes") {
		t.Fatalf("Quote of 1 MiB = %d bytes: %.200s", len(got), got)
	}
}

// FuzzOpen: whatever a caller sends as a cursor, Open does not panic,
// and opens nothing but a sealed cursor, to the text it sealed (the
// seeds, which run in every test run, hold one sealed cursor and its
// alterations; a fuzzing worker seals its own, with another salt).
func FuzzOpen(f *testing.F) {
	const plain = "c2.U2FsZXM.MDAx.2.abc"
	k := mustKey(f, secretA)
	good := k.Seal("listing", plain)
	for _, s := range append(altered(good)[:40], good, "", plain, "AQ", strings.Repeat("A", 44)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		got, ok := k.Open("listing", c)
		if ok && got != plain || c == good && !ok {
			t.Fatalf("Open(%q) = %q, %v", c, got, ok)
		}
		if ok {
			if _, again := k.Open("other", c); again {
				t.Fatalf("Open(%q) opened in another listing", c)
			}
		}
	})
}
