package tabletest_test

import (
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
