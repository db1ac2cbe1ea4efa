package keycursor_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/keycursor"
	"github.com/tablekit/tablekit/patterns/table"
)

func TestRoundTripAndForeign(t *testing.T) {
	fp := keycursor.Fingerprint("log", "2024")
	c := keycursor.Make(fp, "Sales", "a.b!c")
	got, err := keycursor.Parse(c, fp, 2)
	if err != nil || !slices.Equal(got, []string{"Sales", "a.b!c"}) {
		t.Fatalf("Parse(Make) = %q, %v", got, err)
	}
	for _, bad := range []struct {
		c  string
		fp string
		n  int
	}{{string(c), keycursor.Fingerprint("log", "2025"), 2}, {string(c), fp, 1}, {"k1." + fp + ".!!", fp, 1}, {"x", fp, 0}} {
		if _, err := keycursor.Parse(table.Cursor(bad.c), bad.fp, bad.n); !errors.Is(err, keycursor.ErrForeign) {
			t.Errorf("Parse(%q, %q, %d) = %v", bad.c, bad.fp, bad.n, err)
		}
	}
	if keycursor.Fingerprint("ab", "c") == keycursor.Fingerprint("a", "bc") {
		t.Fatal("fingerprints of different parts collide")
	}
}
