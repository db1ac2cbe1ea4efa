//go:build unix

package tabletest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/patterns/tabletest"
)

// makeDir copies the Makefile and the emulator's npm manifest to a fresh
// folder, so that make can run there without touching the repository's
// node_modules.
func makeDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("make is not installed: %v", err)
		}
		t.Skipf("make is not installed: %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"Makefile", "package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), string(b))
	}
	return dir
}

// makeEnv is the environment without the variables the Makefile reads.
func makeEnv() []string {
	return without(os.Environ(), tabletest.ConnectionStringEnv, tabletest.AzuriteEnv, tabletest.NoEmulatorEnv, "CI", "MAKEFLAGS", "MFLAGS")
}

// make installs the pinned emulator only when something will start it.
func TestMakeInstallsEmulatorOnlyWhenNeeded(t *testing.T) {
	dir := makeDir(t)
	t.Parallel()
	for _, c := range []struct {
		target string
		env    []string
		npm    bool
	}{
		{"test", nil, true},
		{"test", []string{tabletest.ConnectionStringEnv + "=DefaultEndpointsProtocol=https;AccountName=x"}, false},
		{"test", []string{tabletest.AzuriteEnv + "=/opt/azurite/dist/src/azurite.js"}, false},
		{"test", []string{tabletest.NoEmulatorEnv + "=1"}, false},
		{"test", []string{tabletest.NoEmulatorEnv + "=1", "CI=true"}, true},
		{"demo", nil, true},
		{"demo", []string{tabletest.ConnectionStringEnv + "=DefaultEndpointsProtocol=https;AccountName=x"}, false},
		{"bench", nil, true},
		{"bench", []string{tabletest.ConnectionStringEnv + "=DefaultEndpointsProtocol=https;AccountName=x"}, false},
	} {
		// -n prints the commands instead of running them, -B as if
		// node_modules were out of date.
		cmd := exec.Command("make", "-n", "-B", c.target)
		cmd.Dir = dir
		cmd.Env = append(makeEnv(), c.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", c.target, err, out)
		}
		if got := strings.Contains(string(out), "npm ci"); got != c.npm {
			t.Errorf("make %s with %q: installs the emulator = %v, want %v\n%s", c.target, c.env, got, c.npm, out)
		}
	}
}
