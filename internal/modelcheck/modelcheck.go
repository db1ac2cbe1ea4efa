// Package modelcheck runs randomized operation sequences for the model
// tests of every tablekit package: a test draws random operations and
// faults from the *rand.Rand it is given, applies each to the real system
// (Azurite through internal/faults) and to a model, and checks invariants
// after each step. The sequence is reproducible from the seed the failure
// message names.
//
// make test runs each model test with a small number of steps; make soak
// sets TABLEKIT_SOAK=1 for the large number. TABLEKIT_SEED=n replays one
// seed.
package modelcheck

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// SoakEnv names the environment variable that selects the large number of
// steps (make soak sets it to 1).
const SoakEnv = "TABLEKIT_SOAK"

// SeedEnv names the environment variable that fixes the seed, to replay a
// failure.
const SeedEnv = "TABLEKIT_SEED"

// Steps returns small, or large when SoakEnv is set to 1.
func Steps(small, large int) int {
	if os.Getenv(SoakEnv) == "1" {
		return large
	}
	return small
}

// Run calls step for each of Steps(small, large) steps with a generator
// seeded from SeedEnv or the clock. The seed is logged first, so a failing
// test's output names it and TABLEKIT_SEED=seed replays the same sequence.
func Run(t *testing.T, small, large int, step func(t *testing.T, r *rand.Rand, i int)) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("modelcheck: %s=%q is not a number", SeedEnv, s)
		}
		seed = n
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := Steps(small, large)
	t.Logf("modelcheck: %d steps; replay with %s=%d", n, SeedEnv, seed)
	for i := range n {
		step(t, r, i)
	}
}
