//go:build unix

package cpustat

import (
	"syscall"
	"time"
)

// Process returns the CPU time this process has used so far, user plus
// system, from getrusage(RUSAGE_SELF), and true.
func Process() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
