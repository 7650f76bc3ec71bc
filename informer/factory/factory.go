// Package factory is client-go's SharedInformerFactory with every informer rewatch's: the
// migration of a program written against client-go's factory is its constructor line.
//
//	factory := informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(ns))
//
// becomes
//
//	factory := factory.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(ns))
//
// with client-go's own options (WithNamespace, WithTweakListOptions, WithTransform,
// WithCustomResyncConfig, WithInformerName). Typed informers and listers
// (factory.Core().V1().ConfigMaps(), Apps().V1().Deployments(), …) are client-go's generated
// ones, given this factory: each asks the factory for its informer, and gets rewatch's, reading
// over rewatch's HTTP transport built from the clientset's REST client (so a relist streams
// its items and skips the unchanged ones, docs/semantics.md "Relists"), with client-go's
// namespace index and the factory's namespace, label and field selectors and transform.
//
// New takes rewatch's own informer.Options for every informer besides client-go's options; with
// Persist (a persist.Store, persist.Dir for a directory) each informer keeps its cache there, a
// snapshot of its own named by what it watches (server, resource, namespace, selectors,
// decoder), and a restart resumes each type's watch from it instead of listing everything
// (docs/semantics.md, "Persisted cache"). A type whose objects must not reach a disk (Secrets)
// belongs in a factory without Persist.
//
// ResourceFactory is the same for client-go's dynamic and metadata informer factories
// (NewFilteredDynamicSharedInformerFactory, NewFilteredMetadataSharedInformerFactory), made from
// the rest.Config their client would be made from.
package factory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
)

// Factory is a client-go informers.SharedInformerFactory whose informers are rewatch's.
type Factory struct {
	client        kubernetes.Interface
	namespace     string
	tweak         internalinterfaces.TweakListOptionsFunc
	defaultResync time.Duration
	customResync  map[reflect.Type]time.Duration
	transform     cache.TransformFunc
	informerName  *cache.InformerName
	options       []informers.SharedInformerOption
	opts          informer.Options

	mu           sync.Mutex
	informers    map[reflect.Type]cache.SharedIndexInformer
	started      map[reflect.Type]bool
	wg           sync.WaitGroup
	shuttingDown bool
}

var _ informers.SharedInformerFactory = (*Factory)(nil)

// NewSharedInformerFactory is client-go's informers.NewSharedInformerFactory, with rewatch's
// informers.
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) *Factory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory is client-go's informers.NewFilteredSharedInformerFactory,
// with rewatch's informers.
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweakListOptions internalinterfaces.TweakListOptionsFunc) *Factory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, informers.WithNamespace(namespace), informers.WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions is client-go's informers.NewSharedInformerFactoryWithOptions,
// taking client-go's own options, with rewatch's informers.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...informers.SharedInformerOption) *Factory {
	return New(client, defaultResync, informer.Options{}, options...)
}

// New is NewSharedInformerFactoryWithOptions with rewatch's options for every informer: its
// Policy, Log (default: the logger of the context the factory is started with, as
// klog.FromContext), Metrics, OnTransition, Format, Clock and extra Indexers. The factory sets
// each informer's Name, resync period and transform itself. A Journal is one stream per
// reflector: give it to informers made one by one (informer.ForClientset), not to a factory.
func New(client kubernetes.Interface, defaultResync time.Duration, opts informer.Options, options ...informers.SharedInformerOption) *Factory {
	f := &Factory{
		client: client, namespace: metav1.NamespaceAll, defaultResync: defaultResync, opts: opts, options: options,
		customResync: map[reflect.Type]time.Duration{},
		informers:    map[reflect.Type]cache.SharedIndexInformer{}, started: map[reflect.Type]bool{},
	}
	f.applyOptions(options)
	return f
}

// applyOptions reads client-go's options. They are functions of client-go's unexported factory
// type, which only client-go can build: so they are applied to one of its factories (which
// starts nothing), and the settings read back from its fields. The fields' names and types are
// checked: a client-go whose factory changed shape fails here, loudly, and the package's tests
// cover every option.
func (f *Factory) applyOptions(options []informers.SharedInformerOption) {
	if len(options) == 0 {
		return
	}
	cg := informers.NewSharedInformerFactoryWithOptions(f.client, f.defaultResync, options...)
	v := reflect.ValueOf(cg).Elem()
	read := func(name string, into any) {
		field := v.FieldByName(name)
		dst := reflect.ValueOf(into).Elem()
		if !field.IsValid() || field.Type() != dst.Type() {
			panic(fmt.Sprintf("factory: client-go's sharedInformerFactory has no field %s of type %s: this client-go is not supported", name, dst.Type()))
		}
		dst.Set(reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem())
	}
	read("namespace", &f.namespace)
	read("tweakListOptions", &f.tweak)
	read("customResync", &f.customResync)
	read("transform", &f.transform)
	read("informerName", &f.informerName)
}

// InformerName is the factory's WithInformerName, for client-go's informer metrics.
func (f *Factory) InformerName() *cache.InformerName { return f.informerName }

// Start starts every informer made so far that has not been started, until stopCh is closed.
func (f *Factory) Start(stopCh <-chan struct{}) { f.StartWithContext(wait.ContextForChannel(stopCh)) }

// StartWithContext starts every informer made so far that has not been started, until ctx is
// done; their logs go to ctx's logger (klog.FromContext) unless the factory was given one.
func (f *Factory) StartWithContext(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shuttingDown {
		return
	}
	for typ, inf := range f.informers {
		if f.started[typ] {
			continue
		}
		f.started[typ] = true
		f.wg.Go(func() { inf.RunWithContext(ctx) })
	}
}

// Shutdown makes Start do nothing from now on and waits for the started informers to stop
// (their stop channel or context must be closed, before or while it waits).
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.shuttingDown = true
	f.mu.Unlock()
	f.wg.Wait()
	f.informerName.Release()
}

// WaitForCacheSync waits until every started informer has synced, or stopCh is closed; it
// says which have synced.
func (f *Factory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext waits until every started informer has synced, or ctx is done.
func (f *Factory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	started := f.startedInformers()
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, inf := range started {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "", checkers...)
	res := cache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	for typ, inf := range started {
		res.Synced[typ] = inf.HasSynced()
		if !res.Synced[typ] {
			res.Err = context.Cause(ctx)
		}
	}
	return res
}

func (f *Factory) startedInformers() map[reflect.Type]cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[reflect.Type]cache.SharedIndexInformer{}
	for typ, inf := range f.informers {
		if f.started[typ] {
			out[typ] = inf
		}
	}
	return out
}

// InformerFor returns the factory's informer for obj's type, making it on first use, as
// client-go's factory does: the informer registered is the one newFunc returns, with the
// factory's transform. One constructor is not called: the one client-go's generated typed
// informers pass (factory.Core().V1().ConfigMaps().Informer() and every other), which would make
// client-go's informer. For it, and for ForResource, the factory makes rewatch's informer of
// the type, over the HTTP transport, in the factory's namespace (for a namespaced resource)
// with its selectors, transform, resync period and informer name, and client-go's namespace
// index. A constructor of the caller's own — a filtered informer with another namespace, a
// field selector, indexers of its own — is honoured as it is; informer.NewInformerFuncIn makes
// one that is rewatch's. For a type outside client-go's scheme, and for a clientset without
// REST clients (client-go's fake clientset), newFunc is called whatever it is. A nil newFunc
// asks for the factory's own informer (the one registered, or rewatch's).
func (f *Factory) InformerFor(obj kruntime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return f.informerFor(obj, newFunc, newFunc == nil || generatedConstructor(newFunc))
}

// generatedConstructor says whether newFunc is the constructor one of client-go's generated
// typed informers passes to its factory: its defaultInformer method, which builds client-go's
// informer with the factory's settings (and nothing of the caller's own).
func generatedConstructor(newFunc internalinterfaces.NewInformerFunc) bool {
	if newFunc == nil {
		return false
	}
	fn := runtime.FuncForPC(reflect.ValueOf(newFunc).Pointer())
	if fn == nil {
		return false
	}
	name := fn.Name()
	return strings.HasPrefix(name, "k8s.io/client-go/informers/") && strings.HasSuffix(name, ".defaultInformer-fm")
}

// informerFor is InformerFor; byDefault says newFunc is one the factory stands in for with
// rewatch's informer where it can.
func (f *Factory) informerFor(obj kruntime.Object, newFunc internalinterfaces.NewInformerFunc, byDefault bool) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	typ := reflect.TypeOf(obj)
	if inf, ok := f.informers[typ]; ok {
		return inf
	}
	resync, ok := f.customResync[typ]
	if !ok {
		resync = f.defaultResync
	}
	var inf cache.SharedIndexInformer
	if _, _, err := scheme.Scheme.ObjectKinds(obj); byDefault && err == nil {
		conn, cerr := informer.ClientsetConfig(f.client, obj, f.namespace, f.tweak)
		if !errors.Is(cerr, informer.ErrNoRESTClient) {
			// Any other error is the informer's to report when it runs.
			opts := f.opts
			opts.Name, opts.Transform = "", f.transform
			// The factory's WithInformerName names the informer for client-go's informer
			// metrics, with its resource, as client-go's typed informers take it.
			opts.Identifier = f.informerName.WithResource(schema.GroupVersionResource{Group: conn.Resource.Group, Version: conn.Resource.Version, Resource: conn.Resource.Resource})
			inf = informer.ForClientset(f.client, obj, f.namespace, f.tweak, resync, opts)
		}
	}
	if inf == nil {
		if newFunc == nil {
			panic(fmt.Sprintf("factory: no constructor for %T, which is not a type of client-go's scheme", obj))
		}
		inf = newFunc(f.client, resync)
		if f.transform != nil {
			_ = inf.SetTransform(f.transform)
		}
	}
	f.informers[typ] = inf
	return inf
}

// ForResource is the informer for a resource of client-go's scheme, by its group, version and
// resource; it is the typed informer of the same type (ForResource(configmaps) and
// Core().V1().ConfigMaps() share one, whichever is asked first, named once for client-go's
// informer metrics). Resources client-go's factory has no informer for are refused as
// client-go refuses them.
func (f *Factory) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	// client-go's own answer says whether the factory has an informer for the resource; asked
	// of a factory without options, so that it reserves no informer name (the informer it
	// makes, never started, is let go of).
	if _, err := informers.NewSharedInformerFactory(f.client, 0).ForResource(resource); err != nil {
		return nil, err
	}
	// For a clientset without REST clients, client-go's informer with the factory's options,
	// as InformerFor makes it.
	clientGos := func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		theirs, err := informers.NewSharedInformerFactoryWithOptions(f.client, f.defaultResync, f.options...).ForResource(resource)
		if err != nil {
			panic(fmt.Sprintf("factory: client-go's factory has an informer for %v, then none: %v", resource, err))
		}
		return theirs.Informer()
	}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.GroupVersion() != resource.GroupVersion() {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural != resource {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		return genericInformer{inf: f.informerFor(obj, clientGos, true), resource: resource.GroupResource()}, nil
	}
	return nil, fmt.Errorf("no informer found for %v", resource)
}

// Stats is what each of the factory's rewatch informers has done so far (informer.Informer's
// Stats), by the type of object it caches: LISTs, watches, LISTs avoided, relists, failures.
func (f *Factory) Stats() map[reflect.Type]rewatch.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[reflect.Type]rewatch.Stats, len(f.informers))
	for typ, inf := range f.informers {
		if ri, ok := inf.(*informer.Informer); ok {
			out[typ] = ri.Stats()
		}
	}
	return out
}

type genericInformer struct {
	inf      cache.SharedIndexInformer
	resource schema.GroupResource
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.inf }
func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.inf.GetIndexer(), g.resource)
}
