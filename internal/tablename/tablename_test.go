package tablename

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, name := range []string{"abc", "Orders2026", "a" + strings.Repeat("1", 62)} {
		if err := Check(name); err != nil {
			t.Errorf("Check(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"", "ab", "1abc", "a-b-c", "tables", "Tables", "a" + strings.Repeat("1", 63), "abc/def", "abcé"} {
		if err := Check(name); err == nil {
			t.Errorf("Check(%q) = nil, want an error", name)
		}
	}
}
