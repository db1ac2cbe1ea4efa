package emulator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/emulator"
)

// fakeNpm is an npm that "installs" Azurite as the real one does, in
// outline: its first request line, then it waits until a line can be read
// from the named pipe FIFO (so the test sees what reached the user while
// npm still ran), then 119 more request lines (read from npm's cache, as
// a second install's are), a warning, an empty
// Azurite entry script under --prefix, and npm's closing line.
const fakeNpm = `#!/bin/sh
prev=
for a in "$@"; do
	if [ "$prev" = --prefix ]; then prefix=$a; fi
	prev=$a
done
echo "npm http fetch GET 200 https://registry.npmjs.org/azurite 7ms (cache miss)" >&2
read go < 'FIFO'
i=2
while [ $i -le 120 ]; do
	echo "npm http cache dep$i@https://registry.npmjs.org/dep$i/-/dep$i-1.0.0.tgz 0ms (cache hit)" >&2
	i=$((i+1))
done
echo "npm warn deprecated dep7@1.0.0: no longer supported" >&2
mkdir -p "$prefix/node_modules/azurite/dist/src" && : > "$prefix/node_modules/azurite/dist/src/azurite.js"
echo "added 120 packages in 1s"
`

// progressLines is the progress writer of the test: it keeps what it is
// given and closes seen when a line containing want arrives.
type progressLines struct {
	want string
	seen chan struct{}

	mu   sync.Mutex
	text strings.Builder
}

func (p *progressLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	had := strings.Contains(p.text.String(), p.want)
	p.text.Write(b)
	if !had && strings.Contains(p.text.String(), p.want) {
		close(p.seen)
	}
	return len(b), nil
}

func (p *progressLines) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.text.String()
}

// The first run on a machine without Azurite installs it, and says so as it
// happens: why (found nowhere), what and where (the pinned version, into
// the per-user cache), what it costs, that it happens once, then npm's
// progress while npm runs (its requests counted, its other lines as they
// are), and the end. The next run finds it in the cache and says nothing.
func TestInstallShowsProgress(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake npm is a shell script")
	}
	mkfifo, err := exec.LookPath("mkfifo")
	if err != nil {
		t.Skip("no mkfifo")
	}
	bin, cache := t.TempDir(), t.TempDir()
	fifo := filepath.Join(t.TempDir(), "go-on")
	if out, err := exec.Command(mkfifo, fifo).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v: %s", err, out)
	}
	writeFile(t, filepath.Join(bin, "npm"), strings.ReplaceAll(fakeNpm, "FIFO", fifo))
	path := ""
	for _, kv := range emulator.EnvWithoutAzurite(os.Environ()) {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+path)
	t.Setenv(emulator.AzuriteEnv, "")
	t.Setenv(emulator.NoInstallEnv, "")
	t.Setenv(emulator.CacheEnv, cache)
	dir := filepath.Join(cache, "azurite-"+emulator.AzuriteVersion)

	// A bound for a broken install that never shows npm's first line (npm
	// then waits for ever), not a measure of time.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	progress := &progressLines{want: "tabletest: npm: request 1:", seen: make(chan struct{})}
	type result struct {
		script string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		script, err := emulator.FindOrInstall(ctx, t.TempDir(), progress)
		done <- result{script, err}
	}()
	select {
	case <-progress.seen: // npm runs, and its first line has been shown
	case r := <-done:
		t.Fatalf("npm's first line was not shown while npm ran (the install returned %q, %v); shown:\n%s", r.script, r.err, progress)
	}
	if err := os.WriteFile(fifo, []byte("go on\n"), 0); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("install: %v; shown:\n%s", r.err, progress)
	}
	samePath(t, r.script, filepath.Join(dir, "node_modules", "azurite", "dist", "src", "azurite.js"))
	want := []string{
		"tabletest: these tests run against Azurite, and none was found (" + emulator.AzuriteEnv + " is not set, no " +
			filepath.Join("node_modules", "azurite") + " here or above, no azurite on PATH, none in the cache):",
		fmt.Sprintf("tabletest: installing Azurite %s, the Azure Storage emulator, with npm into %s: about 360 MB, a few minutes, "+
			"only this once on this machine (later runs find it there; %s=1 refuses, %s moves it); npm's requests follow, then it is silent while it unpacks",
			emulator.AzuriteVersion, dir, emulator.NoInstallEnv, emulator.CacheEnv),
		"tabletest: npm: request 1: fetch GET 200 https://registry.npmjs.org/azurite 7ms (cache miss)",
		"tabletest: npm: request 50: cache dep50@https://registry.npmjs.org/dep50/-/dep50-1.0.0.tgz 0ms (cache hit)",
		"tabletest: npm: request 100: cache dep100@https://registry.npmjs.org/dep100/-/dep100-1.0.0.tgz 0ms (cache hit)",
		"tabletest: npm: npm warn deprecated dep7@1.0.0: no longer supported",
		"tabletest: npm: added 120 packages in 1s",
		fmt.Sprintf("tabletest: Azurite %s installed in %s", emulator.AzuriteVersion, dir),
	}
	if got := progress.String(); got != strings.Join(want, "\n")+"\n" {
		t.Fatalf("shown:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	again := &progressLines{seen: make(chan struct{})}
	if script, err := emulator.FindOrInstall(ctx, t.TempDir(), again); err != nil || again.String() != "" {
		t.Fatalf("the second run: %q, %v, and shown %q; want the cached Azurite, silently", script, err, again)
	}
}
