package bench

import "runtime"

type runtimeMemStats struct{ mallocs uint64 }

func (m *runtimeMemStats) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs = ms.Mallocs
}
