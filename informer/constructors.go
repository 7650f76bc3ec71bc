package informer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/rewatch/rewatch/transport/httpapi"
	"github.com/rewatch/rewatch/transport/listwatch"
)

// NewSharedIndexInformer has the signature of client-go's cache.NewSharedIndexInformer and of
// controller-runtime's cache.Options.NewInformer, with rewatch's defaults:
//
//	cache.Options{NewInformer: informer.NewSharedIndexInformer}
//
// Full states stream through lw's Watch as watch-lists where client-go's reflector would
// stream them (see WatchListFor), and come from its List otherwise or where the server refuses.
func NewSharedIndexInformer(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return WithOptions(Options{})(lw, example, resync, indexers)
}

// WithOptions is NewSharedIndexInformer with opts; resync and indexers passed to the returned
// function override opts'.
func WithOptions(opts Options) func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer {
	return func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		o := opts
		o.ResyncPeriod = resync
		o.Indexers = mergeIndexers(opts.Indexers, indexers)
		o.Policy.WatchList = o.Policy.WatchList || WatchListFor(lw)
		name := o.Name
		if name == "" {
			name = fmt.Sprintf("%T", example)
		}
		t, err := listwatch.New(lw, name, listwatch.WithExpectedType(example))
		if err != nil {
			return failed(err, example, o)
		}
		o.Name = name
		return New(t, example, o)
	}
}

// WatchListFor says whether an informer over a client-go ListerWatcher (or over a clientset)
// takes its full states — the initial one and every relist — as a watch-list stream
// (sendInitialEvents=true, docs/semantics.md "Streaming list (WatchList)") rather than a LIST,
// which client-go hands over whole: the rule of client-go's own reflector, so that any
// ListerWatcher client-go's informer takes works the same here. It is true while client-go's
// WatchListClient feature gate is on (its default; KUBE_FEATURE_WatchListClient=false turns
// it off) and client does not say it lacks watch-list semantics (a fake clientset, or a
// ListerWatcher wrapped by cache.ToListWatcherWithWatchListSemantics for such a client). A
// server that refuses a watch-list is listed from then on. Options.Policy.WatchList true
// streams whatever this says.
func WatchListFor(client any) bool {
	return clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) &&
		!watchlist.DoesClientNotSupportWatchListSemantics(client)
}

func mergeIndexers(a, b cache.Indexers) cache.Indexers {
	out := cache.Indexers{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// NewInformerFunc returns the function client-go's SharedInformerFactory.InformerFor takes, for
// a built-in type of client-go's scheme:
//
//	factory.InformerFor(&corev1.ConfigMap{}, informer.NewInformerFunc(&corev1.ConfigMap{}, informer.Options{}))
//
// After that, the factory's own informer and lister for the type (factory.Core().V1().ConfigMaps())
// are this one. It lists and watches all namespaces (NewInformerFuncIn for one). The REST
// client's own retries are off, so that every 429 and 5xx reaches the reflector, which
// honours Retry-After itself (docs/semantics.md) and records it in its logs and stats.
func NewInformerFunc(example runtime.Object, opts Options) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return NewInformerFuncIn(example, metav1.NamespaceAll, nil, opts)
}

// NewInformerFuncIn is NewInformerFunc for one namespace, with tweak applied to every request's
// options (label and field selectors), as a factory's WithNamespace and WithTweakListOptions do.
func NewInformerFuncIn(example runtime.Object, namespace string, tweak func(*metav1.ListOptions), opts Options) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		o := opts
		o.ResyncPeriod = resync
		o.Policy.WatchList = o.Policy.WatchList || WatchListFor(client)
		lw, gvr, err := clientsetListWatch(client, example, namespace)
		if err != nil {
			return failed(err, example, o)
		}
		if o.Name == "" {
			o.Name = gvr.Resource + "." + gvr.Version
			if gvr.Group != "" {
				o.Name += "." + gvr.Group
			}
		}
		topts := []listwatch.Option{listwatch.WithExpectedType(example)}
		if tweak != nil {
			topts = append(topts, listwatch.WithTweakListOptions(tweak))
		}
		t, err := listwatch.New(lw, o.Name, topts...)
		if err != nil {
			return failed(err, example, o)
		}
		return New(t, example, o)
	}
}

// clientsetListWatch finds example's resource in client-go's scheme and the clientset's REST
// client for its group version (the typed client is named after both, CoreV1, AppsV1, …).
func clientsetListWatch(client kubernetes.Interface, example runtime.Object, namespace string) (cache.ListerWatcher, schema.GroupVersionResource, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(example)
	if err != nil {
		return nil, schema.GroupVersionResource{}, fmt.Errorf("informer: %T is not a type of client-go's scheme: %w", example, err)
	}
	gvk := gvks[0]
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	method := groupGoName(gvk.Group) + strings.ToUpper(gvk.Version[:1]) + gvk.Version[1:]
	m := reflect.ValueOf(client).MethodByName(method)
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return nil, gvr, fmt.Errorf("informer: the clientset has no %s() for %s", method, gvk.GroupVersion())
	}
	gc, ok := m.Call(nil)[0].Interface().(interface{ RESTClient() rest.Interface })
	if !ok {
		return nil, gvr, fmt.Errorf("informer: %s() of the clientset has no RESTClient", method)
	}
	rc := gc.RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() {
		return nil, gvr, fmt.Errorf("informer: %s().RESTClient() is nil (a fake clientset?); use NewSharedIndexInformer with a ListerWatcher", method)
	}
	req := func(o *metav1.ListOptions) *rest.Request {
		return rc.Get().Namespace(namespace).Resource(gvr.Resource).VersionedParams(o, scheme.ParameterCodec).MaxRetries(0)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return req(&o).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return req(&o).Watch(ctx)
		},
	}, gvr, nil
}

// groupGoName is client-gen's name for an API group: its first label, capitalised ("" is Core).
func groupGoName(group string) string {
	if group == "" {
		return "Core"
	}
	first, _, _ := strings.Cut(group, ".")
	return strings.ToUpper(first[:1]) + first[1:]
}

// NewHTTP returns an informer over rewatch's own HTTP transport, for a resource given by
// Connection (from rewatch.FromRESTConfig, or httpapi.Config directly). With conn.MetadataOnly
// it caches *metav1.PartialObjectMetadata.
func NewHTTP(conn httpapi.Config, opts Options) (*Informer, error) {
	t, err := httpapi.New(conn)
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	var example runtime.Object = &metav1.PartialObjectMetadata{}
	if opts.Name == "" {
		opts.Name = t.String()
	}
	return New(t, example, opts), nil
}

// StripManagedFields is a transform that drops metadata.managedFields before an object is
// cached: they are often the largest part of an object, and controllers rarely read them.
func StripManagedFields(obj any) (any, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // not an object with metadata: leave it as it is
	}
	m.SetManagedFields(nil)
	return obj, nil
}
