package driver

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Store is what the reflector keeps in sync. Its method set is that of client-go's cache.Store
// (and so of its Indexer and DeltaFIFO), so any of them plugs in unchanged.
type Store interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Replace(items []any, resourceVersion string) error
}

// ResourceVersionUpdater is a Store that tracks the reflector's progress: its method set is
// client-go's cache.ResourceVersionUpdater, so a store written for client-go's reflector (a
// store that follows bookmarks, as kube-apiserver's own watch cache does) plugs in unchanged.
// The driver calls UpdateResourceVersion after each event of an established watch — an
// object event once the store has applied it, or a bookmark — with the resourceVersion the
// reflector now resumes from, as client-go's reflector does; not for a LIST or a watch-list's
// initial state, whose resourceVersion comes with the Replace (docs/semantics.md, "Stores").
type ResourceVersionUpdater interface {
	UpdateResourceVersion(resourceVersion string)
}

// IncrementalStore is a Store that can take a full state item by item instead of in one
// Replace, so that a relist never holds the new state and the old one whole at once
// (docs/semantics.md, "Relists"). The driver uses it whenever the store has it; a store without
// it (client-go's cache.Store, Indexer, DeltaFIFO) gets the atomic Replace of everything staged.
type IncrementalStore interface {
	Store
	// BeginReplace starts applying a new full state. At most one replacement is open at a
	// time; a new one may begin after the last finished or was abandoned.
	BeginReplace() (Replacement, error)
}

// Replacement applies one full state to an IncrementalStore, item by item.
type Replacement interface {
	// Put applies one object of the new state at once: an object is in its old or its new
	// state, never between. An object whose resourceVersion is the one the store holds is the
	// same object and need not change anything.
	Put(obj any) error
	// Finish deletes every object the new state did not contain and records resourceVersion as
	// the state's. The replacement is over.
	Finish(resourceVersion string) error
	// Abandon ends a replacement that will not finish (the listing failed or the reflector is
	// stopping): the objects put stay, nothing is deleted; the next full state completes it.
	Abandon()
}

// HeldVersion reports the resourceVersion and uid of the object a store holds under namespace
// and name ("" for a cluster-scoped object), and whether it holds one. An item is the object
// held only when both match: a name at the same resourceVersion in another history (a cluster
// created again at the same address) is another object (docs/semantics.md, "Persisted cache"). namespace and name are valid only
// during the call (a transport may hand over views of its read buffer): the store must not keep
// them.
//
// It is a type alias so that a transport can name the same function type without importing
// this package.
type HeldVersion = func(namespace, name string) (resourceVersion, uid string, held bool)

// VersionedStore is an IncrementalStore that says which version of each object it holds, so
// that a relist need not decode an item the store already holds at the same resourceVersion:
// the transport reads only the item's key and resourceVersion, and hands the driver "key K
// unchanged" instead of an object (docs/semantics.md, "Relists"). The driver gives the store's
// HeldVersions to a transport that can use it (a SkippingTransport); any other transport
// decodes every item, as before.
type VersionedStore interface {
	IncrementalStore
	// HeldVersions returns the query for one request, nil while the store holds nothing (a
	// full state for an empty store is decoded item by item without asking). The query is
	// called on the request's goroutine while the driver applies what the request delivered,
	// so it must be safe against the store's own writes; one query is never called from two
	// goroutines at once.
	HeldVersions() HeldVersion
	// BeginReplace of a VersionedStore returns a Replacement that is also a Keeper.
}

// Dropper is a Replacement that can take an object out of the new state: a DELETED among a
// watch-list's initial events (kube-apiserver before 1.32 sends them) says the object is not
// part of the state, whether it was put in this replacement or held before, so Finish deletes
// it. MemStore's and the informer's replacements are Droppers; for one that is not, the driver
// calls the store's Delete with the deleted object while the replacement is open.
type Dropper interface {
	// Drop says the new state does not contain the object stored under key (namespace/name);
	// dropping a key the store does not hold is no error.
	Drop(key string) error
}

// Keeper is the Replacement of a VersionedStore: it can take an object of the new state
// without the object, because the store holds it at the same resourceVersion.
type Keeper interface {
	// Keep says the new state contains the object stored under key (namespace/name), as the
	// store holds it: Finish does not delete it, and nothing about it changes. A key the store
	// no longer holds is an error: only the replacement writes to the store while it is open.
	Keep(key string) error
}

// SameVersion says whether two objects are the same version of one object: both carry the
// same non-empty resourceVersion and the same uid (docs/semantics.md, "Relists": no update for
// an unchanged object; "Persisted cache": the same name at the same resourceVersion in another
// history is another object).
func SameVersion(old, obj any) bool {
	o, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	n, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return sameVersion(o, n)
}

func sameVersion(old, obj metav1.Object) bool {
	rv := obj.GetResourceVersion()
	return rv != "" && rv == old.GetResourceVersion() && obj.GetUID() == old.GetUID()
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
// "namespace/name" key, so that storing an object allocates no key. It is an IncrementalStore:
// each entry carries the generation of the full state that last put it, so finishing a
// replacement deletes the entries of older generations without a set of the keys seen.
type MemStore struct {
	mu    sync.RWMutex
	items map[objectName]memEntry
	rv    string
	gen   uint64
}

type memEntry struct {
	obj any
	gen uint64
}

var _ VersionedStore = (*MemStore)(nil)

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
func NewMemStore() *MemStore { return &MemStore{items: map[objectName]memEntry{}} }

func (s *MemStore) Add(obj any) error    { return s.put(obj) }
func (s *MemStore) Update(obj any) error { return s.put(obj) }

func (s *MemStore) put(obj any) error {
	n, err := nameOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.items[n] = memEntry{obj, s.gen}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[objectName]memEntry, len(items))
	for _, obj := range items {
		n, err := nameOf(obj)
		if err != nil {
			return err
		}
		next[n] = memEntry{obj, s.gen}
	}
	s.items, s.rv = next, resourceVersion
	return nil
}

// BeginReplace starts a new generation; Put marks each object with it, Finish deletes the
// entries of older generations.
func (s *MemStore) BeginReplace() (Replacement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	return &memReplacement{s: s, gen: s.gen}, nil
}

type memReplacement struct {
	s   *MemStore
	gen uint64
}

// Put stores obj in the new generation. An object of the resourceVersion already stored keeps
// the stored copy, so the decoded duplicate is garbage at once instead of replacing an equal
// object.
//
// Each object's metadata is read once: this runs for every item of every relist.
func (r *memReplacement) Put(obj any) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("object has no metadata: %w", err)
	}
	n := objectName{m.GetNamespace(), m.GetName()}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.items[n]; ok {
		if om, err := meta.Accessor(old.obj); err == nil && sameVersion(om, m) {
			// Keyed by the stored object's own strings: assigning to an existing key stores
			// the key given, which would keep the duplicate's name alive.
			obj, n = old.obj, objectName{om.GetNamespace(), om.GetName()}
		}
	}
	s.items[n] = memEntry{obj, r.gen}
	return nil
}

// Keep marks the stored object with the new generation, keyed by its own strings so that the
// key given is not kept.
func (r *memReplacement) Keep(key string) error {
	n := nameOfKey(key)
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[n]
	if !ok {
		return fmt.Errorf("keep %s: the store does not hold it", key)
	}
	if m, err := meta.Accessor(e.obj); err == nil {
		n = objectName{m.GetNamespace(), m.GetName()}
	}
	s.items[n] = memEntry{e.obj, r.gen}
	return nil
}

func (r *memReplacement) Finish(resourceVersion string) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, e := range s.items {
		if e.gen != r.gen {
			delete(s.items, n)
		}
	}
	s.rv = resourceVersion
	return nil
}

func (r *memReplacement) Abandon() {}

// Drop marks the entry of key as not of the new generation, so that Finish deletes it; until
// then a reader sees it as it was put, as it sees every object the new state lacks.
func (r *memReplacement) Drop(key string) error {
	n := nameOfKey(key)
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[n]; ok && e.gen == r.gen {
		s.items[n] = memEntry{e.obj, r.gen - 1}
	}
	return nil
}

// HeldVersions is the store's VersionedStore query: nil while it is empty.
func (s *MemStore) HeldVersions() HeldVersion {
	if s.Len() == 0 {
		return nil
	}
	return s.heldVersion
}

// heldVersion looks the object up by the two strings given, which the map lookup does not
// keep, and returns its own resourceVersion and uid strings, so that a skipped item allocates
// none.
func (s *MemStore) heldVersion(namespace, name string) (string, string, bool) {
	s.mu.RLock()
	e, ok := s.items[objectName{namespace, name}]
	s.mu.RUnlock()
	if !ok {
		return "", "", false
	}
	m, err := meta.Accessor(e.obj)
	if err != nil {
		return "", "", false
	}
	return m.GetResourceVersion(), string(m.GetUID()), true
}

// GetByKey returns the object stored under the namespace/name key.
func (s *MemStore) GetByKey(key string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.items[nameOfKey(key)]
	return e.obj, ok
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
	for _, e := range s.items {
		out = append(out, e.obj)
	}
	return out
}

// Versions maps each key to its object's resourceVersion, for comparing a cache with a server.
func (s *MemStore) Versions() map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]string, len(s.items))
	for n, e := range s.items {
		if m, err := meta.Accessor(e.obj); err == nil {
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
