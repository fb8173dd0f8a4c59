//go:build unix

package fake

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user + system) this process has used so
// far, for benchmarks that report CPU per send next to sends/s: on a shared
// machine the rate depends on the neighbours, the CPU cost does not.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
