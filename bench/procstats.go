package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSKiB is VmHWM from /proc/self/status: this process's own peak RSS. getrusage's
// ru_maxrss is not usable in a re-executed child: Linux carries the parent's peak across
// fork and exec, so every child would report at least the parent's RSS.
func peakRSSKiB() int64 {
	return rssKiB("VmHWM:")
}

// rssKiB reads a memory field of /proc/self/status ("VmRSS:", "VmHWM:") in KiB; -1 if unreadable.
func rssKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// resetPeakRSS sets this process's peak RSS (VmHWM) back to its current RSS, so that a later
// VmHWM is the peak of what ran in between (Linux: "5" to /proc/self/clear_refs).
func resetPeakRSS(tb interface{ Fatal(...any) }) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Fatal("cannot reset the peak RSS: ", err)
	}
}
