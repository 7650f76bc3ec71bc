package e2e

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/internal/testbackend"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Widget is the e2e custom resource's Go type in two builds: the second gained the data field
// the objects carry on the server.
type widgetBefore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

type widgetAfter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string]string `json:"data,omitempty"`
}

type widgetBeforeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widgetBefore `json:"items"`
}

type widgetAfterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widgetAfter `json:"items"`
}

func (w *widgetBefore) DeepCopyObject() runtime.Object { c := *w; return &c }
func (w *widgetAfter) DeepCopyObject() runtime.Object {
	c := *w
	c.Data = make(map[string]string, len(w.Data))
	for k, v := range w.Data {
		c.Data[k] = v
	}
	return &c
}
func (l *widgetBeforeList) DeepCopyObject() runtime.Object { c := *l; return &c }
func (l *widgetAfterList) DeepCopyObject() runtime.Object  { c := *l; return &c }

// widgetScheme knows the Widget kind as one build's Go type.
func widgetScheme(obj, list runtime.Object) *runtime.Scheme {
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Group: widgets.Group, Version: widgets.Version}
	s.AddKnownTypeWithName(gv.WithKind("Widget"), obj)
	s.AddKnownTypeWithName(gv.WithKind("WidgetList"), list)
	metav1.AddToGroupVersion(s, gv)
	return s
}

// docs/semantics.md "Persisted cache", "Identity", on kube-apiserver: a build whose Go type
// gained a field does not load the snapshot the build before it wrote — whose objects lack the
// field — but lists, and no object is ever served without the field; and an informer whose
// transform is gone does not load the transformed snapshot, and no object is served as the
// transform left it.
func TestAnUpgradedBuildServesNoObjectOfTheOldShape(t *testing.T) {
	b := sharedReal(t)
	t.Run("a field added to the type", func(t *testing.T) {
		e := newEnv(t, b, widgets, 5)
		dir := filepath.Join(t.TempDir(), "cache")
		build := func(obj, list runtime.Object) func(*rewatch.Config) {
			return func(c *rewatch.Config) {
				c.Persist, c.Decoder = persist.Dir(dir), httpapi.Typed(widgetScheme(obj, list))
			}
		}
		e.start(build(&widgetBefore{}, &widgetBeforeList{}))
		e.converged()
		e.stop()
		for _, obj := range e.store.List() {
			require.IsType(t, &widgetBefore{}, obj)
		}

		e.store = driver.NewMemStore() // a new process
		e.start(build(&widgetAfter{}, &widgetAfterList{}))
		e.converged()
		require.True(t, waitFor(30*time.Second, e.r.HasSynced))
		require.Equal(t, rewatch.StartListed, e.r.Stats().Start.Way, "%s", e.r.Stats().Start)
		for _, obj := range e.store.List() {
			w, ok := obj.(*widgetAfter)
			require.True(t, ok, "an object of the old build's type: %T", obj)
			require.NotEmpty(t, w.Data, "%s served without the field the upgrade added", w.Name)
		}
		e.stop()
	})

	t.Run("a transform removed", func(t *testing.T) {
		e := newEnv(t, b, configMaps, 5)
		dir := filepath.Join(t.TempDir(), "cache")
		cs, err := kubernetes.NewForConfig(b.(*testbackend.Real).Server.RESTConfig())
		require.NoError(t, err)
		dropData := func(obj any) (any, error) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				c := cm.DeepCopy()
				c.Data = nil
				return c, nil
			}
			return obj, nil
		}
		run := func(opts informer.Options) (rewatch.Stats, []any) {
			opts.Persist, opts.Logger = persist.Dir(dir), slog.New(slog.DiscardHandler)
			inf := informer.ForClientset(cs, &corev1.ConfigMap{}, e.ns, nil, 0, opts)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { inf.RunWithContext(ctx); close(done) }()
			require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
			items := inf.GetStore().List() // as HasSynced first said, nothing was written since
			cancel()
			<-done
			return inf.Stats(), items
		}
		_, items := run(informer.Options{Transform: dropData, TransformVersion: "no-data/1"})
		for _, obj := range items {
			require.Empty(t, obj.(*corev1.ConfigMap).Data)
		}
		st, items := run(informer.Options{})
		require.Equal(t, rewatch.StartListed, st.Start.Way, "%s", st.Start)
		require.Len(t, items, 5)
		for _, obj := range items {
			require.NotEmpty(t, obj.(*corev1.ConfigMap).Data, "%s served as the removed transform left it", obj.(*corev1.ConfigMap).Name)
		}
	})
}
