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
