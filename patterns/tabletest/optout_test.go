package tabletest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
)

// optOutChildEnv marks this test binary run as the child of
// TestNoEmulatorOptOut.
const optOutChildEnv = "TABLEKIT_TABLETEST_OPTOUT_CHILD"

// On a machine without Azurite, TABLEKIT_NO_EMULATOR=1 makes every test and
// example of a binary that uses tabletest.Main skip or pass (examples call
// log.Fatal on errors and cannot skip themselves), and in CI it is ignored.
// The child is this test binary, run where no Azurite can be found.
func TestNoEmulatorOptOut(t *testing.T) {
	if os.Getenv(optOutChildEnv) == "1" {
		t.Skip("running as the child")
	}
	t.Parallel()
	run := func(args []string, env ...string) (string, error) {
		cmd := exec.Command(os.Args[0], append([]string{"-test.v", "-test.count=1", "-test.skip=^TestNoEmulatorOptOut$"}, args...)...)
		cmd.Dir = t.TempDir() // no node_modules here or above
		// No Azurite anywhere, and none to be installed either.
		cmd.Env = append(emulator.EnvWithoutAzurite(without(os.Environ(), emulator.ConnectionStringEnv, emulator.NoEmulatorEnv, "CI")),
			append([]string{optOutChildEnv + "=1", emulator.NoInstallEnv + "=1", emulator.CacheEnv + "=" + t.TempDir()}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run(nil, emulator.NoEmulatorEnv+"=1")
	if err != nil {
		t.Fatalf("with %s=1 and no Azurite, the tests fail: %v\n%s", emulator.NoEmulatorEnv, err, out)
	}
	for _, want := range []string{"--- SKIP: TestTableRoundTrip", "--- SKIP: TestParallelEmulatorsAndStop"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "RUN   Example") {
		t.Errorf("examples ran:\n%s", out)
	}

	out, err = run([]string{"-test.run=^(TestTableRoundTrip|ExampleConnectionString)$"}, emulator.NoEmulatorEnv+"=1", "CI=true")
	if err == nil || !strings.Contains(out, emulator.ErrNotInstalled.Error()) {
		t.Fatalf("with CI set, %s=1 must not skip; got %v:\n%s", emulator.NoEmulatorEnv, err, out)
	}
}

// without returns env without the variables named.
func without(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
