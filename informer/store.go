package informer

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// store is the Informer as the driver's Store: each change goes into the indexer and becomes
// the notifications client-go's informer would send for it.
type store Informer

func (s *store) informer() *Informer { return (*Informer)(s) }

func (s *store) transformed(obj any) (any, error) {
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

// Replace installs a full state. The first is the initial list: adds with isInInitialList true.
// A later one is a relist, diffed against the indexer as client-go's informer does: an add for
// a new key, an update for every key still there (changed or not), and for a key that vanished
// a delete of cache.DeletedFinalStateUnknown carrying the last object known.
func (s *store) Replace(items []any, resourceVersion string) error {
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
		switch {
		case err != nil:
			return err
		case initial:
			notes = append(notes, notification{kind: notifyAdd, obj: obj, initial: true})
		case exists:
			notes = append(notes, notification{kind: notifyUpdate, old: old, obj: obj})
		default:
			notes = append(notes, notification{kind: notifyAdd, obj: obj})
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
	inf.markSynced()
	return nil
}
