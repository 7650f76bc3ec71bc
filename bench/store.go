package bench

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rewatch/rewatch/driver"
)

// InnerStore is what TimedStore wraps: rewatch's MemStore and client-go's cache.Store both
// have these methods.
type InnerStore interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Replace(items []any, resourceVersion string) error
	List() []any
}

// TimedStore records when each store mutation happened (what "an event was delivered"
// means for every reflector alike) and can report key → resourceVersion for convergence
// checks. It satisfies rewatch's Store and client-go's ReflectorStore.
type TimedStore struct {
	Inner InnerStore

	mu    sync.Mutex
	times []int64
}

func (s *TimedStore) mark() {
	now := time.Now().UnixNano()
	s.mu.Lock()
	s.times = append(s.times, now)
	s.mu.Unlock()
}

func (s *TimedStore) Add(obj any) error    { err := s.Inner.Add(obj); s.mark(); return err }
func (s *TimedStore) Update(obj any) error { err := s.Inner.Update(obj); s.mark(); return err }
func (s *TimedStore) Delete(obj any) error { err := s.Inner.Delete(obj); s.mark(); return err }
func (s *TimedStore) Replace(items []any, rv string) error {
	err := s.Inner.Replace(items, rv)
	s.mark()
	return err
}

// Resync is client-go's ReflectorStore method; nothing to do for these stores.
func (s *TimedStore) Resync() error { return nil }

// Times returns the mutation times (unix nanos).
func (s *TimedStore) Times() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.times...)
}

// List is every object held: what a persisted cache saves.
func (s *TimedStore) List() []any { return s.Inner.List() }

// Len is the number of objects held.
func (s *TimedStore) Len() int {
	if l, ok := s.Inner.(interface{ Len() int }); ok {
		return l.Len()
	}
	if l, ok := s.Inner.(interface{ ListKeys() []string }); ok {
		return len(l.ListKeys())
	}
	return len(s.Inner.List())
}

// Has says whether the store holds namespace/name key.
func (s *TimedStore) Has(key string) bool {
	switch g := s.Inner.(type) {
	case interface{ GetByKey(string) (any, bool) }:
		_, ok := g.GetByKey(key)
		return ok
	case interface {
		GetByKey(string) (any, bool, error)
	}:
		_, ok, _ := g.GetByKey(key)
		return ok
	}
	_, ok := s.Versions()[key]
	return ok
}

// Versions is namespace/name → resourceVersion of every object held.
func (s *TimedStore) Versions() map[string]string {
	out := map[string]string{}
	for _, o := range s.Inner.List() {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

// ForDriver is the store as a reflector's driver should see it: over an incremental store
// (rewatch's MemStore) a driver.IncrementalStore, so that full states go in item by item
// (docs/semantics.md, "Relists"), with the mutation time marked when one is complete; over any
// other, the TimedStore itself.
func (s *TimedStore) ForDriver() driver.Store {
	if v, ok := s.Inner.(driver.VersionedStore); ok {
		return versionedTimedStore{incrementalTimedStore{s, v}, v}
	}
	if inc, ok := s.Inner.(driver.IncrementalStore); ok {
		return incrementalTimedStore{s, inc}
	}
	return s
}

// versionedTimedStore passes the inner store's VersionedStore query through, so that a relist
// skips what the store holds unchanged.
type versionedTimedStore struct {
	incrementalTimedStore
	v driver.VersionedStore
}

func (s versionedTimedStore) HeldVersions() driver.HeldVersion { return s.v.HeldVersions() }

type incrementalTimedStore struct {
	*TimedStore
	inc driver.IncrementalStore
}

func (s incrementalTimedStore) BeginReplace() (driver.Replacement, error) {
	r, err := s.inc.BeginReplace()
	return timedReplacement{r, s.TimedStore}, err
}

type timedReplacement struct {
	driver.Replacement
	s *TimedStore
}

// Keep passes an unchanged object to the inner replacement, which is a Keeper when the inner
// store is a VersionedStore.
func (r timedReplacement) Keep(key string) error {
	k, ok := r.Replacement.(driver.Keeper)
	if !ok {
		return fmt.Errorf("keep %s: %T cannot keep an object", key, r.Replacement)
	}
	return k.Keep(key)
}

func (r timedReplacement) Finish(rv string) error {
	err := r.Replacement.Finish(rv)
	r.s.mark()
	return err
}
