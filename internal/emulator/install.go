package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// AzuriteVersion is the Azurite release tablekit tests with (its
// package-lock.json pins it); InstallAzurite installs exactly this one.
const AzuriteVersion = "3.37.0"

// CacheEnv names the environment variable that overrides the folder where
// InstallAzurite keeps Azurite, and FindAzurite looks for it last:
// default, tablekit in the user's cache folder (os.UserCacheDir).
const CacheEnv = "TABLEKIT_CACHE"

// NoInstallEnv names the environment variable that, set to 1, stops
// Start from installing Azurite when none is found (it fails with
// ErrNotInstalled instead).
const NoInstallEnv = "TABLEKIT_NO_INSTALL"

// cachedAzurite returns the folder of the pinned Azurite in the per-user
// cache, and whether its entry script is there.
func cachedAzurite() (dir string, script string, ok bool, err error) {
	root := os.Getenv(CacheEnv)
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", "", false, fmt.Errorf("tabletest: no cache folder for Azurite (set %s): %w", CacheEnv, err)
		}
		root = filepath.Join(c, "tablekit")
	}
	dir = filepath.Join(root, "azurite-"+AzuriteVersion)
	script = filepath.Join(dir, azuriteScript)
	_, err = os.Stat(script)
	return dir, script, err == nil, nil
}

// InstallAzurite installs the pinned Azurite (AzuriteVersion) with npm into
// the per-user cache (see CacheEnv), once per machine, and returns the
// path of its entry script; it returns at once when it is already there.
// The install downloads about 360 MB (453 npm packages) and takes minutes.
// What it does goes to progress (nil: nowhere) as it happens: a line that
// says what is installed where, what it costs and that it happens once,
// then npm's progress (its first request and every 50th, numbered, and its
// other lines; npm says nothing while it unpacks, the last minute or
// more), then a line when it is done. Test binaries that install at the
// same time each install into a folder of their own and the first to
// finish keeps its copy, so they never see a half-written one. The error
// wraps ErrNotInstalled when npm is missing or fails, with npm's
// last lines of output.
func InstallAzurite(ctx context.Context, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	dir, script, ok, err := cachedAzurite()
	if err != nil || ok {
		return script, err
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: npm is not on PATH, so Azurite %s cannot be installed: install Node.js >= 20 (with npm), run `%s`, or set %s or %s", ErrNotInstalled, AzuriteVersion, InstallCommand, AzuriteEnv, ConnectionStringEnv)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("tabletest: installing Azurite: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "azurite-install-")
	if err != nil {
		return "", fmt.Errorf("tabletest: installing Azurite: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename, or after a failure
	fmt.Fprintf(progress, "tabletest: installing Azurite %s, the Azure Storage emulator, with npm into %s: "+
		"about 360 MB, a few minutes, only this once on this machine (later runs find it there; %s=1 refuses, %s moves it); "+
		"npm's requests follow, then it is silent while it unpacks\n",
		AzuriteVersion, dir, NoInstallEnv, CacheEnv)
	out := npmProgress(progress)
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefer-offline", "--loglevel=http", "--prefix", tmp, "azurite@"+AzuriteVersion)
	cmd.Stdout, cmd.Stderr = out, out // one writer: written by one goroutine at a time
	cmd.WaitDelay = 5 * time.Second   // should a child of npm keep the pipe open
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: npm install azurite@%s failed: %v; its last output:\n%s", ErrNotInstalled, AzuriteVersion, err, out.String())
	}
	if _, err := os.Stat(filepath.Join(tmp, azuriteScript)); err != nil {
		return "", fmt.Errorf("%w: npm installed azurite@%s without %s", ErrNotInstalled, AzuriteVersion, azuriteScript)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, _, ok, _ := cachedAzurite(); !ok {
			return "", fmt.Errorf("tabletest: installing Azurite: %w", err)
		}
		// Another test binary finished first: its copy is as good.
	}
	fmt.Fprintf(progress, "tabletest: Azurite %s installed in %s\n", AzuriteVersion, dir)
	return script, nil
}

// npmRequestsPerLine is how many of npm's request lines (from "npm http
// fetch GET 200 https://registry.npmjs.org/..." to "npm http cache
// ...(cache hit)": some 800 in an install of Azurite) make one line of
// progress.
const npmRequestsPerLine = 50

// npmProgress returns the writer of npm's output: it keeps npm's last lines
// (for an error) and writes its progress to w as it comes, each line
// prefixed "tabletest: npm: ": its first request and every
// npmRequestsPerLine-th one, numbered ("request 50: fetch GET 200 ..."),
// and every other line (warnings, the closing "added 453 packages in 2m").
func npmProgress(w io.Writer) *outputTail {
	requests := 0 // written by outputTail's one writer at a time
	return &outputTail{onLine: func(line string) {
		if req, ok := strings.CutPrefix(line, "npm http "); ok {
			requests++
			if requests == 1 || requests%npmRequestsPerLine == 0 {
				fmt.Fprintf(w, "tabletest: npm: request %d: %s\n", requests, req)
			}
			return
		}
		if strings.TrimSpace(line) != "" {
			fmt.Fprintf(w, "tabletest: npm: %s\n", line)
		}
	}}
}

// findOrInstall is FindAzurite, then (unless NoInstallEnv or
// TABLEKIT_AZURITE says otherwise) InstallAzurite, after a line to
// progress that says why.
func findOrInstall(ctx context.Context, dir string, progress io.Writer) (string, error) {
	script, err := FindAzurite(dir)
	if err == nil || os.Getenv(AzuriteEnv) != "" || !errors.Is(err, ErrNotInstalled) {
		return script, err
	}
	if os.Getenv(NoInstallEnv) == "1" {
		return "", fmt.Errorf("%w (and %s=1: not installing it)", err, NoInstallEnv)
	}
	fmt.Fprintf(progress, "tabletest: these tests run against Azurite, and none was found (%s is not set, no %s here or above, no azurite on PATH, none in the cache):\n", AzuriteEnv, filepath.Join("node_modules", "azurite"))
	script, ierr := InstallAzurite(ctx, progress)
	if ierr != nil {
		// Both: where it was looked for, and why installing it failed.
		return "", fmt.Errorf("%w; installing it: %v", err, strings.TrimPrefix(ierr.Error(), ErrNotInstalled.Error()+": "))
	}
	return script, nil
}
