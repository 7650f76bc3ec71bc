package informer

import (
	"context"
	"errors"
	"log/slog"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/persist"
)

// snapshotter is what a transport needs for a persisted cache: a codec for the objects it
// decodes and the identity of what it watches. rewatch's HTTP transport has both; a client-go
// ListerWatcher hides its decoding, so an informer over one keeps no snapshot.
type snapshotter interface {
	SnapshotCodec() (persist.Codec, error)
	SnapshotIdentity() persist.Identity
}

// persistence is the driver's Persistence for Options.Persist (docs/semantics.md, "Persisted
// cache"), or nil when it is off or cannot work over this transport, which is logged: the
// informer then runs as without it, listing at start.
func (i *Informer) persistence(log *slog.Logger) *driver.Persistence {
	if i.opts.Persist == nil {
		return nil
	}
	sn, ok := i.transport.(snapshotter)
	if !ok {
		log.Error("persisted cache off: it needs rewatch's HTTP transport (ForClientset, NewHTTP, ForRESTConfig, package informer/factory), not a ListerWatcher",
			"informer", i.name)
		return nil
	}
	codec, err := sn.SnapshotCodec()
	if err != nil {
		log.Error("persisted cache off", "informer", i.name, "err", err)
		return nil
	}
	id, st := sn.SnapshotIdentity(), i.opts.Persist
	period := i.opts.PersistPeriod
	switch {
	case period == 0:
		period = rewatch.DefaultPersistPeriod
	case period < 0:
		period = 0 // the driver's "only at stop"
	}
	return &driver.Persistence{
		Load: func(ctx context.Context) (string, []any, error) {
			snap, err := persist.Load(ctx, st, id, codec)
			if errors.Is(err, persist.ErrNotFound) {
				return "", nil, nil
			}
			if err != nil {
				return "", nil, err
			}
			// The next full state the driver applies is this snapshot's restore, unless the
			// machine drops it first (observe): it does not make the informer synced.
			i.mu.Lock()
			i.restorePending = true
			i.mu.Unlock()
			return snap.ResourceVersion, snap.Items, nil
		},
		Save: func(ctx context.Context, rv string, items []any) error {
			_, err := persist.Save(ctx, st, id, codec, rv, items, i.opts.Clock.Now())
			return err
		},
		Period: period,
	}
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
