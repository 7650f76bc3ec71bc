package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Options configure an Informer. Every field has a default.
type Options struct {
	// Policy is how the reflector waits and retries (docs/semantics.md); the zero value is
	// rewatch's defaults.
	Policy transitions.Config
	// Indexers start the indexer with these indexes.
	Indexers cache.Indexers
	// ResyncPeriod is the period of handlers added with AddEventHandler; 0 never resyncs.
	ResyncPeriod time.Duration
	// Transform is applied to every object before it is cached (see StripManagedFields).
	Transform cache.TransformFunc
	// Name names the informer in logs and in DoneChecker names. Default: the example object's type.
	Name string
	// Logger receives the reflector's logs. Default slog.Default().
	Logger *slog.Logger
	// Clock drives the reflector's waits and resyncs. Default the wall clock.
	Clock clockx.Clock
}

// minimumResyncPeriod is client-go's floor for a handler's resync period.
const minimumResyncPeriod = time.Second

// Informer is a cache.SharedIndexInformer backed by rewatch's reflector.
type Informer struct {
	name      string
	opts      Options
	transport driver.Transport
	indexer   cache.Indexer
	// placeholder is handed to client-go WatchErrorHandlers, which take the *cache.Reflector
	// that saw the error; it is never run.
	placeholder *cache.Reflector

	// mu orders every change of the indexer with the notifications it causes and with the set
	// of listeners, so that a handler added at any moment sees each object exactly once.
	mu           sync.Mutex
	listeners    map[*listener]struct{}
	transform    cache.TransformFunc
	errorHandler cache.WatchErrorHandlerWithContext
	running      bool
	wg           sync.WaitGroup
	resyncWake   chan struct{}

	started, stopped, synced atomic.Bool
	syncedCh                 chan struct{}
	constructErr             error

	// lastRV is written on every event the reflector takes; a string under a lock costs no
	// allocation there, where a pointer swap would cost one per event.
	rvMu   sync.RWMutex
	lastRV string
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// New returns an informer over transport; example is the type of object it caches (for names
// and client-go's error handlers). Use NewSharedIndexInformer, NewInformerFunc or NewHTTP to
// get a transport built for you.
func New(transport driver.Transport, example runtime.Object, opts Options) *Informer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clockx.Real()
	}
	name := opts.Name
	switch {
	case name != "":
	case transport != nil:
		name = transport.String()
	default:
		name = fmt.Sprintf("%T", example)
	}
	indexers := cache.Indexers{}
	for k, v := range opts.Indexers {
		indexers[k] = v
	}
	inf := &Informer{
		name: name, opts: opts, transport: transport, transform: opts.Transform,
		indexer:     cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers),
		placeholder: cache.NewNamedReflector(name, &cache.ListWatch{}, example, cache.NewStore(cache.MetaNamespaceKeyFunc), 0),
		listeners:   map[*listener]struct{}{}, syncedCh: make(chan struct{}), resyncWake: make(chan struct{}, 1),
	}
	if transport == nil {
		inf.constructErr = errors.New("informer: no transport")
	}
	return inf
}

// failed returns an informer whose Run reports err and returns, for constructors whose
// signature (client-go's) has no error result.
func failed(err error, example runtime.Object, opts Options) *Informer {
	inf := New(nil, example, opts)
	inf.constructErr = err
	return inf
}

// AddEventHandler adds a handler with the informer's default resync period.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithResyncPeriod(h, i.opts.ResyncPeriod)
}

// AddEventHandlerWithResyncPeriod adds a handler that is also sent every cached object as an
// update every resyncPeriod (at least a second; 0 never).
func (i *Informer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler. Once the informer has synced, the handler is first
// given the current contents as adds (isInInitialList true).
func (i *Informer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, errors.New("informer: nil handler")
	}
	if i.stopped.Load() {
		return nil, fmt.Errorf("informer %s has stopped: handler %v was not added", i.name, h)
	}
	period := i.opts.ResyncPeriod
	if o.ResyncPeriod != nil {
		period = *o.ResyncPeriod
	}
	if period > 0 && period < minimumResyncPeriod {
		period = minimumResyncPeriod
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	l := newListener(h, resyncClock{period: period, next: i.opts.Clock.Now().Add(period)})
	for _, obj := range i.indexer.List() {
		l.add(notification{kind: notifyAdd, obj: obj, initial: true})
	}
	i.listeners[l] = struct{}{}
	if i.running {
		i.startListener(l)
	}
	l.maybeSynced(i.synced.Load())
	i.wakeResync()
	return &registration{l: l, informer: i}, nil
}

// RemoveEventHandler stops a handler; what was queued for it is dropped.
func (i *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok || r.informer != i {
		return fmt.Errorf("informer %s: registration %v is not one of this informer's", i.name, handle)
	}
	i.mu.Lock()
	delete(i.listeners, r.l)
	i.mu.Unlock()
	r.l.shutdown()
	return nil
}

// startListener runs l's goroutine; i.mu is held.
func (i *Informer) startListener(l *listener) {
	i.wg.Add(1)
	go func() {
		defer i.wg.Done()
		l.run(i.synced.Load)
	}()
}

// GetStore is the indexer, as a Store.
func (i *Informer) GetStore() cache.Store { return i.indexer }

// GetIndexer is the cache: listers read from it.
func (i *Informer) GetIndexer() cache.Indexer { return i.indexer }

// AddIndexers adds indexes to the cache.
func (i *Informer) AddIndexers(indexers cache.Indexers) error { return i.indexer.AddIndexers(indexers) }

// GetController is a view of the informer as a cache.Controller; like client-go's, running it
// does nothing, since the informer runs its own reflector.
func (i *Informer) GetController() cache.Controller { return controllerView{i} }

// HasSynced is true once the initial state is in the indexer and its notifications are queued.
func (i *Informer) HasSynced() bool { return i.synced.Load() }

// HasSyncedChecker is HasSynced as a channel.
func (i *Informer) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: i.name, done: i.syncedCh}
}

// LastSyncResourceVersion is the last resourceVersion the reflector saw.
func (i *Informer) LastSyncResourceVersion() string {
	i.rvMu.RLock()
	defer i.rvMu.RUnlock()
	return i.lastRV
}

// SetWatchErrorHandler is called with every LIST or watch failure, which the reflector retries
// whatever the handler does (and logs too). It must be set before Run.
func (i *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	if handler == nil {
		return errors.New("informer: nil WatchErrorHandler")
	}
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with the informer's context. The
// error is a *apierrors.StatusError when the server answered, so apierrors' predicates work.
func (i *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	if handler == nil {
		return errors.New("informer: nil WatchErrorHandler")
	}
	return i.beforeRun(func() { i.errorHandler = handler })
}

// SetTransform sets the function applied to every object before it is cached. It must be set
// before Run.
func (i *Informer) SetTransform(handler cache.TransformFunc) error {
	return i.beforeRun(func() { i.transform = handler })
}

// beforeRun applies set unless the informer has started, as client-go allows these settings.
func (i *Informer) beforeRun(set func()) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started.Load() {
		return fmt.Errorf("informer %s has already started", i.name)
	}
	set()
	return nil
}

// IsStopped is true once Run has returned.
func (i *Informer) IsStopped() bool { return i.stopped.Load() }

// Run runs the informer until stopCh is closed.
func (i *Informer) Run(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	i.RunWithContext(ctx)
}

// RunWithContext runs the reflector and the handlers until ctx is done. An informer runs once.
func (i *Informer) RunWithContext(ctx context.Context) {
	if !i.started.CompareAndSwap(false, true) {
		i.opts.Logger.Warn("informer has already been started", "informer", i.name)
		return
	}
	defer i.stopped.Store(true)
	if i.constructErr != nil {
		i.opts.Logger.Error("informer cannot run", "informer", i.name, "err", i.constructErr)
		return
	}
	i.mu.Lock()
	i.running = true
	for l := range i.listeners {
		i.startListener(l)
	}
	i.mu.Unlock()
	resyncDone := make(chan struct{})
	go func() {
		defer close(resyncDone)
		i.resyncLoop(ctx)
	}()

	err := driver.Run(ctx, driver.Config{
		Policy: i.opts.Policy, Transport: i.transport, Store: (*store)(i), Clock: i.opts.Clock, Logger: i.opts.Logger,
		Observers: []driver.Observer{driver.ObserverFunc(func(t driver.Transition) { i.observe(ctx, t) })},
	})
	if err != nil {
		i.opts.Logger.Error("informer stopped", "informer", i.name, "err", err)
	}
	<-resyncDone
	i.mu.Lock()
	i.running = false
	for l := range i.listeners {
		l.shutdown()
	}
	i.mu.Unlock()
	i.wg.Wait()
}

func (i *Informer) observe(ctx context.Context, t driver.Transition) {
	if rv := t.Snapshot.LastRV; rv != "" {
		i.rvMu.Lock()
		i.lastRV = rv
		i.rvMu.Unlock()
	}
	if t.Event.Failure != nil && t.Cause != fsm.NoCause && i.errorHandler != nil {
		i.errorHandler(ctx, i.placeholder, t.Event.Failure.Err())
	}
}

// distribute queues n for every listener; i.mu is held.
func (i *Informer) distribute(n notification) {
	for l := range i.listeners {
		l.add(n)
	}
}

// markSynced is called once the initial state's Replace has returned.
func (i *Informer) markSynced() {
	if i.synced.CompareAndSwap(false, true) {
		close(i.syncedCh)
		for l := range i.listeners {
			l.maybeSynced(true)
		}
		i.wakeResync() // periods that passed before the sync start now
	}
}

type controllerView struct{ i *Informer }

func (c controllerView) RunWithContext(context.Context)      {}
func (c controllerView) Run(<-chan struct{})                 {}
func (c controllerView) HasSynced() bool                     { return c.i.HasSynced() }
func (c controllerView) HasSyncedChecker() cache.DoneChecker { return c.i.HasSyncedChecker() }
func (c controllerView) LastSyncResourceVersion() string     { return c.i.LastSyncResourceVersion() }
