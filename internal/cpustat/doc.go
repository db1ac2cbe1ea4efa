// Package cpustat measures the CPU time of the Go client for benchmarks:
// every goroutine and the garbage collector of this process, never the
// emulator (another process). Benchmarks divide its growth by the work
// they did, to show whether the client or the emulator is the ceiling.
package cpustat
