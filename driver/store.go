package driver

import (
	"fmt"
	"strings"
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

// MemStore is the built-in store: a map from namespace and name to object behind a RWMutex.
// The map is keyed by the two strings the object already holds rather than by the
// "namespace/name" key, so that storing an object allocates no key.
type MemStore struct {
	mu    sync.RWMutex
	items map[objectName]any
	rv    string
}

type objectName struct{ namespace, name string }

func (n objectName) key() string {
	if n.namespace == "" {
		return n.name
	}
	return n.namespace + "/" + n.name
}

func nameOf(obj any) (objectName, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return objectName{}, fmt.Errorf("object has no metadata: %w", err)
	}
	return objectName{m.GetNamespace(), m.GetName()}, nil
}

// nameOfKey parses a namespace/name key ("name" alone for a cluster-scoped object).
func nameOfKey(key string) objectName {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return objectName{ns, name}
	}
	return objectName{name: key}
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{items: map[objectName]any{}} }

func (s *MemStore) Add(obj any) error    { return s.put(obj) }
func (s *MemStore) Update(obj any) error { return s.put(obj) }

func (s *MemStore) put(obj any) error {
	n, err := nameOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.items[n] = obj
	s.mu.Unlock()
	return nil
}

// Delete removes obj by key; deleting what is not there is not an error (client-go agrees).
func (s *MemStore) Delete(obj any) error {
	n, err := nameOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.items, n)
	s.mu.Unlock()
	return nil
}

// Replace swaps the whole content atomically.
func (s *MemStore) Replace(items []any, resourceVersion string) error {
	next := make(map[objectName]any, len(items))
	for _, obj := range items {
		n, err := nameOf(obj)
		if err != nil {
			return err
		}
		next[n] = obj
	}
	s.mu.Lock()
	s.items, s.rv = next, resourceVersion
	s.mu.Unlock()
	return nil
}

// GetByKey returns the object stored under the namespace/name key.
func (s *MemStore) GetByKey(key string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.items[nameOfKey(key)]
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
	for n := range s.items {
		keys = append(keys, n.key())
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
	for n, v := range s.items {
		if m, err := meta.Accessor(v); err == nil {
			out[n.key()] = m.GetResourceVersion()
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
