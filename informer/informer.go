package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/httpapi"
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
	// Log receives the informer's logs. Default: the logger of the context given to
	// RunWithContext (klog.FromContext: klog's process-wide logger unless the caller, a
	// controller say, put its own there), so that the informer's lines join the program's.
	// A handler's panic goes, as in client-go, to its HandlerOptions.Logger, else to klog's
	// process-wide logger (klog.Background), whatever Log says.
	Log *logr.Logger
	// Logger is Log for a program logging through slog; Log wins when both are set.
	Logger *slog.Logger
	// Clock drives the reflector's waits and resyncs. Default the wall clock.
	Clock clockx.Clock
	// Format is the wire format of an informer whose HTTP transport is built from a clientset
	// (ForClientset, NewInformerFunc, package informer/factory) or from a rest.Config
	// (ForRESTConfig). Default httpapi.FormatAuto:
	// protobuf for built-in types, JSON when the server answers so.
	Format httpapi.Format

	// Identifier and InformerMetricsProvider are client-go's SharedIndexInformerOptions'
	// (informer/factory sets Identifier from the factory's informers.WithInformerName, as
	// client-go's typed informers do): with an identifier its InformerName reserved
	// (InformerName.WithResource), the informer reports client-go's informer metrics for it
	// through the provider, by default the one set with cache.SetInformerMetricsProvider — the
	// store's resourceVersion (client-go's indexer keeps it, from every object put, every list
	// and every bookmark) and the processing latency (how long each change takes to reach the
	// indexer and the handlers' queue, what client-go's FIFO times for each change it pops).
	// There is no queued-items gauge: rewatch's reflector applies each change as it reads it,
	// with no FIFO between them (docs/semantics.md, "Visibility").
	Identifier              cache.InformerNameAndResource
	InformerMetricsProvider cache.InformerMetricsProvider

	// Metrics receives the reflector's counters and durations, as the façade's Config.Metrics
	// (see the metrics package for Prometheus); Objects is not reported, Stats().Objects is.
	Metrics rewatch.Metrics
	// OnTransition sees every event the machine takes, on the reflector's goroutine.
	OnTransition func(driver.Transition)
	// Journal, when set, receives the event journal as JSON lines (docs/journal.md); a write
	// error stops the informer. JournalFullCapture records whole objects, not only keys.
	Journal            io.Writer
	JournalFullCapture bool

	// Persist, when set, keeps a snapshot of the cache there — the objects as the transport
	// decodes them (after Transform, which must take what it returns), their resourceVersion
	// and what was watched — saved every PersistPeriod and when the informer stops; a restart
	// fills the cache from it and resumes the watch instead of listing everything
	// (docs/semantics.md, "Persisted cache"). The snapshot holds the objects, Secrets
	// included: persist.Dir keeps it owner-only, persist.Sealed encrypts and authenticates it
	// with keys of the controller's, and persist/objstore (a module of its own) keeps it,
	// sealed, in an S3 bucket that a Deployment's replicas share, so that a rollout's new
	// pods resume too. nil (the default) keeps none. It needs rewatch's HTTP transport (every
	// constructor but those over a client-go ListerWatcher).
	Persist persist.Store
	// PersistPeriod is how often the snapshot is saved while the informer runs, besides once
	// when it stops: default rewatch.DefaultPersistPeriod; negative: only when it stops.
	PersistPeriod time.Duration
	// TransformVersion names what the transform does, for the persisted cache: the snapshot
	// holds transformed objects, so one written by another transform (or another version of
	// this one) must not be loaded as this one's. A snapshot names the transform's function
	// and this version; change the version whenever what the transform keeps changes. With a
	// transform (Transform, SetTransform, a factory's WithTransform) and Persist set, it is
	// required (but for this package's StripManagedFields, which has its own): without it the
	// informer runs without a persisted cache and says so at error level (docs/semantics.md,
	// "Persisted cache", "Identity").
	TransformVersion string
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

	// mu orders every change of the indexer with the sequence number of the notification it
	// causes, and with the snapshot a handler added at that moment is given, so that the
	// handler sees each change exactly once. The store path holds it for the indexer's change
	// and an append to the processor's queue; the fan-out to handlers is the processor's. A
	// handler being added holds it for reading only, so that handlers added at once neither
	// wait for one another nor queue ahead of the store path, which waits only for those under
	// way (a writer waiting keeps new readers out).
	mu           sync.RWMutex
	processor    *processor
	transform    cache.TransformFunc
	errorHandler cache.WatchErrorHandlerWithContext
	resyncWake   chan struct{}
	// resyncDeadline is when the resync loop next wakes by itself, in Unix nanoseconds on the
	// informer's clock; 0 while it scans the handlers, or sleeps until it is woken.
	resyncDeadline atomic.Int64

	started, stopped, synced atomic.Bool
	// filled is true once the indexer holds a full state, listed or restored from a persisted
	// snapshot: a relist may then skip what it holds unchanged.
	filled atomic.Bool
	// restorePending (a snapshot was loaded: the next full state is its restore) and
	// catchingUp (the indexer holds the restored snapshot, not yet synced) are guarded by mu
	// (persist.go).
	restorePending, catchingUp bool
	// syncedAt is the sequence number of the last notification of the initial state.
	syncedAt     atomic.Uint64
	syncedCh     chan struct{}
	constructErr error

	// prepare, when set, completes each decoded object before the transform (ForRESTConfig
	// sets a metadata-only object's kind and clears a typed one's, as controller-runtime's
	// ListerWatcher hands them out).
	prepare func(obj any)

	// lastRV is written on every event the reflector takes; a string under a lock costs no
	// allocation there, where a pointer swap would cost one per event.
	rvMu   sync.RWMutex
	lastRV string

	// runNote, when set, is said once the informer runs, to the logger it runs with: how it
	// was built, where that is worth knowing (ForRESTConfig's informer over the ListerWatcher).
	runNote string

	stats *rewatch.StatsObserver
	// metered is whether client-go's informer metrics are reported (Options.Identifier);
	// processing times each change the store path applies.
	metered    bool
	processing cache.HistogramMetric

	// panicsOutOfRun makes a handler's panic come out of Run (NewInformerWithOptions); crash
	// is the first such panic, and cancelRun stops the informer for it.
	panicsOutOfRun bool
	crashMu        sync.Mutex
	crashing       bool
	crash          any
	cancelRun      context.CancelFunc
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// New returns an informer over transport; example is the type of object it caches (for names
// and client-go's error handlers). Use NewSharedIndexInformer, NewInformerFunc or NewHTTP to
// get a transport built for you.
func New(transport driver.Transport, example runtime.Object, opts Options) *Informer {
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
	indexer := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers, cache.WithStoreMetrics(opts.Identifier, opts.InformerMetricsProvider))
	inf := &Informer{
		name: name, opts: opts, transport: transport, transform: opts.Transform,
		indexer:     indexer,
		placeholder: cache.NewNamedReflector(name, &cache.ListWatch{}, example, cache.NewStore(cache.MetaNamespaceKeyFunc), 0),
		processor:   newProcessor(), syncedCh: make(chan struct{}), resyncWake: make(chan struct{}, 1),
		stats: rewatch.NewStatsObserver(opts.Metrics, nil, transport),
	}
	if transport == nil {
		inf.constructErr = errors.New("informer: no transport")
	}
	if opts.Identifier.Reserved() {
		inf.metered = true
		if p := metricsProviderOf(indexer, opts.InformerMetricsProvider); p != nil {
			inf.processing = p.NewProcessingLatencyMetric(opts.Identifier)
		}
	}
	return inf
}

// metricsProviderOf is p, else the provider client-go's indexer resolved for a nil one: the
// process-wide provider of cache.SetInformerMetricsProvider, which client-go does not export
// otherwise. The indexer keeps it in an unexported field, read by reflection and checked by
// name and type; nil when this client-go keeps it elsewhere (informer_test fails then).
func metricsProviderOf(indexer cache.Indexer, p cache.InformerMetricsProvider) cache.InformerMetricsProvider {
	if p != nil {
		return p
	}
	v := reflect.ValueOf(indexer)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("metrics")
	if !f.IsValid() || f.Type() != reflect.TypeFor[cache.InformerMetricsProvider]() {
		return nil
	}
	got, _ := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(cache.InformerMetricsProvider)
	return got
}

// processingStart begins timing one change of the store path for client-go's processing
// latency, which processed ends: defer i.processed(i.processingStart()). Without metrics it
// costs a nil check.
func (i *Informer) processingStart() time.Time {
	if i.processing == nil {
		return time.Time{}
	}
	return i.opts.Clock.Now()
}

func (i *Informer) processed(start time.Time) {
	if i.processing != nil {
		i.processing.Observe(i.opts.Clock.Now().Sub(start).Seconds())
	}
}

// Failed returns an informer whose Run logs err and returns at once, for constructors whose
// signature (client-go's) has no error result.
func Failed(err error, example runtime.Object, opts Options) *Informer {
	return failed(err, example, opts)
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
// given the current contents as adds (isInInitialList true). A panic in a handler call is
// handled as client-go's informer handles it (docs/semantics.md, "Handlers"), logged with
// o.Logger, else with klog's process-wide logger ("Observed a panic", as client-go logs it).
func (i *Informer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, errors.New("informer: nil handler")
	}
	period := i.opts.ResyncPeriod
	if o.ResyncPeriod != nil {
		period = *o.ResyncPeriod
	}
	if period > 0 && period < minimumResyncPeriod {
		period = minimumResyncPeriod
	}
	// As client-go's informer: without a handler's own logger, a panic goes to klog's
	// process-wide logger, read when the handler is added.
	logger := klog.Background()
	if o.Logger != nil {
		logger = *o.Logger
	}
	resync := resyncClock{period: period, next: i.opts.Clock.Now().Add(period)}
	// The reflector waits while the indexer is copied (pointers, not objects) and the
	// listener registered; the replay itself is the listener's, on its own goroutine. Reading
	// under mu is enough: the indexer and the sequence number change under it only for writing,
	// and the processor takes joining listeners under a lock of its own (join).
	i.mu.RLock()
	if i.stopped.Load() {
		i.mu.RUnlock()
		// client-go's wording, which callers match on.
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", h)
	}
	l := newListener(i, h, logger, resync, i.processor.seq+1, i.indexer.List())
	i.processor.join(l)
	i.mu.RUnlock()
	i.processor.settle()
	l.maybeSynced()
	if period > 0 {
		i.wakeResyncBefore(resync.next)
	}
	return &registration{l: l, informer: i}, nil
}

// RemoveEventHandler stops a handler: what was queued for it is dropped, and a call under way
// completes (cache.ShutDownEventHandler waits for it). As client-go's, it returns nil for a
// registration that is no longer, or never was, one of this informer's, and an error only for
// a handle that is not a registration of a rewatch informer.
func (i *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok {
		return fmt.Errorf("informer %s: %T is not a registration of a rewatch informer", i.name, handle)
	}
	if r.informer == i {
		i.processor.remove(r.l)
	}
	return nil
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
// An informer that cannot run refuses them with the reason it cannot: the caller that sets
// them as it builds the informer (controller-runtime's cache sets the transform and the
// watch-error handler of each informer it makes) hears of it there, not only in the log once
// it runs.
func (i *Informer) beforeRun(set func()) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.constructErr != nil {
		return i.constructErr
	}
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
	log := i.logger(ctx)
	if !i.started.CompareAndSwap(false, true) {
		log.Warn("informer has already been started", "informer", i.name)
		return
	}
	if i.panicsOutOfRun {
		defer i.raiseCrash() // once every handler has stopped
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		i.crashMu.Lock()
		i.cancelRun = cancel
		i.crashMu.Unlock()
	}
	defer i.shutdown()
	if i.constructErr != nil {
		log.Error("informer cannot run", "informer", i.name, "err", i.constructErr)
		return
	}
	if i.runNote != "" {
		log.Info(i.runNote, "informer", i.name)
	}
	observers := []driver.Observer{driver.ObserverFunc(i.observeSync), i.stats, driver.ObserverFunc(func(t driver.Transition) { i.observe(ctx, t) })}
	if i.opts.Journal != nil {
		jw, err := i.journal()
		if err != nil {
			log.Error("informer cannot run", "informer", i.name, "err", err)
			return
		}
		observers = append(observers, jw)
		defer func() {
			if err := jw.Close(); err != nil {
				log.Error("informer's journal", "informer", i.name, "err", err)
			}
		}()
	}
	if i.opts.OnTransition != nil {
		observers = append(observers, driver.ObserverFunc(i.opts.OnTransition))
	}
	i.processor.startAll()
	var loops sync.WaitGroup
	loops.Go(func() { i.resyncLoop(ctx) })
	loops.Go(func() { i.processor.run(ctx, &i.mu) })

	err := driver.Run(ctx, driver.Config{
		Policy: i.opts.Policy, Transport: i.transport, Store: (*store)(i), Clock: i.opts.Clock, Logger: log,
		Observers: observers, Persistence: i.persistence(log),
	})
	if err != nil {
		log.Error("informer stopped", "informer", i.name, "err", err)
	}
	loops.Wait()
}

// logger is where the informer's own lines go (Options.Log): the driver logs through slog, so a
// logr.Logger is bridged to it.
func (i *Informer) logger(ctx context.Context) *slog.Logger {
	switch {
	case i.opts.Log != nil:
		return slog.New(logr.ToSlogHandler(*i.opts.Log))
	case i.opts.Logger != nil:
		return i.opts.Logger
	}
	return slog.New(logr.ToSlogHandler(klog.FromContext(ctx)))
}

// journal is the journal writer for Options.Journal, its header as the façade writes it.
func (i *Informer) journal() (*journal.Writer, error) {
	m, err := transitions.New(i.opts.Policy)
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	h := journal.Header{Resource: i.name, Started: i.opts.Clock.Now().UTC(), Config: journal.RecordConfig(m.Config()), FullCapture: i.opts.JournalFullCapture}
	if w, ok := i.transport.(interface{ WireFormat() string }); ok {
		h.Wire = w.WireFormat()
	}
	jw, err := journal.NewWriter(i.opts.Journal, h)
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	return jw, nil
}

// Stats is what the reflector has done so far, as the façade's Reflector.Stats: LISTs,
// watches, retries by cause, LISTs avoided, relists, the last failures. Synced is HasSynced:
// the observer sees a transition after the store has taken its command, so its own would lag
// behind the indexer. Safe from any goroutine.
func (i *Informer) Stats() rewatch.Stats {
	st := i.stats.Stats()
	st.Synced = i.HasSynced()
	st.Objects = len(i.indexer.ListKeys())
	return st
}

// shutdown stops every handler once the informer has stopped; handlers added later are refused.
func (i *Informer) shutdown() {
	i.mu.Lock()
	i.stopped.Store(true) // under mu: a handler is either added before, and stopped below, or refused
	i.mu.Unlock()
	i.processor.stopAll()
}

func (i *Informer) observe(ctx context.Context, t driver.Transition) {
	i.setLastRV(t.Snapshot.LastRV)
	if t.Event.Failure != nil && transitions.Reported(t.Cause) && i.errorHandler != nil {
		i.errorHandler(ctx, i.placeholder, t.Event.Failure.Err())
	}
}

// setLastRV records the last resourceVersion the reflector saw ("" changes nothing).
func (i *Informer) setLastRV(rv string) {
	if rv == "" {
		return
	}
	i.rvMu.Lock()
	i.lastRV = rv
	i.rvMu.Unlock()
}

// distribute queues n for every listener: one append, whatever their number, which the
// processor fans out on its own goroutine; i.mu is held.
func (i *Informer) distribute(n notification) { i.processor.enqueue(n) }

// markSynced is called once the initial state's Replace has returned, or a restored snapshot
// has caught up (observeSync); i.mu is held.
func (i *Informer) markSynced() {
	if i.synced.Load() {
		return
	}
	i.syncedAt.Store(i.processor.seq)
	i.synced.Store(true)
	close(i.syncedCh)
	i.processor.each(func(l *listener) { l.maybeSynced() })
	i.wakeResync() // periods that passed before the sync start now
}

type controllerView struct{ i *Informer }

func (c controllerView) RunWithContext(context.Context)      {}
func (c controllerView) Run(<-chan struct{})                 {}
func (c controllerView) HasSynced() bool                     { return c.i.HasSynced() }
func (c controllerView) HasSyncedChecker() cache.DoneChecker { return c.i.HasSyncedChecker() }
func (c controllerView) LastSyncResourceVersion() string     { return c.i.LastSyncResourceVersion() }
