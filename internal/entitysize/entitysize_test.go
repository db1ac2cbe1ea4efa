package entitysize_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/entitysize"
)

func TestUTF16Len(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "é": 1, "€": 1, "😀": 2, "a😀b": 4, "\xff": 1} {
		if got := entitysize.UTF16Len(s); got != want {
			t.Errorf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
	}
}
