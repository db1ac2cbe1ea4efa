package main

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// loaded is the module's public API, read once for all tests.
var loaded = sync.OnceValues(func() (*module, error) { return load(".") })

// api returns the module's public API or ends the test.
func api(t *testing.T) *module {
	t.Helper()
	mod, err := loaded()
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestSnapshot fails when the exported API differs from api/tablekit.txt,
// printing the lines added and removed and what to do.
func TestSnapshot(t *testing.T) {
	mod := api(t)
	report, err := check(mod, filepath.Join(mod.Dir, snapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	if report != "" {
		t.Error(report)
	}
}

// TestSnapshotFormat: the snapshot file reads back as the lines written,
// and diff names what was added and removed.
func TestSnapshotFormat(t *testing.T) {
	lines := []string{"pkg a, func F()", "pkg a, type T struct", "pkg b, var V int"}
	if got := parse(format(lines)); !slices.Equal(got, lines) {
		t.Errorf("parse(format(lines)) = %q, want %q", got, lines)
	}
	added, removed := diff([]string{"a", "b", "d"}, []string{"b", "c", "d", "e"})
	if !slices.Equal(added, []string{"c", "e"}) || !slices.Equal(removed, []string{"a"}) {
		t.Errorf("diff: added %q removed %q, want [c e] and [a]", added, removed)
	}
}

// TestPublic: commands, examples and internal packages are not the API.
func TestPublic(t *testing.T) {
	const m = "example.com/m"
	for _, c := range []struct {
		path, name string
		want       bool
	}{
		{m + "/patterns/table", "table", true},
		{m + "/keys", "keys", true},
		{m + "/internal/reserved", "reserved", false},
		{m + "/patterns/x/internal/y", "y", false},
		{m + "/examples/tour", "main", false},
		{m + "/examples/lib", "lib", false},
		{m + "/tools", "main", false},
		{"example.com/other/keys", "keys", false},
	} {
		if got := isPublic(m, c.path, c.name); got != c.want {
			t.Errorf("isPublic(%q, %q) = %v, want %v", c.path, c.name, got, c.want)
		}
	}
	for _, pkg := range api(t).Pkgs {
		if !isPublic(api(t).Path, pkg.Path(), pkg.Name()) {
			t.Errorf("loaded %s", pkg.Path())
		}
	}
}
