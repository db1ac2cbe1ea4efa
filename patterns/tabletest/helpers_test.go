package tabletest_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// skipWithoutEmulator skips a test that needs an emulator where New would
// skip it: TABLEKIT_NO_EMULATOR=1 without a connection string, outside CI.
func skipWithoutEmulator(t *testing.T) {
	t.Helper()
	if tabletest.OptedOut() {
		t.Skipf("%s=1: skipping a test that needs a storage emulator", emulator.NoEmulatorEnv)
	}
}

// writeFile creates path (and its folders) with the given content.
func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// isRealAccount reports whether the tests run against the account in
// AZURE_STORAGE_CONNECTION_STRING rather than an emulator.
func isRealAccount() bool { return os.Getenv(emulator.ConnectionStringEnv) != "" }

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
