package sim

import (
	"sort"

	"k8s.io/apimachinery/pkg/watch"
)

// event is one change of one object, as etcd's watch and the watch cache
// record it: the object after the change and before it.
type event struct {
	typ  watch.EventType
	rv   uint64
	obj  *object // for Deleted: the last state, carrying the deletion's RV
	prev *object // nil for Added
}

// resource is everything stored for one GroupVersionResource.
type resource struct {
	kindInfo
	objects map[string]*object // key "ns/name"
	// log holds every event with rv > logBase, oldest first: etcd's MVCC
	// history since its last compaction. The watch cache's window is its
	// tail (see watchHorizon).
	log      []event
	logBase  uint64
	watchers map[*watcher]struct{}
}

func newResource(k kindInfo, rv uint64) *resource {
	return &resource{
		kindInfo: k,
		objects:  map[string]*object{},
		logBase:  rv,
		watchers: map[*watcher]struct{}{},
	}
}

func (r *resource) append(e event, storageHistory int) {
	r.log = append(r.log, e)
	if over := len(r.log) - storageHistory; over > 0 {
		r.logBase = r.log[over-1].rv
		r.log = append([]event(nil), r.log[over:]...)
	}
}

// watchHorizon is the oldest resourceVersion a watch may start from: every
// event after it is still in the watch cache's window. Like the cacher,
// "too old resource version: N (horizon)" is returned for anything older.
func (r *resource) watchHorizon(window int) uint64 {
	if n := len(r.log) - window; n > 0 {
		return r.log[n-1].rv
	}
	return r.logBase
}

// eventsAfter returns the logged events with rv > after, oldest first.
func (r *resource) eventsAfter(after uint64) []event {
	i := sort.Search(len(r.log), func(i int) bool { return r.log[i].rv > after })
	return r.log[i:]
}

// stateAt rebuilds the objects as they were at rv by undoing the newer
// events; the caller ensures rv >= logBase.
func (r *resource) stateAt(rv uint64) map[string]*object {
	state := make(map[string]*object, len(r.objects))
	for k, o := range r.objects {
		state[k] = o
	}
	newer := r.eventsAfter(rv)
	for i := len(newer) - 1; i >= 0; i-- {
		e := newer[i]
		if e.prev == nil {
			delete(state, e.obj.key())
		} else {
			state[e.prev.key()] = e.prev
		}
	}
	return state
}

func sortedObjects(state map[string]*object) []*object {
	out := make([]*object, 0, len(state))
	for _, o := range state {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}
