package bench

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rewatch/rewatch/informer"
)

// controllerRuntimeCache is a controller-runtime cache of ConfigMaps and Pods in namespace, as a
// manager builds it, whose informers newInformer builds. built is the informer newInformer
// built last, once GetInformer has asked for it: for a cache given DefaultNamespaces, as this
// one is, GetInformer hands out controller-runtime's wrapper around it. built fails when that
// informer is not rewatch's.
func controllerRuntimeCache(cfg *rest.Config, namespace string, newInformer informer.NewInformerFn) (c crcache.Cache, built func() (*informer.Informer, error), err error) {
	var last cache.SharedIndexInformer
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	c, err = crcache.New(cfg, crcache.Options{
		Mapper:            mapper,
		DefaultNamespaces: map[string]crcache.Config{namespace: {}},
		NewInformer: func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, idx cache.Indexers) cache.SharedIndexInformer {
			last = newInformer(lw, obj, resync, idx)
			return last
		},
	})
	built = func() (*informer.Informer, error) {
		inf, ok := last.(*informer.Informer)
		if !ok {
			return nil, fmt.Errorf("controller-runtime's informer is a %T, not rewatch's", last)
		}
		return inf, nil
	}
	return c, built, err
}
