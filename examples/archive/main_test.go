package main

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// The example is part of the test suite so that it cannot rot.
func TestArchive(t *testing.T) {
	tabletest.New(t) // fails (never skips in CI) without an emulator
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
