package emulator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/emulator"
)

// A line longer than any buffer (1 MiB, no newline for a long while) does
// not stop the reading of the emulator's output: the lines after it, which
// announce the services, are still seen.
func TestEmulatorLongOutputLine(t *testing.T) {
	script := realAzurite(t)
	t.Setenv(emulator.AzuriteEnv, wrapAzurite(t, script,
		`process.stdout.write("x".repeat(1<<20) + "\nafter the long line\n", azurite);`))
	e, err := emulator.Start(context.Background(), &emulator.Options{StartTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	err = e.Err()
	if !errors.Is(err, emulator.ErrExited) {
		t.Fatalf("Err() after Stop = %v, want ErrEmulatorExited", err)
	}
	for _, want := range []string{"xxxx... [1047552 more bytes]\nafter the long line\n", "Table service is successfully listening"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err() lacks %q:\n%v", want, err)
		}
	}
}

// The output is read to its end before the process is reaped: Azurite's
// last words before it exits (here its complaint about conflicting flags,
// after a 100 kB line) are in StartEmulator's error. (The prelude waits until
// its output is flushed: Node.js drops output still queued when a process
// exits.)
func TestEmulatorLastWordsKept(t *testing.T) {
	script := realAzurite(t)
	t.Setenv(emulator.AzuriteEnv, wrapAzurite(t, script,
		`process.argv.push("--location", `+jsString(t.TempDir())+`);`+
			`process.stdout.write("y".repeat(100000) + "\nbefore Azurite\n", azurite);`))
	_, err := emulator.Start(context.Background(), &emulator.Options{StartTimeout: 2 * time.Minute})
	if err == nil {
		t.Fatal("StartEmulator succeeded with --location and --inMemoryPersistence")
	}
	for _, want := range []string{"yyyy... [", "before Azurite", "--inMemoryPersistence option is not supported"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
