//go:build race

package testrig

// Race reports that the race detector is on: sync.Pool then drops items
// at random, so allocation counts vary from run to run, and tests that
// compare them run only without it (make test runs them again so).
const Race = true
