package driver

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rewatch/rewatch/fsm"
)

// snapshotIndex finds the objects of the persisted snapshot loaded before the start by key,
// for the requests the machine asks AgainstSnapshot: the probe and its verification compare
// the server's items with it (docs/semantics.md, "Persisted cache"). It is built once, on the
// loop, when the first such request goes out, and never changed after: the request's goroutine
// reads it without a lock.
type snapshotIndex map[string]any

func newSnapshotIndex(items []any) snapshotIndex {
	idx := make(snapshotIndex, len(items))
	for _, obj := range items {
		if key, err := KeyOf(obj); err == nil {
			idx[key] = obj
		}
	}
	return idx
}

// held is the snapshot as a SkippingTransport's query: the resourceVersion and uid of what it
// holds under namespace and name.
func (idx snapshotIndex) held(namespace, name string) (rv, uid string, ok bool) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok := idx[key]
	if !ok {
		return "", "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", false
	}
	return m.GetResourceVersion(), string(m.GetUID()), true
}

// holds says whether the snapshot has the item of e: an item the transport left undecoded
// because the snapshot holds it, or a decoded one of the same key, resourceVersion and uid.
func (idx snapshotIndex) holds(e *fsm.Event) bool {
	if e.Object == nil {
		if e.Key == "" || len(e.Items) > 0 {
			return false
		}
		_, ok := idx[e.Key]
		return ok
	}
	key, err := KeyOf(e.Object)
	if err != nil {
		return false
	}
	old, ok := idx[key]
	return ok && SameVersion(old, e.Object)
}
