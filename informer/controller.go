package informer

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// NewInformerWithOptions has the signature of client-go's cache.NewInformerWithOptions: a store
// (an indexer, with o.Indexers) kept by rewatch's reflector over o.ListerWatcher, and a
// controller that runs it and hands every change to o.Handler, with o.ResyncPeriod (at least a
// second) and o.Transform. As with client-go's controller, a panic in o.Handler comes out of
// the controller's Run to its caller once the informer has stopped (with utilruntime.ReallyCrash
// true, its default; otherwise it is logged and the notification dropped), rather than ending
// the process from a handler goroutine as a shared informer's handler does (docs/semantics.md,
// "Handlers").
func NewInformerWithOptions(o cache.InformerOptions) (cache.Store, cache.Controller) {
	return newController(o)
}

// NewInformer is client-go's cache.NewInformer over rewatch's reflector (NewInformerWithOptions).
func NewInformer(lw cache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h cache.ResourceEventHandler) (cache.Store, cache.Controller) {
	return newController(cache.InformerOptions{ListerWatcher: lw, ObjectType: objType, ResyncPeriod: resyncPeriod, Handler: h})
}

// NewIndexerInformer is client-go's cache.NewIndexerInformer over rewatch's reflector
// (NewInformerWithOptions).
func NewIndexerInformer(lw cache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h cache.ResourceEventHandler, indexers cache.Indexers) (cache.Indexer, cache.Controller) {
	return newController(cache.InformerOptions{ListerWatcher: lw, ObjectType: objType, ResyncPeriod: resyncPeriod, Handler: h, Indexers: indexers})
}

// NewTransformingInformer is client-go's cache.NewTransformingInformer over rewatch's reflector
// (NewInformerWithOptions with transformer as the transform).
func NewTransformingInformer(lw cache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h cache.ResourceEventHandler, transformer cache.TransformFunc) (cache.Store, cache.Controller) {
	return newController(cache.InformerOptions{ListerWatcher: lw, ObjectType: objType, ResyncPeriod: resyncPeriod, Handler: h, Transform: transformer})
}

// NewTransformingIndexerInformer is client-go's cache.NewTransformingIndexerInformer over
// rewatch's reflector (NewInformerWithOptions with indexers and transformer).
func NewTransformingIndexerInformer(lw cache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h cache.ResourceEventHandler, indexers cache.Indexers, transformer cache.TransformFunc) (cache.Indexer, cache.Controller) {
	return newController(cache.InformerOptions{ListerWatcher: lw, ObjectType: objType, ResyncPeriod: resyncPeriod, Handler: h, Indexers: indexers, Transform: transformer})
}

func newController(o cache.InformerOptions) (cache.Indexer, cache.Controller) {
	opts := Options{Transform: o.Transform, Log: o.Logger}
	inf := WithOptions(opts)(o.ListerWatcher, o.ObjectType, o.ResyncPeriod, o.Indexers).(*Informer)
	inf.panicsOutOfRun = true
	if o.Handler != nil {
		// Before Run, on an informer that has not stopped: it cannot fail.
		_, _ = inf.AddEventHandlerWithResyncPeriod(o.Handler, o.ResyncPeriod)
	}
	return inf.indexer, controller{inf}
}

// controller runs an informer as client-go's cache.Controller runs its reflector and handler.
type controller struct{ i *Informer }

func (c controller) RunWithContext(ctx context.Context)  { c.i.RunWithContext(ctx) }
func (c controller) Run(stopCh <-chan struct{})          { c.i.Run(stopCh) }
func (c controller) HasSynced() bool                     { return c.i.HasSynced() }
func (c controller) HasSyncedChecker() cache.DoneChecker { return c.i.HasSyncedChecker() }
func (c controller) LastSyncResourceVersion() string     { return c.i.LastSyncResourceVersion() }

// crashed is called, on a listener's goroutine, with a handler's panic that is to come out of
// Run: the first is kept, and the informer stops.
func (i *Informer) crashed(r any) {
	i.crashMu.Lock()
	defer i.crashMu.Unlock()
	if !i.crashing {
		i.crashing, i.crash = true, r
	}
	if i.cancelRun != nil {
		i.cancelRun()
	}
}

// raiseCrash raises, on Run's goroutine, the handler panic that stopped the informer.
func (i *Informer) raiseCrash() {
	i.crashMu.Lock()
	crashing, r := i.crashing, i.crash
	i.crashMu.Unlock()
	if crashing {
		panic(r)
	}
}
