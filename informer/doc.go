// Package informer is rewatch as a client-go SharedIndexInformer: the interface controllers,
// SharedInformerFactory and controller-runtime's cache already use, with rewatch's reflector
// underneath (docs/semantics.md), so a 429, an InternalError or a dropped connection re-watches
// from the last resourceVersion instead of listing everything again.
//
// What a handler sees follows client-go's informer:
//
//   - the reflector's goroutine appends each change once to a processor, which fans it out to
//     every handler's own unbounded queue and goroutine, so a slow handler delays only itself,
//     and many handlers do not slow the watch;
//   - a handler's panic is handled as client-go's informer handles it (utilruntime.ReallyCrash
//     decides whether the process ends), and registrations have ShutdownChan for
//     cache.ShutDownEventHandler;
//   - the initial state arrives as adds with isInInitialList true, and the registration's
//     HasSynced turns true once its handler has been given all of them;
//   - a relist (after a 410, say) is applied to the indexer item by item: adds for new keys,
//     updates for keys whose object changed (an object at the same resourceVersion is no
//     update, docs/semantics.md "Relists"), deletes for vanished keys as
//     cache.DeletedFinalStateUnknown;
//   - a handler added after the sync gets the indexer's current contents as adds (isInInitialList
//     true);
//   - resync delivers an update (old == new) for every cached object at the handler's period.
//
// Two transports feed it: a client-go ListerWatcher (NewSharedIndexInformer has
// cache.NewSharedIndexInformer's signature, which is also controller-runtime's
// cache.Options.NewInformer; NewInformerFunc is for SharedInformerFactory.InformerFor), and
// rewatch's own HTTP transport (NewHTTP, ForClientset, ForRESTConfig, and package
// informer/factory, client-go's SharedInformerFactory with every informer rewatch's).
//
// NewInformer, NewIndexerInformer and NewInformerWithOptions are client-go's cache
// constructors of the same names: a store and a controller for one handler, whose panic comes
// out of the controller's Run.
package informer
