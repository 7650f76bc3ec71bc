package factory_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/sim"
)

// The dynamic and metadata factories hand out rewatch's informers by resource, honouring the
// namespace and the tweak's label selector, with client-go's listers over them: unstructured
// objects from the dynamic one, PartialObjectMetadata from the metadata one.
func TestDynamicAndMetadataFactories(t *testing.T) {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, ns := range []string{"mine", "other"} {
		_, err := s.CreateWithLabels(sim.ConfigMaps, ns, "selected", map[string]string{"app": "x"}, nil)
		require.NoError(t, err)
		_, err = s.CreateWithLabels(sim.ConfigMaps, ns, "unselected", nil, nil)
		require.NoError(t, err)
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }
	dyn, err := factory.NewFilteredDynamicSharedInformerFactory(&rest.Config{Host: u}, 0, "mine", tweak)
	require.NoError(t, err)
	md, err := factory.NewFilteredMetadataSharedInformerFactory(&rest.Config{Host: u}, 0, "mine", tweak)
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for name, f := range map[string]interface {
		dynamicinformer.DynamicSharedInformerFactory
		metadatainformer.SharedInformerFactory
	}{"dynamic": dyn, "metadata": md} {
		t.Run(name, func(t *testing.T) {
			gi := f.ForResource(gvr)
			require.IsType(t, &informer.Informer{}, gi.Informer())
			require.Same(t, gi.Informer(), f.ForResource(gvr).Informer())
			require.Contains(t, gi.Informer().GetIndexer().GetIndexers(), cache.NamespaceIndex)
			stop := make(chan struct{})
			f.Start(stop)
			t.Cleanup(func() { close(stop); f.Shutdown() })
			require.Equal(t, map[schema.GroupVersionResource]bool{gvr: true}, f.WaitForCacheSync(stop))
			objs, err := gi.Lister().ByNamespace("mine").List(labels.Everything())
			require.NoError(t, err)
			var got []string
			for _, o := range objs {
				m, err := meta.Accessor(o)
				require.NoError(t, err)
				got = append(got, m.GetNamespace()+"/"+m.GetName())
				if name == "dynamic" {
					require.IsType(t, &unstructured.Unstructured{}, o)
				} else {
					require.IsType(t, &metav1.PartialObjectMetadata{}, o)
				}
			}
			sort.Strings(got)
			require.Equal(t, []string{"mine/selected"}, got)
		})
	}
	require.True(t, md.Stats()[gvr].Synced)
	require.Equal(t, "protobuf", md.Stats()[gvr].AnsweredFormat, "metadata is asked for in protobuf")
}
