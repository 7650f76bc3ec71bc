package factory

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// ResourceFactory is client-go's dynamic informer factory (dynamicinformer) or metadata
// informer factory (metadatainformer), by group, version and resource, with every informer
// rewatch's over its HTTP transport: *unstructured.Unstructured objects for the dynamic one,
// *metav1.PartialObjectMetadata (asked for in protobuf) for the metadata one. client-go's take a
// dynamic or metadata client, which hides its connection; these take the rest.Config the client
// would be made from. As client-go's, the factory's namespace applies to every resource asked
// for, so a namespace-scoped factory is for namespaced resources.
type ResourceFactory struct {
	conn          httpapi.Config
	namespace     string
	tweak         func(*metav1.ListOptions)
	defaultResync time.Duration
	opts          informer.Options

	mu           sync.Mutex
	informers    map[schema.GroupVersionResource]*informer.Informer
	started      map[schema.GroupVersionResource]bool
	wg           sync.WaitGroup
	shuttingDown bool
}

var (
	_ dynamicinformer.DynamicSharedInformerFactory = (*ResourceFactory)(nil)
	_ metadatainformer.SharedInformerFactory       = (*ResourceFactory)(nil)
)

// NewDynamicSharedInformerFactory is dynamicinformer.NewDynamicSharedInformerFactory with
// rewatch's informers, from the rest.Config of the dynamic client.
func NewDynamicSharedInformerFactory(cfg *rest.Config, defaultResync time.Duration) (*ResourceFactory, error) {
	return NewResourceFactory(cfg, false, defaultResync, metav1.NamespaceAll, nil, informer.Options{})
}

// NewFilteredDynamicSharedInformerFactory is dynamicinformer.NewFilteredDynamicSharedInformerFactory
// with rewatch's informers.
func NewFilteredDynamicSharedInformerFactory(cfg *rest.Config, defaultResync time.Duration, namespace string, tweakListOptions dynamicinformer.TweakListOptionsFunc) (*ResourceFactory, error) {
	return NewResourceFactory(cfg, false, defaultResync, namespace, tweakListOptions, informer.Options{})
}

// NewMetadataSharedInformerFactory is metadatainformer.NewSharedInformerFactory with rewatch's
// informers, from the rest.Config of the metadata client.
func NewMetadataSharedInformerFactory(cfg *rest.Config, defaultResync time.Duration) (*ResourceFactory, error) {
	return NewResourceFactory(cfg, true, defaultResync, metav1.NamespaceAll, nil, informer.Options{})
}

// NewFilteredMetadataSharedInformerFactory is metadatainformer.NewFilteredSharedInformerFactory
// with rewatch's informers.
func NewFilteredMetadataSharedInformerFactory(cfg *rest.Config, defaultResync time.Duration, namespace string, tweakListOptions metadatainformer.TweakListOptionsFunc) (*ResourceFactory, error) {
	return NewResourceFactory(cfg, true, defaultResync, namespace, tweakListOptions, informer.Options{})
}

// NewResourceFactory is a dynamic (metadataOnly false) or metadata factory with rewatch's
// options for every informer, as New's.
func NewResourceFactory(cfg *rest.Config, metadataOnly bool, defaultResync time.Duration, namespace string, tweak func(*metav1.ListOptions), opts informer.Options) (*ResourceFactory, error) {
	c, err := rewatch.FromRESTConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("factory: %w", err)
	}
	conn := c.Connection
	conn.MetadataOnly = metadataOnly
	if opts.Format != "" {
		conn.Format = opts.Format
	}
	return &ResourceFactory{
		conn: conn, namespace: namespace, tweak: tweak, defaultResync: defaultResync, opts: opts,
		informers: map[schema.GroupVersionResource]*informer.Informer{}, started: map[schema.GroupVersionResource]bool{},
	}, nil
}

// ForResource is the factory's informer for resource, made on first use.
func (f *ResourceFactory) ForResource(resource schema.GroupVersionResource) informers.GenericInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf, ok := f.informers[resource]
	if !ok {
		inf = f.newInformer(resource)
		f.informers[resource] = inf
	}
	return resourceInformer{inf: inf, gvr: resource, metadata: f.conn.MetadataOnly}
}

func (f *ResourceFactory) newInformer(gvr schema.GroupVersionResource) *informer.Informer {
	conn := f.conn
	conn.Resource = httpapi.Resource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: f.namespace}
	if f.tweak != nil {
		var o metav1.ListOptions
		f.tweak(&o)
		conn.Resource.LabelSelector, conn.Resource.FieldSelector = o.LabelSelector, o.FieldSelector
	}
	opts := f.opts
	opts.Name, opts.ResyncPeriod = "", f.defaultResync
	// client-go's default indexers, then the caller's, which may replace one of them.
	indexers := informer.DefaultIndexers()
	maps.Copy(indexers, opts.Indexers)
	opts.Indexers = indexers
	var example runtime.Object = &metav1.PartialObjectMetadata{}
	inf, err := informer.NewHTTP(conn, opts)
	if err != nil {
		// As ForClientset: the informer says why when it runs.
		return informer.Failed(err, example, opts)
	}
	return inf
}

// Start starts every informer made so far that has not been started, until stopCh is closed.
func (f *ResourceFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx is done, the informers logging to ctx's logger.
func (f *ResourceFactory) StartWithContext(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shuttingDown {
		return
	}
	for gvr, inf := range f.informers {
		if !f.started[gvr] {
			f.started[gvr] = true
			f.wg.Go(func() { inf.RunWithContext(ctx) })
		}
	}
}

// WaitForCacheSync waits until every started informer has synced, or stopCh is closed.
func (f *ResourceFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	f.mu.Lock()
	started := map[schema.GroupVersionResource]*informer.Informer{}
	for gvr, inf := range f.informers {
		if f.started[gvr] {
			started[gvr] = inf
		}
	}
	f.mu.Unlock()
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, inf := range started {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	cache.WaitFor(wait.ContextForChannel(stopCh), "", checkers...)
	out := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, inf := range started {
		out[gvr] = inf.HasSynced()
	}
	return out
}

// Shutdown makes Start do nothing from now on and waits for the started informers to stop.
func (f *ResourceFactory) Shutdown() {
	f.mu.Lock()
	f.shuttingDown = true
	f.mu.Unlock()
	f.wg.Wait()
}

// Stats is what each informer has done so far, by resource.
func (f *ResourceFactory) Stats() map[schema.GroupVersionResource]rewatch.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[schema.GroupVersionResource]rewatch.Stats, len(f.informers))
	for gvr, inf := range f.informers {
		out[gvr] = inf.Stats()
	}
	return out
}

type resourceInformer struct {
	inf      *informer.Informer
	gvr      schema.GroupVersionResource
	metadata bool
}

func (r resourceInformer) Informer() cache.SharedIndexInformer { return r.inf }

// Lister is client-go's dynamic or metadata lister over the informer's indexer.
func (r resourceInformer) Lister() cache.GenericLister {
	if r.metadata {
		return metadatalister.NewRuntimeObjectShim(metadatalister.New(r.inf.GetIndexer(), r.gvr))
	}
	return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(r.inf.GetIndexer(), r.gvr))
}
