package bench

import (
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// sampleHeap samples the heap at every tick until the returned function is called, which
// returns the largest heap of live and not-yet-swept objects seen, and the largest heap a GC
// cycle marked live (/gc/heap/live:bytes): the first depends on when the GC happened to run,
// the second much less.
func sampleHeap(every time.Duration) func() (objects, live uint64) {
	var maxObjects, maxLive atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > maxObjects.Load() {
				maxObjects.Store(v)
			}
			if v := sample[1].Value.Uint64(); v > maxLive.Load() {
				maxLive.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(stop)
		<-done
		return maxObjects.Load(), maxLive.Load()
	}
}
