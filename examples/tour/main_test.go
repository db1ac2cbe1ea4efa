package main

import (
	"testing"

	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// The tour is part of the test suite so that `make demo` cannot rot.
func TestTour(t *testing.T) {
	tabletest.New(t) // fails (never skips in CI) without an emulator
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
