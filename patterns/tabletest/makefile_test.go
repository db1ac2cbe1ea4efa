//go:build unix

package tabletest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
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
	dir, root := t.TempDir(), repoRoot(t)
	for _, name := range []string{"Makefile", "package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), string(b))
	}
	return dir
}

// makeEnv is the environment without the variables the Makefile reads.
func makeEnv() []string {
	return without(os.Environ(), emulator.ConnectionStringEnv, emulator.AzuriteEnv, emulator.NoEmulatorEnv, "CI", "MAKEFLAGS", "MFLAGS")
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
		{"test", []string{emulator.ConnectionStringEnv + "=DefaultEndpointsProtocol=https;AccountName=x"}, false},
		{"test", []string{emulator.AzuriteEnv + "=/opt/azurite/dist/src/azurite.js"}, false},
		{"test", []string{emulator.NoEmulatorEnv + "=1"}, false},
		{"test", []string{emulator.NoEmulatorEnv + "=1", "CI=true"}, true},
		{"demo", nil, true},
		{"demo", []string{emulator.ConnectionStringEnv + "=DefaultEndpointsProtocol=https;AccountName=x"}, false},
		{"bench", nil, true},
		{"bench", []string{emulator.ConnectionStringEnv + "=DefaultEndpointsProtocol=https;AccountName=x"}, false},
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

// fakeNPM puts on PATH an npm that prints warnings like npm ci's about
// Node.js engines, then installs an empty azurite.js and succeeds, or fails
// when FAKE_NPM_FAIL is set.
func fakeNPM(t *testing.T) []string {
	t.Helper()
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "npm"), `#!/bin/sh
for i in 1 2 3 4 5; do echo "npm warn EBADENGINE Unsupported engine $i" >&2; done
if [ -n "$FAKE_NPM_FAIL" ]; then echo "npm error code ECONNREFUSED" >&2; exit 1; fi
mkdir -p node_modules/azurite/dist/src && : > node_modules/azurite/dist/src/azurite.js
`)
	env := without(makeEnv(), "PATH")
	return append(env, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
}

// The install is quiet when it works and shows npm's whole output when it
// fails.
func TestMakeInstallIsQuietUnlessItFails(t *testing.T) {
	dir := makeDir(t)
	env := fakeNPM(t)
	t.Parallel()

	cmd := exec.Command("make", "emulator")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make emulator: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "npm warn") {
		t.Errorf("a successful install printed npm's warnings:\n%s", out)
	}

	cmd = exec.Command("make", "-B", "emulator")
	cmd.Dir = dir
	cmd.Env = append(env, "FAKE_NPM_FAIL=1")
	out, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make emulator succeeded although npm failed:\n%s", out)
	}
	for _, want := range []string{"npm warn EBADENGINE Unsupported engine 5", "npm error code ECONNREFUSED"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("a failed install does not show %q:\n%s", want, out)
		}
	}
}
