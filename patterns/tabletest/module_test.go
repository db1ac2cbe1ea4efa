package tabletest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
)

// userTest is the test of a module that depends on tablekit: it writes and
// reads a table through tabletest.
const userTest = `package user_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

func TestTableFromAnotherModule(t *testing.T) {
	env := tabletest.New(t)
	c := env.Table(nil)
	ctx := context.Background()
	if _, err := c.AddEntity(ctx, []byte(` + "`" + `{"PartitionKey":"p","RowKey":"r","Says":"hello from another module"}` + "`" + `), nil); err != nil {
		t.Fatalf("AddEntity: %v", err)
	}
	got, err := c.GetEntity(ctx, "p", "r", nil)
	if err != nil {
		t.Fatalf("GetEntity: %v", err)
	}
	if !strings.Contains(string(got.Value), "hello from another module") {
		t.Fatalf("read back %s", got.Value)
	}
}
`

// A module that depends on tablekit (here through a replace directive, as
// the module cache would hold it) finds the emulator through
// TABLEKIT_AZURITE: its own folder has no node_modules, and tablekit's
// folder is not where it runs.
func TestUseFromAnotherModule(t *testing.T) {
	skipWithoutEmulator(t)
	t.Parallel()
	var env []string
	if os.Getenv(emulator.ConnectionStringEnv) == "" {
		script, err := emulator.FindAzurite("")
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, emulator.AzuriteEnv+"="+script)
	}
	runUserModule(t, env...)
}

// A user's module on a machine with only Go and Node.js (no Azurite on
// PATH, none named, no node_modules, an empty cache): `go test` installs
// the pinned Azurite into the per-user cache itself and runs.
func TestInstallFromAnotherModule(t *testing.T) {
	skipWithoutEmulator(t)
	if os.Getenv(emulator.ConnectionStringEnv) != "" {
		t.Skip("an account is configured: no emulator to install")
	}
	t.Parallel()
	cache := t.TempDir()
	out := runUserModule(t, emulator.CacheEnv+"="+cache)
	if !strings.Contains(out, "installing Azurite "+emulator.AzuriteVersion) {
		t.Fatalf("no install progress in the output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(cache, "azurite-"+emulator.AzuriteVersion, "node_modules", "azurite", "dist", "src", "azurite.js")); err != nil {
		t.Fatalf("the pinned Azurite is not in the cache: %v", err)
	}
	// The next run finds it there: no second install.
	if out := runUserModule(t, emulator.CacheEnv+"="+cache); strings.Contains(out, "installing Azurite") {
		t.Fatalf("Azurite installed twice:\n%s", out)
	}
}

// The version the emulator's start installs (emulator.InstallAzurite) is the one package-lock.json pins.
func TestAzuriteVersionIsPinned(t *testing.T) {
	lock, err := os.ReadFile(filepath.Join(repoRoot(t), "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"node_modules/azurite\": {\n      \"version\": \"" + emulator.AzuriteVersion + "\""; !strings.Contains(string(lock), want) {
		t.Fatalf("package-lock.json does not pin azurite %s", emulator.AzuriteVersion)
	}
}

// runUserModule runs go test in a fresh module that depends on tablekit,
// with env added to an environment that holds no Azurite, and returns its
// output; the module's test must pass.
func runUserModule(t *testing.T, env ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root := repoRoot(t)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(gomod, []byte("module github.com/tablekit/tablekit\n")) {
		t.Fatalf("%s is not tablekit's module root", root)
	}

	// The user's module requires what tablekit requires (so the module
	// cache answers offline, with tablekit's go.sum) and tablekit itself.
	mod := t.TempDir()
	userMod := "module example.com/user" + strings.TrimPrefix(string(gomod), "module github.com/tablekit/tablekit") +
		"\nrequire github.com/tablekit/tablekit v0.0.0\n\nreplace github.com/tablekit/tablekit => " + root + "\n"
	writeFile(t, filepath.Join(mod, "go.mod"), userMod)
	writeFile(t, filepath.Join(mod, "go.sum"), string(gosum))
	writeFile(t, filepath.Join(mod, "user.go"), "// Package user stands for a module that uses tablekit.\npackage user\n")
	writeFile(t, filepath.Join(mod, "user_test.go"), userTest)

	cmd := exec.Command(goTool, "test", "-count=1", "-v", "-run", "^TestTableFromAnotherModule$", ".")
	cmd.Dir = mod
	cmd.Env = append(emulator.EnvWithoutAzurite(os.Environ()),
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"),
		"GOPROXY=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestTableFromAnotherModule") {
		t.Fatalf("go test in a module that uses tablekit: %v\n%s", err, out)
	}
	return string(out)
}
