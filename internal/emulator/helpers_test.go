package emulator_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
)

// skipWithoutEmulator skips a test that needs an emulator where
// tabletest.New would skip it: TABLEKIT_NO_EMULATOR=1 without a connection
// string, outside CI.
func skipWithoutEmulator(t *testing.T) {
	t.Helper()
	if os.Getenv(emulator.ConnectionStringEnv) == "" && os.Getenv(emulator.NoEmulatorEnv) == "1" && os.Getenv("CI") == "" {
		t.Skipf("%s=1: skipping a test that needs a storage emulator", emulator.NoEmulatorEnv)
	}
}

// realAzurite returns the installed Azurite's entry script for tests that
// start emulators themselves. Without one it fails the test, unless
// TABLEKIT_NO_EMULATOR=1 applies or a real account is configured (then the
// other tests need no emulator, so it skips).
func realAzurite(t *testing.T) string {
	t.Helper()
	skipWithoutEmulator(t)
	script, err := emulator.FindAzurite("")
	if err != nil {
		if os.Getenv(emulator.ConnectionStringEnv) != "" {
			t.Skipf("a real account is configured and %v", err)
		}
		t.Fatal(err)
	}
	return script
}

// wrapAzurite writes a Node.js script that runs js, in which azurite() runs
// the real Azurite at script, and returns its path for TABLEKIT_AZURITE.
func wrapAzurite(t *testing.T, script, js string) string {
	t.Helper()
	return writeFile(t, filepath.Join(t.TempDir(), "wrapper.js"), "const azurite = () => require("+jsString(script)+");\n"+js+"\n")
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// withoutAzuriteOnPath returns env without TABLEKIT_AZURITE and with PATH
// stripped of folders that hold an `azurite` command, so a child process
// finds only the Azurite it is given.
func withoutAzuriteOnPath(env []string) []string {
	var out []string
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, emulator.AzuriteEnv+"="), strings.HasPrefix(kv, emulator.CacheEnv+"="):
			continue
		case strings.HasPrefix(kv, "PATH="):
			var keep []string
			for _, dir := range filepath.SplitList(strings.TrimPrefix(kv, "PATH=")) {
				if _, err := exec.LookPath(filepath.Join(dir, "azurite")); err != nil {
					keep = append(keep, dir)
				}
			}
			kv = "PATH=" + strings.Join(keep, string(filepath.ListSeparator))
		}
		out = append(out, kv)
	}
	return out
}
