package informer

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// client-go's TestGetTypeDescriptionFromObject, as rewatch's own: an informer over a
// ListerWatcher is named in logs as client-go's reflector names its type — the Go type, or, for
// an unstructured example with a kind, its group, version and kind (docs/semantics.md, "Stores").
func TestClientGoGetTypeDescriptionFromObject(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "mygroup", Version: "v1", Kind: "MyKind"}
	withGVK := &unstructured.Unstructured{}
	withGVK.SetGroupVersionKind(gvk)
	for name, tc := range map[string]struct {
		example runtime.Object
		want    string
	}{
		"Normal type":                   {&corev1.Pod{}, "*v1.Pod"},
		"Unstructured type without GVK": {&unstructured.Unstructured{}, "*unstructured.Unstructured"},
		"Unstructured type with GVK":    {withGVK, gvk.String()},
	} {
		t.Run(name, func(t *testing.T) {
			inf := NewSharedIndexInformer(&cache.ListWatch{}, tc.example, 0, nil).(*Informer)
			require.Equal(t, tc.want, inf.name)
		})
	}
}
