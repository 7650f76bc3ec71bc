package informer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
)

// newInformers are client-go's cache.NewInformer and rewatch's, side by side.
var newInformers = []struct {
	name string
	new  func(lw cache.ListerWatcher, h cache.ResourceEventHandler) (cache.Store, cache.Controller)
}{
	{"client-go", func(lw cache.ListerWatcher, h cache.ResourceEventHandler) (cache.Store, cache.Controller) {
		return cache.NewInformer(lw, &corev1.ConfigMap{}, 0, h)
	}},
	{"rewatch", func(lw cache.ListerWatcher, h cache.ResourceEventHandler) (cache.Store, cache.Controller) {
		return informer.NewInformer(lw, &corev1.ConfigMap{}, 0, h)
	}},
}

// An informer made by the NewInformer-style constructor hands its changes to its handler and
// fills its store; a panic in the handler comes out of the controller's Run to Run's caller
// (with utilruntime.ReallyCrash true, its default), where it can be recovered, instead of
// ending the process from another goroutine (docs/semantics.md, "Handlers").
func TestNewInformerHandlerPanicComesOutOfRun(t *testing.T) {
	reallyCrash := utilruntime.ReallyCrash
	t.Cleanup(func() { utilruntime.ReallyCrash = reallyCrash })
	utilruntime.ReallyCrash = true
	for _, impl := range newInformers {
		t.Run(impl.name, func(t *testing.T) {
			src, lw := source(t)
			src.Add(configMap("first"))
			var h names
			boom := "NewInformer boom from " + impl.name
			store, ctrl := impl.new(lw, cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				if objName(obj) == "boom" {
					panic(boom)
				}
				h.OnAdd(obj, false)
			}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			recovered := make(chan any, 1)
			go func() {
				defer func() { recovered <- recover() }()
				ctrl.RunWithContext(ctx)
			}()
			h.waitFor(t, "first")
			_, ok, err := store.GetByKey("ns/first")
			require.NoError(t, err)
			require.True(t, ok)
			require.True(t, ctrl.HasSynced())
			src.Add(configMap("boom"))
			select {
			case r := <-recovered:
				require.Equal(t, boom, r, "Run returned without the handler's panic")
			case <-time.After(10 * time.Second):
				t.Fatal("the handler's panic did not come out of Run")
			}
		})
	}
}
