package tabletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// AzuriteVersion is the Azurite release tablekit tests with (its
// package-lock.json pins it); InstallAzurite installs exactly this one.
const AzuriteVersion = "3.37.0"

// CacheEnv names the environment variable that overrides the folder where
// InstallAzurite keeps Azurite: default, tablekit in the user's cache
// folder (os.UserCacheDir).
const CacheEnv = "TABLEKIT_CACHE"

// NoInstallEnv names the environment variable that, set to 1, stops
// StartEmulator from installing Azurite when none is found (it fails with
// ErrEmulatorNotInstalled instead).
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
// Progress goes to progress (nil: none). Test binaries that install at
// the same time each install into a folder of their own and the first to
// finish keeps its copy, so they never see a half-written one. The error
// wraps ErrEmulatorNotInstalled when npm is missing or fails.
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
		return "", fmt.Errorf("%w: npm is not on PATH, so Azurite %s cannot be installed: install Node.js >= 20 (with npm), run `%s`, or set %s or %s", ErrEmulatorNotInstalled, AzuriteVersion, InstallCommand, AzuriteEnv, ConnectionStringEnv)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("tabletest: installing Azurite: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "azurite-install-")
	if err != nil {
		return "", fmt.Errorf("tabletest: installing Azurite: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename, or after a failure
	fmt.Fprintf(progress, "tabletest: installing Azurite %s into %s with npm (once per machine)...\n", AzuriteVersion, dir)
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefer-offline", "--loglevel=error", "--prefix", tmp, "azurite@"+AzuriteVersion)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: npm install azurite@%s failed: %v: %s", ErrEmulatorNotInstalled, AzuriteVersion, err, tail(out.String(), 2000))
	}
	if _, err := os.Stat(filepath.Join(tmp, azuriteScript)); err != nil {
		return "", fmt.Errorf("%w: npm installed azurite@%s without %s", ErrEmulatorNotInstalled, AzuriteVersion, azuriteScript)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, _, ok, _ := cachedAzurite(); !ok {
			return "", fmt.Errorf("tabletest: installing Azurite: %w", err)
		}
		// Another test binary finished first: its copy is as good.
	}
	fmt.Fprintf(progress, "tabletest: Azurite %s installed\n", AzuriteVersion)
	return script, nil
}

// findOrInstall is FindAzurite, then the per-user cache, then (unless
// NoInstallEnv or TABLEKIT_AZURITE says otherwise) InstallAzurite.
func findOrInstall(ctx context.Context, dir string, progress io.Writer) (string, error) {
	script, err := FindAzurite(dir)
	if err == nil || os.Getenv(AzuriteEnv) != "" || !errors.Is(err, ErrEmulatorNotInstalled) {
		return script, err
	}
	if _, cached, ok, cerr := cachedAzurite(); cerr == nil && ok {
		return cached, nil
	}
	if os.Getenv(NoInstallEnv) == "1" {
		return "", fmt.Errorf("%w (and %s=1: not installing it)", err, NoInstallEnv)
	}
	script, ierr := InstallAzurite(ctx, progress)
	if ierr != nil {
		// Both: where it was looked for, and why installing it failed.
		return "", fmt.Errorf("%w; installing it: %v", err, strings.TrimPrefix(ierr.Error(), ErrEmulatorNotInstalled.Error()+": "))
	}
	return script, nil
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
