package emulator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
)

// These tests resolve paths only: the "installations" are empty files laid
// out as npm lays out Azurite, and nothing is started.

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

// npmGlobal lays out what `npm install -g azurite` gives under prefix:
// prefix/lib/node_modules/azurite/dist/src/azurite.js and a link to it,
// prefix/bin/azurite. It returns the bin folder and the script.
func npmGlobal(t *testing.T, prefix string) (bin, script string) {
	t.Helper()
	script = writeFile(t, filepath.Join(prefix, "lib", "node_modules", "azurite", "dist", "src", "azurite.js"), "#!/usr/bin/env node\n")
	bin = filepath.Join(prefix, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "lib", "node_modules", "azurite", "dist", "src", "azurite.js"), filepath.Join(bin, "azurite")); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
	return bin, script
}

// localInstall lays out what `npm ci` gives in dir and returns the script.
func localInstall(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, filepath.Join(dir, "node_modules", "azurite", "dist", "src", "azurite.js"), "#!/usr/bin/env node\n")
}

func samePath(t *testing.T, got, want string) {
	t.Helper()
	g, err1 := filepath.EvalSymlinks(got)
	w, err2 := filepath.EvalSymlinks(want)
	if err1 != nil || err2 != nil || g != w {
		t.Fatalf("FindAzurite = %s, want %s", got, want)
	}
}

// FindAzurite looks, in this order, at TABLEKIT_AZURITE, node_modules from
// the folder upwards, `azurite` on PATH, and the per-user cache that
// InstallAzurite installs into.
func TestFindAzuriteOrder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("npm's global layout differs on Windows")
	}
	root := t.TempDir()
	bin, global := npmGlobal(t, filepath.Join(root, "prefix"))
	project := filepath.Join(root, "project")
	local := localInstall(t, project)
	sub := filepath.Join(project, "pkg", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	explicit := writeFile(t, filepath.Join(root, "elsewhere", "azurite.js"), "")
	cache := filepath.Join(root, "cache")
	cached := localInstall(t, filepath.Join(cache, "azurite-"+emulator.AzuriteVersion))
	t.Setenv(emulator.CacheEnv, cache)
	t.Setenv("PATH", bin)

	t.Run("env var first", func(t *testing.T) {
		t.Setenv(emulator.AzuriteEnv, explicit)
		got, err := emulator.FindAzurite(sub)
		if err != nil {
			t.Fatal(err)
		}
		samePath(t, got, explicit)
	})
	t.Run("env var may name the azurite command", func(t *testing.T) {
		t.Setenv(emulator.AzuriteEnv, filepath.Join(bin, "azurite"))
		got, err := emulator.FindAzurite(sub)
		if err != nil {
			t.Fatal(err)
		}
		samePath(t, got, global)
	})
	t.Run("node_modules upwards second", func(t *testing.T) {
		t.Setenv(emulator.AzuriteEnv, "")
		got, err := emulator.FindAzurite(sub)
		if err != nil {
			t.Fatal(err)
		}
		samePath(t, got, local)
	})
	t.Run("PATH third", func(t *testing.T) {
		t.Setenv(emulator.AzuriteEnv, "")
		got, err := emulator.FindAzurite(filepath.Join(root, "elsewhere"))
		if err != nil {
			t.Fatal(err)
		}
		samePath(t, got, global)
	})
	t.Run("the per-user cache last", func(t *testing.T) {
		t.Setenv(emulator.AzuriteEnv, "")
		t.Setenv("PATH", t.TempDir())
		got, err := emulator.FindAzurite(filepath.Join(root, "elsewhere"))
		if err != nil {
			t.Fatal(err)
		}
		samePath(t, got, cached)
	})
}

// A wrong TABLEKIT_AZURITE is reported, not silently replaced by another
// installation.
func TestFindAzuriteBadEnv(t *testing.T) {
	dir := t.TempDir()
	localInstall(t, dir)
	for name, value := range map[string]string{
		"missing":      filepath.Join(dir, "nope", "azurite.js"),
		"folder":       dir,
		"shell script": writeFile(t, filepath.Join(dir, "bin", "azurite"), "#!/bin/sh\nexec true\n"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(emulator.AzuriteEnv, value)
			_, err := emulator.FindAzurite(dir)
			if !errors.Is(err, emulator.ErrNotInstalled) {
				t.Fatalf("err = %v, want ErrEmulatorNotInstalled", err)
			}
			if !strings.Contains(err.Error(), emulator.AzuriteEnv) || !strings.Contains(err.Error(), value) {
				t.Fatalf("error %q names neither %s nor its value %s", err, emulator.AzuriteEnv, value)
			}
		})
	}
}

// With nothing installed anywhere, the error lists every place it looked and
// the one command that fixes it.
func TestMissingEmulatorNamesInstallCommand(t *testing.T) {
	t.Setenv(emulator.AzuriteEnv, "")
	cache := t.TempDir() // no Azurite installed there either
	t.Setenv(emulator.CacheEnv, cache)
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	_, err := emulator.Start(context.Background(), &emulator.Options{Dir: dir})
	if !errors.Is(err, emulator.ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrEmulatorNotInstalled", err)
	}
	for _, want := range []string{
		emulator.AzuriteEnv,
		filepath.Join("node_modules", "azurite"), dir,
		"PATH",
		"per-user cache", filepath.Join(cache, "azurite-"+emulator.AzuriteVersion),
		emulator.InstallCommand, "npm install -g azurite",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// Without npm, the install that StartEmulator tries says so, beside where
// it looked; with TABLEKIT_NO_INSTALL=1 it does not try.
func TestInstallNeedsNpm(t *testing.T) {
	t.Setenv(emulator.AzuriteEnv, "")
	t.Setenv(emulator.NoInstallEnv, "")
	t.Setenv(emulator.CacheEnv, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := emulator.Start(context.Background(), &emulator.Options{Dir: t.TempDir()})
	if !errors.Is(err, emulator.ErrNotInstalled) || !strings.Contains(err.Error(), "npm is not on PATH") || !strings.Contains(err.Error(), "node_modules") {
		t.Fatalf("StartEmulator without Azurite and npm = %v", err)
	}
	t.Setenv(emulator.NoInstallEnv, "1")
	_, err = emulator.Start(context.Background(), &emulator.Options{Dir: t.TempDir()})
	if !errors.Is(err, emulator.ErrNotInstalled) || strings.Contains(err.Error(), "npm is not on PATH") || !strings.Contains(err.Error(), emulator.NoInstallEnv) {
		t.Fatalf("StartEmulator with %s=1 = %v", emulator.NoInstallEnv, err)
	}
}
