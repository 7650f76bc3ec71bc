package bench

import (
	"runtime"
	"syscall"
	"time"
)

type runtimeMemStats struct{ mallocs uint64 }

func (m *runtimeMemStats) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs = ms.Mallocs
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
