//go:build unix

package table

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time this process has used so far, user plus
// system, from getrusage(RUSAGE_SELF), and true. It counts every goroutine
// and the garbage collector of the Go client only: the emulator is another
// process. Benchmarks divide its growth by the entities they handled.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
