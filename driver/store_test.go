package driver_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/driver"
)

// MemStore answers by client-go's namespace/name keys, for namespaced and cluster-scoped
// objects alike, whatever it keys its map by.
func TestMemStoreKeys(t *testing.T) {
	obj := func(ns, name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	}
	s := driver.NewMemStore()
	require.NoError(t, s.Replace([]any{obj("ns", "a", "1"), obj("", "node-1", "2")}, "2"))
	require.NoError(t, s.Add(obj("ns", "b", "3")))
	require.NoError(t, s.Update(obj("ns", "a", "4")))
	require.NoError(t, s.Delete(obj("ns", "b", "5")))
	require.ElementsMatch(t, []string{"ns/a", "node-1"}, s.ListKeys())
	require.Equal(t, map[string]string{"ns/a": "4", "node-1": "2"}, s.Versions())
	got, ok := s.GetByKey("ns/a")
	require.True(t, ok)
	require.Equal(t, "4", got.(*metav1.PartialObjectMetadata).ResourceVersion)
	_, ok = s.GetByKey("node-1")
	require.True(t, ok)
	_, ok = s.GetByKey("ns/b")
	require.False(t, ok)
	require.Equal(t, 2, s.Len())
	require.Equal(t, "2", s.LastSyncResourceVersion())
	require.Error(t, s.Add("not an object"))
}

func cm(ns, name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// docs/semantics.md "Relists": a full state applied item by item. Mid-replacement a reader sees
// every object in its old or its new state; Finish deletes what the state did not contain; an
// object whose resourceVersion did not change keeps the stored copy.
func TestMemStoreIncrementalReplace(t *testing.T) {
	s := driver.NewMemStore()
	kept, changed, gone := cm("ns", "kept", "1"), cm("ns", "changed", "2"), cm("ns", "gone", "3")
	require.NoError(t, s.Replace([]any{kept, changed, gone}, "3"))

	r, err := s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Put(cm("ns", "kept", "1")))
	require.NoError(t, r.Put(cm("ns", "changed", "5")))
	// Mid-replacement: nothing deleted yet, the changed object already new, the unchanged one
	// the very object stored before.
	require.Equal(t, map[string]string{"ns/kept": "1", "ns/changed": "5", "ns/gone": "3"}, s.Versions())
	got, _ := s.GetByKey("ns/kept")
	require.Same(t, kept, got)
	require.Equal(t, "3", s.LastSyncResourceVersion())

	require.NoError(t, r.Put(cm("ns", "new", "6")))
	require.NoError(t, r.Finish("6"))
	require.Equal(t, map[string]string{"ns/kept": "1", "ns/changed": "5", "ns/new": "6"}, s.Versions())
	require.Equal(t, "6", s.LastSyncResourceVersion())
	got, _ = s.GetByKey("ns/kept")
	require.Same(t, kept, got)
}

// A replacement cut midway (abandoned) deletes nothing and leaves each object valid; the next
// full state completes it, deleting what neither put.
func TestMemStoreAbandonedReplaceCompletedByTheNext(t *testing.T) {
	s := driver.NewMemStore()
	require.NoError(t, s.Replace([]any{cm("", "a", "1"), cm("", "b", "1"), cm("", "c", "1")}, "1"))
	r, err := s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Put(cm("", "a", "2")))
	r.Abandon()
	require.Equal(t, map[string]string{"a": "2", "b": "1", "c": "1"}, s.Versions())
	require.Equal(t, "1", s.LastSyncResourceVersion())

	r, err = s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Put(cm("", "b", "3")))
	require.NoError(t, r.Put(cm("", "a", "2")))
	require.NoError(t, r.Finish("3"))
	require.Equal(t, map[string]string{"a": "2", "b": "3"}, s.Versions())
}

// An empty full state empties the store; a watch event during no replacement is unaffected by
// a later one's generation.
func TestMemStoreEmptyReplaceAndEventsBetween(t *testing.T) {
	s := driver.NewMemStore()
	r, err := s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Put(cm("", "a", "1")))
	require.NoError(t, r.Finish("1"))
	require.NoError(t, s.Add(cm("", "b", "2")))
	require.Equal(t, map[string]string{"a": "1", "b": "2"}, s.Versions())
	r, err = s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Finish("3"))
	require.Zero(t, s.Len())
	require.Error(t, func() error { r, _ := s.BeginReplace(); return r.Put("not an object") }())
}

func TestSameVersion(t *testing.T) {
	require.True(t, driver.SameVersion(cm("", "a", "1"), cm("", "a", "1")))
	require.False(t, driver.SameVersion(cm("", "a", "1"), cm("", "a", "2")))
	require.False(t, driver.SameVersion(cm("", "a", ""), cm("", "a", "")), "no resourceVersion: not known to be the same")
	require.False(t, driver.SameVersion("x", cm("", "a", "1")))
}

// docs/semantics.md "Relists": MemStore says which resourceVersion it holds for a key (nothing
// while empty, so an initial state is decoded without asking), and its replacement keeps a key
// without an object: the stored object stays, Finish does not delete it. A key it does not
// hold cannot be kept.
func TestMemStoreHeldVersionsAndKeep(t *testing.T) {
	s := driver.NewMemStore()
	require.Nil(t, s.HeldVersions())
	kept := cm("ns", "kept", "1")
	require.NoError(t, s.Replace([]any{kept, cm("ns", "changed", "2"), cm("ns", "gone", "3"), cm("", "node", "4")}, "4"))
	held := s.HeldVersions()
	require.NotNil(t, held)
	for _, c := range []struct {
		namespace, name, rv string
		ok                  bool
	}{{"ns", "kept", "1", true}, {"", "node", "4", true}, {"ns", "node", "", false}, {"ns", "missing", "", false}} {
		rv, _, ok := held(c.namespace, c.name)
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.rv, rv, c.name)
	}

	r, err := s.BeginReplace()
	require.NoError(t, err)
	k, ok := r.(driver.Keeper)
	require.True(t, ok, "a VersionedStore's replacement is a Keeper")
	require.NoError(t, k.Keep("ns/kept"))
	require.NoError(t, k.Keep("node"))
	require.NoError(t, r.Put(cm("ns", "changed", "5")))
	require.Error(t, k.Keep("ns/missing"))
	require.NoError(t, r.Finish("6"))
	require.Equal(t, map[string]string{"ns/kept": "1", "ns/changed": "5", "node": "4"}, s.Versions())
	got, _ := s.GetByKey("ns/kept")
	require.Same(t, kept, got)
}

// docs/semantics.md "Persisted cache": the same name at the same resourceVersion with another
// uid is another object — a cluster created again at the same address reuses names and, its
// etcd starting over, resourceVersions. The store's query says the uid it holds, and a put of
// such an object replaces the stored one instead of keeping it as unchanged.
func TestAnotherUIDAtTheSameVersionIsAnotherObject(t *testing.T) {
	s := driver.NewMemStore()
	old := cm("ns", "a", "5")
	old.UID = "uid-of-the-old-cluster"
	require.NoError(t, s.Replace([]any{old}, "5"))
	rv, uid, ok := s.HeldVersions()("ns", "a")
	require.True(t, ok)
	require.Equal(t, "5", rv)
	require.Equal(t, "uid-of-the-old-cluster", uid)

	other := cm("ns", "a", "5")
	other.UID = "uid-of-the-new-cluster"
	require.False(t, driver.SameVersion(old, other))
	require.True(t, driver.SameVersion(old, old.DeepCopy()))
	r, err := s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Put(other))
	require.NoError(t, r.Finish("7"))
	got, ok := s.GetByKey("ns/a")
	require.True(t, ok)
	require.Same(t, other, got, "the new cluster's object replaced the old one")
}
