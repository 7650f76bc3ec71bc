package rewatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Reflector keeps a Store in sync with one resource of an API server.
type Reflector struct {
	cfg       Config
	transport *httpapi.Transport
	driver    driver.Config
	machine   *transitions.Machine
	count     *counter
	running   atomic.Bool
}

// New validates all of cfg — the connection, the resource, the policy — and fills in defaults,
// so that a configuration that cannot work fails here with every problem named, not at Run.
// Nothing is contacted until Run.
func New(cfg Config) (*Reflector, error) {
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() // recorded in the journal header, so a replay uses the same jitter
	}
	if cfg.Connection.Clock == nil {
		cfg.Connection.Clock = cfg.Clock
	}
	var errs []error
	transport, err := httpapi.New(cfg.Connection)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Policy.CredentialsRefresh = cfg.RefreshCredentials != nil
	m, err := transitions.New(cfg.Policy)
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.Store == nil {
		cfg.Store = driver.NewMemStore()
	}
	var persistence *driver.Persistence
	if cfg.Persist != nil && transport != nil {
		var err error
		if persistence, err = persistenceOf(cfg, transport); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rewatch: %w", err)
	}
	r := &Reflector{cfg: cfg, transport: transport, machine: m, count: newCounter(cfg.Metrics, cfg.Store)}
	r.driver = driver.Config{
		Policy: m.Config(), Transport: transport, Store: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger, Checked: cfg.Checked,
		ResyncPeriod: cfg.ResyncPeriod, ShouldResync: cfg.ShouldResync,
		Hooks:       map[fsm.Hook]driver.Hook{fsm.HookRefreshCredentials: driver.Acting(cfg.RefreshCredentials)},
		Persistence: persistence,
	}
	return r, nil
}

// persistenceOf is the driver's Persistence for cfg.Persist (docs/semantics.md, "Persisted
// cache").
func persistenceOf(cfg Config, transport *httpapi.Transport) (*driver.Persistence, error) {
	if _, ok := cfg.Store.(driver.Lister); !ok {
		return nil, fmt.Errorf("Persist: the Store (%T) has no List() []any to take its objects from", cfg.Store)
	}
	p, err := NewPersistence(cfg.Persist, transport, cfg.PersistPeriod, cfg.Clock)
	if err != nil {
		return nil, fmt.Errorf("Persist: %w", err)
	}
	return p, nil
}

// Snapshotter is what a transport needs for a persisted cache: a codec for the objects it
// decodes and the identity of what it watches. rewatch's HTTP transport (*httpapi.Transport) has
// both; a client-go ListerWatcher hides its decoding, so a reflector over one keeps no snapshot.
type Snapshotter interface {
	SnapshotCodec() (persist.Codec, error)
	SnapshotIdentity() persist.Identity
}

// NewPersistence is a driver.Persistence that keeps the snapshot of what transport watches (its
// SnapshotIdentity) in st, in its decoder's codec (SnapshotCodec), saved every period as
// Config.PersistPeriod reads it (0: DefaultPersistPeriod; negative: only at stop) with the time
// of clock (nil: the wall clock): what New builds for Config.Persist,
// for a reflector the façade does not run (package informer's). A snapshot that is not there
// is no error; one persist.Load refuses is the driver's to log (docs/semantics.md, "Persisted
// cache"). It fails when the transport's decoder has no snapshot codec.
func NewPersistence(st persist.Store, transport Snapshotter, period time.Duration, clock clockx.Clock) (*driver.Persistence, error) {
	codec, err := transport.SnapshotCodec()
	if err != nil {
		return nil, err
	}
	id := transport.SnapshotIdentity()
	switch {
	case period == 0:
		period = DefaultPersistPeriod
	case period < 0:
		period = 0 // the driver's "only at stop"
	}
	// The snapshot loaded at start, and whether the machine disowned it: a shared store
	// (persist.OrderedStore) may replace it even when it is ahead (docs/semantics.md,
	// "Persisted cache", "Shared by replicas"). Load and Dropped run on the driver's
	// goroutine, Save off it.
	var loadedRV string
	var disowned atomic.Pointer[string]
	return &driver.Persistence{
		Period: period,
		Dropped: func() {
			if loadedRV != "" {
				rv := loadedRV
				disowned.Store(&rv)
			}
		},
		Load: func(ctx context.Context) (string, []any, error) {
			snap, err := persist.Load(ctx, st, id, codec)
			if errors.Is(err, persist.ErrNotFound) {
				return "", nil, nil
			}
			var refused *persist.Refused
			if errors.As(err, &refused) {
				// Stats.Start and the driver's log line say "snapshot refused" themselves:
				// the reason is what they add.
				return "", nil, refusedReason{refused}
			}
			if err != nil {
				return "", nil, err
			}
			loadedRV = snap.ResourceVersion
			return snap.ResourceVersion, snap.Items, nil
		},
		Save: func(ctx context.Context, rv string, items []any) error {
			now := time.Now()
			if clock != nil {
				now = clock.Now()
			}
			info := persist.SnapshotInfo{ResourceVersion: rv, Written: now}
			if d := disowned.Load(); d != nil {
				info.Disowned = *d
			}
			_, err := persist.SaveSnapshot(ctx, st, id, codec, info, items)
			return err
		},
	}, nil
}

// refusedReason is a persist.Refused told by its reason alone, unwrapping to it.
type refusedReason struct{ r *persist.Refused }

func (e refusedReason) Error() string { return e.r.Reason }
func (e refusedReason) Unwrap() error { return e.r }

// Store is the store the reflector fills.
func (r *Reflector) Store() Store { return r.cfg.Store }

// Stats is a snapshot of what the reflector has done so far. Safe to call from any goroutine.
func (r *Reflector) Stats() Stats {
	st := r.count.snapshot()
	st.WireFormat, st.AnsweredFormat = r.transport.WireFormat(), r.transport.AnsweredFormat()
	return st
}

// HasSynced reports whether the initial state has reached the store.
func (r *Reflector) HasSynced() bool { return r.Stats().Synced }

// Run runs the reflector until ctx is done; then every wait and request is aborted and Run
// returns nil. It returns an error only when the reflector cannot go on: the store or the
// journal failed. A Reflector runs once.
func (r *Reflector) Run(ctx context.Context) (err error) {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("rewatch: Reflector.Run called twice")
	}
	dc := r.driver
	if r.cfg.Journal != nil {
		started := time.Now()
		if r.cfg.Clock != nil {
			started = r.cfg.Clock.Now()
		}
		jw, err := journal.NewWriter(r.cfg.Journal, journal.Header{
			Resource: r.cfg.Resource.String(), Wire: r.transport.WireFormat(), Started: started.UTC(),
			Config: journal.RecordConfig(r.machine.Config()), FullCapture: r.cfg.JournalFullCapture,
		})
		if err != nil {
			return fmt.Errorf("rewatch: %w", err)
		}
		dc.Observers = append(dc.Observers, jw)
		defer func() {
			if cerr := jw.Close(); err == nil {
				err = cerr
			}
		}()
	}
	dc.Observers = append(dc.Observers, reflectorObserver{r: r, ctx: ctx})
	return driver.Run(ctx, dc)
}

// reflectorObserver folds the reflector's transitions and saves into its Stats and hands the
// transitions to the caller's callbacks.
type reflectorObserver struct {
	r   *Reflector
	ctx context.Context
}

func (o reflectorObserver) Observe(t driver.Transition) error {
	o.r.count.observe(t)
	if o.r.cfg.OnTransition != nil {
		o.r.cfg.OnTransition(t)
	}
	if h := o.r.cfg.WatchErrorHandler; h != nil && t.Event.Failure != nil && transitions.Reported(t.Cause) {
		h(o.ctx, t.Event.Failure.Err())
	}
	return nil
}

func (o reflectorObserver) ObserveSave(r driver.SaveResult) { o.r.count.observeSave(r) }
