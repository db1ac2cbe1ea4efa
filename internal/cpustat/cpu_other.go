//go:build !unix

package cpustat

import "time"

// Process reports false: getrusage is not available here, and benchmarks
// then leave out their CPU metrics.
func Process() (time.Duration, bool) { return 0, false }
