package emulator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
