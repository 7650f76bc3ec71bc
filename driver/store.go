package driver

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Store is what the reflector keeps in sync. Its method set is that of client-go's cache.Store
// (and so of its Indexer and DeltaFIFO), so any of them plugs in unchanged.
type Store interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Replace(items []any, resourceVersion string) error
}

// KeyOf is the namespace/name key client-go's MetaNamespaceKeyFunc computes: "name" for
// cluster-scoped objects.
func KeyOf(obj any) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("object has no metadata: %w", err)
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName(), nil
	}
	return m.GetName(), nil
}

// MemStore is the built-in store: a map from namespace/name to object behind a RWMutex.
type MemStore struct {
	mu    sync.RWMutex
	items map[string]any
	rv    string
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{items: map[string]any{}} }

func (s *MemStore) Add(obj any) error    { return s.put(obj) }
func (s *MemStore) Update(obj any) error { return s.put(obj) }

func (s *MemStore) put(obj any) error {
	key, err := KeyOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.items[key] = obj
	s.mu.Unlock()
	return nil
}

// Delete removes obj by key; deleting what is not there is not an error (client-go agrees).
func (s *MemStore) Delete(obj any) error {
	key, err := KeyOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.items, key)
	s.mu.Unlock()
	return nil
}

// Replace swaps the whole content atomically.
func (s *MemStore) Replace(items []any, resourceVersion string) error {
	next := make(map[string]any, len(items))
	for _, obj := range items {
		key, err := KeyOf(obj)
		if err != nil {
			return err
		}
		next[key] = obj
	}
	s.mu.Lock()
	s.items, s.rv = next, resourceVersion
	s.mu.Unlock()
	return nil
}

// GetByKey returns the object stored under key.
func (s *MemStore) GetByKey(key string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.items[key]
	return obj, ok
}

// Len is the number of objects.
func (s *MemStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// ListKeys returns every key, unordered.
func (s *MemStore) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.items))
	for k := range s.items {
		keys = append(keys, k)
	}
	return keys
}

// List returns every object, unordered.
func (s *MemStore) List() []any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]any, 0, len(s.items))
	for _, v := range s.items {
		out = append(out, v)
	}
	return out
}

// Versions maps each key to its object's resourceVersion, for comparing a cache with a server.
func (s *MemStore) Versions() map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]string, len(s.items))
	for k, v := range s.items {
		if m, err := meta.Accessor(v); err == nil {
			out[k] = m.GetResourceVersion()
		}
	}
	return out
}

// LastSyncResourceVersion is the RV of the last Replace.
func (s *MemStore) LastSyncResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}
