//go:build !unix

package table

import "time"

// ProcessCPU reports false: getrusage is not available here, and
// benchmarks then leave out their CPU metrics.
func ProcessCPU() (time.Duration, bool) { return 0, false }
