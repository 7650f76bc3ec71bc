package informer

import (
	"fmt"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"

	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/driver"
)

// store is the Informer as the driver's Store: each change goes into the indexer and becomes
// the notifications client-go's informer would send for it.
type store Informer

var _ driver.VersionedStore = (*store)(nil)

func (s *store) informer() *Informer { return (*Informer)(s) }

func (s *store) transformed(obj any) (any, error) {
	if s.prepare != nil {
		s.prepare(obj)
	}
	if s.transform == nil {
		return obj, nil
	}
	out, err := s.transform(obj)
	if err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	return out, nil
}

// Add and Update are the same to a cache: an object for a key the indexer already holds is an
// update, any other an add.
func (s *store) Add(obj any) error    { return s.put(obj) }
func (s *store) Update(obj any) error { return s.put(obj) }

func (s *store) put(obj any) error {
	defer s.informer().processed(s.informer().processingStart())
	obj, err := s.transformed(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists, err := s.indexer.Get(obj)
	if err != nil {
		return err
	}
	if err := s.indexer.Update(obj); err != nil {
		return err
	}
	if exists {
		s.informer().distribute(notification{kind: notifyUpdate, old: old, obj: obj})
	} else {
		s.informer().distribute(notification{kind: notifyAdd, obj: obj})
	}
	return nil
}

func (s *store) Delete(obj any) error {
	defer s.informer().processed(s.informer().processingStart())
	obj, err := s.transformed(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.indexer.Delete(obj); err != nil {
		return err
	}
	s.informer().distribute(notification{kind: notifyDelete, obj: obj})
	return nil
}

// Replace installs a full state atomically; the driver uses it only for a store that is not an
// IncrementalStore, so the informer's own reflector never calls it, but it keeps the same
// rules as the incremental path (see BeginReplace). The first state is the initial list: adds
// with isInInitialList true. A later one is a relist, diffed against the indexer as
// client-go's informer does: an add for a new key, an update for a changed object, and for a
// key that vanished a delete of cache.DeletedFinalStateUnknown carrying the last object known.
// An object whose resourceVersion did not change is no update (docs/semantics.md, "Relists"):
// handlers with a resync period get it at their period, from the resync loop, as always.
func (s *store) Replace(items []any, resourceVersion string) error {
	defer s.informer().processed(s.informer().processingStart())
	objs := make([]any, len(items))
	for n, item := range items {
		obj, err := s.transformed(item)
		if err != nil {
			return err
		}
		objs[n] = obj
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := s.informer()
	initial := !inf.synced.Load()
	keys := make(map[string]struct{}, len(objs))
	var notes []notification
	for _, obj := range objs {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return err
		}
		keys[key] = struct{}{}
		old, exists, err := s.indexer.GetByKey(key)
		if err != nil {
			return err
		}
		if n, changed := stateChange(old, exists, obj, initial); changed {
			notes = append(notes, n)
		}
	}
	for _, key := range s.indexer.ListKeys() {
		if _, ok := keys[key]; ok {
			continue
		}
		if old, exists, err := s.indexer.GetByKey(key); err == nil && exists {
			notes = append(notes, notification{kind: notifyDelete, obj: cache.DeletedFinalStateUnknown{Key: key, Obj: old}})
		}
	}
	if err := s.indexer.Replace(objs, resourceVersion); err != nil {
		return err
	}
	for _, n := range notes {
		inf.distribute(n)
	}
	inf.fullState(resourceVersion)
	return nil
}

// List is every object the indexer holds: what the driver saves in a persisted snapshot.
func (s *store) List() []any { return s.indexer.List() }

// stateChange is the notification a full state's obj makes against old, the object the
// indexer holds for its key (exists false: none): an add, isInInitialList while the informer
// has not synced, or an update; changed is false for an object whose resourceVersion did not
// change, which is no update (docs/semantics.md, "Relists").
func stateChange(old any, exists bool, obj any, initial bool) (n notification, changed bool) {
	switch {
	case !exists:
		return notification{kind: notifyAdd, obj: obj, initial: initial}, true
	case driver.SameVersion(old, obj):
		return notification{}, false
	default:
		return notification{kind: notifyUpdate, old: old, obj: obj}, true
	}
}

// BeginReplace applies a full state item by item (driver.IncrementalStore): each object goes
// into the indexer as it arrives, with its notification, and the keys the state did not
// contain are deleted when it finishes. The notifications follow Replace's rules.
func (s *store) BeginReplace() (driver.Replacement, error) {
	return &replacement{s: s, seen: map[string]struct{}{}}, nil
}

// replacement is one full state being applied to the informer. seen holds the keys put so far:
// a key is a few dozen bytes against the kilobytes of the object it names.
type replacement struct {
	s    *store
	seen map[string]struct{}
}

// Put applies one object: an add for a key the indexer does not hold (isInInitialList while
// the informer has not synced), an update for a changed object, and for an object whose
// resourceVersion did not change nothing at all: the indexer keeps the copy it holds, so the
// decoded duplicate is garbage at once.
func (r *replacement) Put(item any) error {
	defer r.s.informer().processed(r.s.informer().processingStart())
	obj, err := r.s.transformed(item)
	if err != nil {
		return err
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := s.informer()
	r.seen[key] = struct{}{}
	old, exists, err := s.indexer.GetByKey(key)
	if err != nil {
		return err
	}
	n, changed := stateChange(old, exists, obj, !inf.synced.Load())
	if !changed {
		return nil
	}
	if err := s.indexer.Update(obj); err != nil {
		return err
	}
	inf.distribute(n)
	return nil
}

// Keep takes an object the transport did not decode because the indexer holds it at the same
// resourceVersion: like a Put of an unchanged object, it is seen and nothing else — no handler
// is told (docs/semantics.md, "Relists").
func (r *replacement) Keep(key string) error {
	s := r.s
	defer s.informer().processed(s.informer().processingStart())
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists, err := s.indexer.GetByKey(key); err != nil || !exists {
		return fmt.Errorf("keep %s: the indexer does not hold it", key)
	}
	r.seen[key] = struct{}{}
	return nil
}

// HeldVersions is the informer's query for a relist (driver.VersionedStore); nil until the
// indexer holds a full state (listed, or restored from a persisted snapshot), so that the
// initial state is decoded without asking for each item.
// The query builds each namespace/name key in a buffer of its own and looks it up without
// copying it: the indexer's lookup does not keep the key.
func (s *store) HeldVersions() driver.HeldVersion {
	if !s.informer().filled.Load() {
		return nil
	}
	var buf []byte
	return func(namespace, name string) (rv, uid string, ok bool) {
		buf = buf[:0]
		if namespace != "" {
			buf = append(append(buf, namespace...), '/')
		}
		buf = append(buf, name...)
		obj, exists, err := s.indexer.GetByKey(unsafe.String(unsafe.SliceData(buf), len(buf)))
		if err != nil || !exists {
			return "", "", false
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", "", false
		}
		return m.GetResourceVersion(), string(m.GetUID()), true
	}
}

// Finish deletes what the state did not contain — a delete of cache.DeletedFinalStateUnknown
// for each — and marks the informer synced once its first full state is complete, unless that
// state is a persisted snapshot's restore (fullState).
func (r *replacement) Finish(resourceVersion string) error {
	s := r.s
	defer s.informer().processed(s.informer().processingStart())
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := s.informer()
	for _, key := range s.indexer.ListKeys() {
		if _, ok := r.seen[key]; ok {
			continue
		}
		old, exists, err := s.indexer.GetByKey(key)
		if err != nil || !exists {
			continue
		}
		if err := s.indexer.Delete(old); err != nil {
			return err
		}
		inf.distribute(notification{kind: notifyDelete, obj: cache.DeletedFinalStateUnknown{Key: key, Obj: old}})
	}
	r.seen = nil
	if inf.metered && resourceVersion != "" {
		s.indexer.Bookmark(resourceVersion) // the list's, for client-go's store resourceVersion metric
	}
	inf.fullState(resourceVersion)
	return nil
}

// Drop takes key out of the state being applied (driver.Dropper): Finish deletes it, with the
// DeletedFinalStateUnknown every object the state lacks gets, if the indexer holds it.
func (r *replacement) Drop(key string) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(r.seen, key)
	return nil
}

// Abandon leaves every object put where it is; the next full state completes the job.
func (r *replacement) Abandon() { r.seen = nil }

// UpdateResourceVersion is the reflector's progress after each watch event and bookmark
// (driver.ResourceVersionUpdater): with client-go's informer metrics on, the indexer takes it
// as a bookmark, so that its resourceVersion gauge moves as client-go's informer's does.
func (s *store) UpdateResourceVersion(resourceVersion string) {
	if s.informer().metered && resourceVersion != "" {
		s.indexer.Bookmark(resourceVersion)
	}
}
