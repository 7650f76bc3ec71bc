package informer

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"

	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/persist"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
)

// persistence is the driver's Persistence for Options.Persist (docs/semantics.md, "Persisted
// cache"), or nil when it is off or cannot work over this transport, which is logged: the
// informer then runs as without it, listing at start.
func (i *Informer) persistence(log *slog.Logger) *driver.Persistence {
	if i.opts.Persist == nil {
		return nil
	}
	sn, ok := i.transport.(rewatch.Snapshotter)
	if !ok {
		log.Error("persisted cache off: it needs rewatch's HTTP transport (ForClientset, NewHTTP, ForRESTConfig, package informer/factory), not a ListerWatcher",
			"informer", i.name)
		return nil
	}
	if i.transform != nil {
		version := i.opts.TransformVersion
		if version == "" && sameFunc(i.transform, StripManagedFields) {
			version = stripManagedFieldsVersion
		}
		if version == "" {
			log.Error("persisted cache off: the informer transforms its objects, and a snapshot another transform wrote must not be loaded as this one's: set Options.TransformVersion",
				"informer", i.name, "transform", funcName(i.transform))
			return nil
		}
		sn = transformedSnapshots{Snapshotter: sn, transform: funcName(i.transform) + "@" + version}
	}
	p, err := rewatch.NewPersistence(i.opts.Persist, sn, i.opts.PersistPeriod, i.opts.Clock)
	if err != nil {
		log.Error("persisted cache off", "informer", i.name, "err", err)
		return nil
	}
	load := p.Load
	p.Load = func(ctx context.Context) (string, []any, error) {
		rv, items, err := load(ctx)
		if err == nil && rv != "" {
			// The next full state the driver applies is this snapshot's restore, unless the
			// machine drops it first (observeSync): it does not make the informer synced.
			i.mu.Lock()
			i.restorePending = true
			i.mu.Unlock()
		}
		return rv, items, err
	}
	return p
}

// fullState is called under i.mu when a full state at rv has been applied to the indexer: the
// restore of a persisted snapshot leaves HasSynced false until the machine says the cache has
// caught up with a consistent read taken at start (observeSync); any other makes it synced.
// LastSyncResourceVersion is the state's before HasSynced turns true, so that a caller of
// WaitForCacheSync reads it at once, as client-go's reflector sets it before its store can sync.
func (i *Informer) fullState(rv string) {
	i.setLastRV(rv)
	i.filled.Store(true)
	if i.restorePending {
		i.restorePending, i.catchingUp = false, true
		return
	}
	i.catchingUp = false
	i.markSynced()
}

// observeSync follows the machine's word on a restored snapshot: dropped (ahead of the
// server), the next full state is a plain one; caught up, the informer is synced. Called
// after the transition's commands ran, on the reflector's goroutine.
func (i *Informer) observeSync(t driver.Transition) {
	// Both flags are written on the reflector's goroutine only, which this is: without a
	// restored snapshot in play, a transition costs the store path no lock.
	if !i.restorePending && !i.catchingUp {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, c := range t.Commands {
		if c.Kind == fsm.CmdDropSnapshot {
			i.restorePending = false
		}
	}
	if i.catchingUp && t.Snapshot.Synced {
		i.catchingUp = false
		i.setLastRV(t.Snapshot.LastRV)
		i.markSynced()
	}
}

// transformedSnapshots names the informer's transform in its snapshots' identity: a snapshot
// holds transformed objects (docs/semantics.md, "Persisted cache", "Identity").
type transformedSnapshots struct {
	rewatch.Snapshotter
	transform string
}

func (t transformedSnapshots) SnapshotIdentity() persist.Identity {
	id := t.Snapshotter.SnapshotIdentity()
	id.Transform = t.transform
	return id
}

// stripManagedFieldsVersion is the version of this package's StripManagedFields, which needs
// no TransformVersion: change it whenever what StripManagedFields keeps changes.
const stripManagedFieldsVersion = "1"

func sameFunc(a, b cache.TransformFunc) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// funcName is the name of fn's code, as the runtime knows it.
func funcName(fn cache.TransformFunc) string {
	if f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()); f != nil {
		return f.Name()
	}
	return fmt.Sprintf("%p", fn)
}
