package main

import (
	"fmt"
	"slices"

	"github.com/rewatch/rewatch/driver"
)

// Row event types, as kubectl's EVENT column names them.
const (
	rowAdded    = "ADDED"
	rowModified = "MODIFIED"
	rowDeleted  = "DELETED"
)

// rowStore is the store `rewatch watch` keeps in sync: the library's MemStore, telling emit
// about every change it takes, so that the objects are printed as kubectl get -w prints them.
// A watch event is the row of its own type. A full state (the initial list, a relist) is
// diffed against what the store holds, as it arrives: a new key is ADDED, a changed
// resourceVersion MODIFIED, an object the store holds at the same resourceVersion nothing
// (docs/semantics.md, "Relists": an unchanged object is no update), and the keys the state
// lacks are DELETED when it completes. The sink is called on the reflector's goroutine, after
// the store took the change.
type rowStore struct {
	*driver.MemStore
	sink rowSink
}

// rowSink takes the rows: flush ends a batch — a watch event, or a full state (fullState),
// complete or abandoned — which a table aligns as one, as kubectl aligns its list and then
// each event.
type rowSink interface {
	row(event string, obj any)
	flush(fullState, complete bool)
}

var _ driver.VersionedStore = (*rowStore)(nil)

func newRowStore(sink rowSink) *rowStore {
	return &rowStore{MemStore: driver.NewMemStore(), sink: sink}
}

func (s *rowStore) emit(event string, obj any) { s.sink.row(event, obj) }

func (s *rowStore) Add(obj any) error {
	if err := s.MemStore.Add(obj); err != nil {
		return err
	}
	s.emit(rowAdded, obj)
	s.sink.flush(false, false)
	return nil
}

func (s *rowStore) Update(obj any) error {
	if err := s.MemStore.Update(obj); err != nil {
		return err
	}
	s.emit(rowModified, obj)
	s.sink.flush(false, false)
	return nil
}

func (s *rowStore) Delete(obj any) error {
	if err := s.MemStore.Delete(obj); err != nil {
		return err
	}
	s.emit(rowDeleted, obj)
	s.sink.flush(false, false)
	return nil
}

// Replace is the atomic replacement; the driver uses the incremental one (BeginReplace) with
// this store, but a Store must have both, and both tell the same changes.
func (s *rowStore) Replace(items []any, resourceVersion string) error {
	old := map[string]any{}
	for _, obj := range s.List() {
		if k, err := driver.KeyOf(obj); err == nil {
			old[k] = obj
		}
	}
	if err := s.MemStore.Replace(items, resourceVersion); err != nil {
		return err
	}
	for _, obj := range items {
		k, _ := driver.KeyOf(obj)
		prev, held := old[k]
		delete(old, k)
		s.emitPut(prev, held, obj)
	}
	s.emitGone(old)
	s.sink.flush(true, true)
	return nil
}

func (s *rowStore) emitPut(prev any, held bool, obj any) {
	switch {
	case !held:
		s.emit(rowAdded, obj)
	case !driver.SameVersion(prev, obj):
		s.emit(rowModified, obj)
	}
}

// emitGone tells the deletions of a full state in key order, so that runs compare line by line.
func (s *rowStore) emitGone(gone map[string]any) {
	keys := make([]string, 0, len(gone))
	for k := range gone {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s.emit(rowDeleted, gone[k])
	}
}

func (s *rowStore) BeginReplace() (driver.Replacement, error) {
	r, err := s.MemStore.BeginReplace()
	if err != nil {
		return nil, err
	}
	return &rowReplacement{s: s, r: r, seen: map[string]struct{}{}}, nil
}

// rowReplacement remembers the keys a full state brought, so that Finish can tell which
// objects it deletes.
type rowReplacement struct {
	s    *rowStore
	r    driver.Replacement
	seen map[string]struct{}
}

func (r *rowReplacement) Put(obj any) error {
	k, err := driver.KeyOf(obj)
	if err != nil {
		return err
	}
	prev, held := r.s.GetByKey(k)
	if err := r.r.Put(obj); err != nil {
		return err
	}
	r.seen[k] = struct{}{}
	r.s.emitPut(prev, held, obj)
	return nil
}

// Keep is an item the transport did not decode because the store holds it at the same
// resourceVersion: unchanged, no row.
func (r *rowReplacement) Keep(key string) error {
	k, ok := r.r.(driver.Keeper)
	if !ok {
		return fmt.Errorf("keep %s: %T cannot keep an object", key, r.r)
	}
	if err := k.Keep(key); err != nil {
		return err
	}
	r.seen[key] = struct{}{}
	return nil
}

func (r *rowReplacement) Finish(resourceVersion string) error {
	gone := map[string]any{}
	for _, k := range r.s.ListKeys() {
		if _, ok := r.seen[k]; !ok {
			if obj, ok := r.s.GetByKey(k); ok {
				gone[k] = obj
			}
		}
	}
	if err := r.r.Finish(resourceVersion); err != nil {
		r.s.sink.flush(true, false)
		return err
	}
	r.s.emitGone(gone)
	r.s.sink.flush(true, true)
	return nil
}

// Abandon keeps what was put, whose rows were told: they are printed.
func (r *rowReplacement) Abandon() {
	r.r.Abandon()
	r.s.sink.flush(true, false)
}
