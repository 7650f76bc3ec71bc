package informer

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
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

// NewSharedInformer is client-go's cache.NewSharedInformer with rewatch's informer:
// NewSharedIndexInformer without indexers. The SharedInformer it returns is an *Informer.
func NewSharedInformer(lw cache.ListerWatcher, example runtime.Object, resync time.Duration) cache.SharedInformer {
	return NewSharedIndexInformer(lw, example, resync, cache.Indexers{})
}

// NewSharedIndexInformerWithOptions is client-go's cache.NewSharedIndexInformerWithOptions with
// rewatch's informer, as NewSharedIndexInformer: options' Identifier and
// InformerMetricsProvider name it for client-go's informer metrics (Options.Identifier), and
// its ObjectDescription names it in logs.
func NewSharedIndexInformerWithOptions(lw cache.ListerWatcher, example runtime.Object, options cache.SharedIndexInformerOptions) cache.SharedIndexInformer {
	return WithOptions(Options{Name: options.ObjectDescription, Identifier: options.Identifier, InformerMetricsProvider: options.InformerMetricsProvider})(lw, example, options.ResyncPeriod, options.Indexers)
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
			name = typeDescription(example)
		}
		t, err := listwatch.New(lw, name, listwatch.WithExpectedType(example))
		if err != nil {
			return failed(err, example, o)
		}
		o.Name = name
		return New(t, example, o)
	}
}

// typeDescription names the informer of example's type in logs as client-go's reflector names
// its type: the Go type, or for an *unstructured.Unstructured with a kind, its group, version
// and kind.
func typeDescription(example runtime.Object) string {
	if u, ok := example.(*unstructured.Unstructured); ok {
		if gvk := u.GroupVersionKind(); !gvk.Empty() {
			return gvk.String()
		}
	}
	return fmt.Sprintf("%T", example)
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
// are this one. It lists and watches all namespaces (NewInformerFuncIn for one), and cannot see
// the factory's WithNamespace, WithTweakListOptions or WithTransform: package informer/factory's
// SharedInformerFactory, which makes every typed informer rewatch's with the factory's options,
// is the one-line migration. The informer reads over rewatch's HTTP transport, built from the
// clientset's REST client (ClientsetConfig), and carries client-go's namespace index
// (DefaultIndexers) beside opts.Indexers.
func NewInformerFunc(example runtime.Object, opts Options) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return NewInformerFuncIn(example, metav1.NamespaceAll, nil, opts)
}

// NewInformerFuncIn is NewInformerFunc for one namespace, with the label and field selectors
// tweak sets, as a factory's WithNamespace and WithTweakListOptions do.
func NewInformerFuncIn(example runtime.Object, namespace string, tweak func(*metav1.ListOptions), opts Options) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return ForClientset(client, example, namespace, tweak, resync, opts)
	}
}

// ForClientset is the informer NewInformerFuncIn's function returns: example's resource over
// rewatch's HTTP transport configured from client (ClientsetConfig), with client-go's default
// indexers beside opts.Indexers and resync as the handlers' default resync period. A
// configuration that cannot work gives an informer whose Run logs why and returns.
func ForClientset(client kubernetes.Interface, example runtime.Object, namespace string, tweak func(*metav1.ListOptions), resync time.Duration, opts Options) *Informer {
	opts.ResyncPeriod = resync
	opts.Indexers = mergeIndexers(DefaultIndexers(), opts.Indexers)
	conn, err := ClientsetConfig(client, example, namespace, tweak)
	if err != nil {
		return failed(err, example, opts)
	}
	if opts.Format != "" {
		conn.Format = opts.Format
	}
	t, err := httpapi.New(conn)
	if err != nil {
		return failed(fmt.Errorf("informer: %w", err), example, opts)
	}
	if opts.Name == "" {
		opts.Name = t.String()
	}
	return New(t, example, opts)
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
