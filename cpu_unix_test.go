//go:build unix

package taskflow_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time so far: per task, it
// shows what a change costs where wall time on a shared machine cannot.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
