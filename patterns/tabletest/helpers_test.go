package tabletest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tablekit/tablekit/patterns/tabletest"
)

// skipWithoutEmulator skips a test that needs an emulator where New would
// skip it: TABLEKIT_NO_EMULATOR=1 without a connection string, outside CI.
func skipWithoutEmulator(t *testing.T) {
	t.Helper()
	if tabletest.OptedOut() {
		t.Skipf("%s=1: skipping a test that needs a storage emulator", tabletest.NoEmulatorEnv)
	}
}

// realAzurite returns the installed Azurite's entry script for tests that
// start emulators themselves. Without one it fails the test, unless
// TABLEKIT_NO_EMULATOR=1 applies or a real account is configured (then the
// other tests need no emulator, so it skips).
func realAzurite(t *testing.T) string {
	t.Helper()
	skipWithoutEmulator(t)
	script, err := tabletest.FindAzurite("")
	if err != nil {
		if os.Getenv(tabletest.ConnectionStringEnv) != "" {
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

// isRealAccount reports whether the tests run against the account in
// AZURE_STORAGE_CONNECTION_STRING rather than an emulator.
func isRealAccount() bool { return os.Getenv(tabletest.ConnectionStringEnv) != "" }

// repoRoot returns tablekit's module root. It goes by this file's path, not
// the working directory, which a child test binary may have elsewhere.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..")
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir = filepath.Join(filepath.Dir(file), "..", "..")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("tablekit's module root: %v", err)
	}
	return root
}
