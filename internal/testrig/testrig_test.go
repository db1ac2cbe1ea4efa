package testrig_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
)

func TestCrashes(t *testing.T) {
	var c testrig.Crashes
	if err := c.Hook("commit"); err != nil {
		t.Fatalf("the zero Crashes crashed: %v", err)
	}
	c.At("commit", 2)
	if err := c.Hook("commit"); err != nil {
		t.Fatalf("first pass after At(2) = %v", err)
	}
	if err := c.Hook("commit"); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("second pass after At(2) = %v, want ErrCrash", err)
	}
	if err := c.Hook("commit"); err != nil {
		t.Fatalf("third pass = %v: a crash point fires once", err)
	}
	c.Random(1, func() float64 { return 0.5 })
	if err := c.Hook("release"); !errors.Is(err, testrig.ErrCrash) {
		t.Fatalf("Random(1) = %v", err)
	}
	c.Random(0, nil)
	if err := c.Hook("release"); err != nil {
		t.Fatalf("after Random(0) = %v", err)
	}
	if got := c.Injected(); got["commit"] != 1 || got["release"] != 1 || c.Passes("commit") != 4 {
		t.Fatalf("Injected = %v, Passes(commit) = %d", got, c.Passes("commit"))
	}
}
