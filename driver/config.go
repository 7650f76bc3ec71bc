package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Config is what Run needs. Transport is required; the rest have defaults.
type Config struct {
	// Policy is the machine's configuration: how it waits, retries and pages
	// (docs/semantics.md). Run builds the machine from it.
	Policy transitions.Config
	// Transport is how requests reach the server: transport/httpapi speaks HTTP itself,
	// transport/listwatch goes through a client-go ListerWatcher.
	Transport Transport

	// Store receives the objects. Default: a new MemStore.
	Store Store
	// Clock is what timers run on. Default: the wall clock.
	Clock clockx.Clock
	// Observers see every transition, in order, on the driver's goroutine: they must not block.
	// An observer's error stops the reflector, as a store's does (a journal that cannot be
	// written is a run that can no longer be replayed).
	Observers []Observer
	// Logger receives structured logs. Default: slog.Default(), so that a failing reflector
	// is never silent; slog.New(slog.DiscardHandler) silences it.
	Logger *slog.Logger
	// Hooks answer the questions the machine asks its caller (fsm.CmdAsk): the driver calls
	// the hook on a goroutine of its own, as a request, and feeds what it returned back as an
	// fsm.EvAnswer (Hook; docs/design.md, "How to add a caller hook"). The policy says which
	// hooks the machine may ask; one it asks that is missing here answers with an error.
	Hooks map[fsm.Hook]Hook
	// Checked validates every transition against the stateless machine built from transitions.Table.
	Checked bool

	// ResyncPeriod, when positive and the Store is a Resyncer (client-go's cache.Store and
	// DeltaFIFO are), calls the store's Resync every period, on the Clock, while the store holds
	// a full state and no relist is under way, as client-go's reflector does with its resync
	// period: the period starts when a full state reaches the store (docs/semantics.md, "Stores").
	ResyncPeriod time.Duration
	// ShouldResync, when set, is asked each time a resync is due; false skips that one, as
	// client-go's Reflector.ShouldResync.
	ShouldResync func() bool

	// Persistence, when set, starts the reflector from a persisted snapshot of its store and
	// keeps one (docs/semantics.md, "Persisted cache"). The Store must be a Lister when it
	// saves.
	Persistence *Persistence
}

// Persistence is where the driver loads its store's snapshot from before the start, and
// saves it to. The functions do the I/O (package persist's Load and Save, with the
// transport's codec and identity); the machine decides what the snapshot is worth
// (transitions/rules_resume.go) and when the store may be saved (transitions.Persistable).
type Persistence struct {
	// Load returns the persisted snapshot: its resourceVersion and objects; ("", nil, nil)
	// when there is none. An error refuses it — corrupt, written for another identity, … —:
	// the driver logs it once, the start event carries it, and the start is a plain one. Nil:
	// nothing is loaded.
	Load func(ctx context.Context) (rv string, items []any, err error)
	// Save persists the store's objects, consistent at rv. The driver calls it off its loop,
	// one call at a time, every Period while the store is consistent (a tick while a save
	// runs is skipped), and once at stop. The objects are the store's own: Save must not
	// change them. Its error is logged; the reflector goes on. Nil: nothing is saved.
	Save func(ctx context.Context, rv string, items []any) error
	// Period is how often the store is saved while the reflector runs, on the Clock; 0: only
	// at stop.
	Period time.Duration
	// Dropped, when set, is told on the driver's goroutine that the machine let go of the
	// snapshot Load returned without restoring it (CmdDropSnapshot: ahead of the server, of
	// another history, unverifiable, or overtaken by a probe that held the whole collection),
	// so that a store shared with other writers may replace it (docs/semantics.md,
	// "Persisted cache", "Shared by replicas").
	Dropped func()
}

// Lister is a Store that can list its objects, with the method of client-go's cache.Store:
// what a Persistence saves. MemStore and the informer's store are Listers.
type Lister interface {
	List() []any
}

// Resyncer is a Store with client-go's Resync (cache.Store, cache.DeltaFIFO): the driver calls
// it every Config.ResyncPeriod. An error stops the reflector, as any store error does.
type Resyncer interface {
	Resync() error
}

// Transport performs the requests the machine asks for and reports what came back as events.
// It decides nothing: a 429 is an EvWatchOpenFailed carrying the Status and the Retry-After,
// whatever the machine then makes of it.
type Transport interface {
	// List performs the LIST page request c asks for and emits what came back: an EvListItem
	// for each item as it is decoded, then the EvListPage that ends the page (its
	// resourceVersion, continue token and item count); or a single EvListPage carrying the
	// page's Items; or an EvListFailed, also after some items. It returns once the page has
	// ended, emit has returned false, or ctx is done; when ctx ended first it reports nothing
	// more. The driver's event buffer bounds how far decoding runs ahead of the store.
	List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool)
	// Watch opens the watch c asks for and emits EvWatchOpenFailed, or EvWatchOpened and then
	// the stream's events, the last of which (EvWatchEnded or EvWatchError) ended it. It returns
	// once the stream has ended, emit has returned false, or ctx is done.
	Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool)
	// String names what is watched, for logs.
	String() string
}

// SkippingTransport is a Transport that can leave undecoded the items of a full state the
// store already holds at the same resourceVersion (docs/semantics.md, "Relists"). The driver
// calls these instead of List and Watch when its store is a VersionedStore holding objects,
// with the store's query; the transport decides nothing about the store, it only asks.
type SkippingTransport interface {
	Transport
	// ListHeld is List, except that an item for which held reports the item's own
	// resourceVersion may be emitted as an EvListItem with its Key and ResourceVersion and no
	// Object. Everything else — the events, their order, the failures — is List's.
	ListHeld(ctx context.Context, c fsm.Command, held HeldVersion, emit func(fsm.Event) bool)
	// WatchHeld is Watch, except that an ADDED event of a watch-list's initial state (before
	// the bookmark that ends it) for which held reports the event's own resourceVersion may be
	// emitted with its Key and ResourceVersion and no Object.
	WatchHeld(ctx context.Context, c fsm.Command, held HeldVersion, emit func(fsm.Event) bool)
}

// Transition is what an Observer sees: one event and what it did.
type Transition struct {
	Event    fsm.Event
	From, To fsm.State
	// Cause is fsm.NoCause when the event was ignored (a stale request or timer).
	Cause    fsm.Cause
	Snapshot fsm.Snapshot
	// Commands is only valid until Observe returns: the driver reuses its backing array so
	// that the hot path allocates nothing. Copy it to keep it.
	Commands []fsm.Command
	// Err is the error of the command that failed (a store that refused a Replace or an
	// object); the commands after it did not run, and the reflector stops. The Snapshot is
	// the machine's, which assumed every command would succeed: with Err set, its Synced does
	// not mean the store holds the state.
	Err error
}

// Observer is told of every event the machine takes.
type Observer interface{ Observe(Transition) error }

// SaveObserver is an Observer that also hears how each save of a persisted store went
// (docs/semantics.md, "Persisted cache"): the façade's Stats keep it.
type SaveObserver interface {
	Observer
	ObserveSave(SaveResult)
}

// SaveResult is how one save of the store went: when it ended, the resourceVersion and number
// of objects it wrote, and its error (nil: saved).
type SaveResult struct {
	At      time.Time
	RV      string
	Objects int
	Err     error
}

// ObserverFunc adapts a function that cannot fail to Observer.
type ObserverFunc func(Transition)

func (f ObserverFunc) Observe(t Transition) error { f(t); return nil }

// Validate reports everything wrong with c at once, the machine's policy included.
func (c Config) Validate() error {
	_, _, err := c.withDefaults()
	return err
}

// withDefaults checks c, builds the machine from its policy (once: the machine validates the
// policy as it is built) and fills in defaults.
func (c Config) withDefaults() (Config, *transitions.Machine, error) {
	var errs []error
	if c.Transport == nil {
		errs = append(errs, errors.New("Transport is nil"))
	}
	m, err := transitions.New(c.Policy)
	if err != nil {
		errs = append(errs, err)
	}
	for i, o := range c.Observers {
		if o == nil {
			errs = append(errs, fmt.Errorf("Observers[%d] is nil", i))
		}
	}
	if c.Store == nil {
		c.Store = NewMemStore()
	}
	if p := c.Persistence; p != nil {
		if p.Period < 0 {
			errs = append(errs, fmt.Errorf("Persistence.Period must not be negative, got %v", p.Period))
		}
		if _, ok := c.Store.(Lister); !ok && p.Save != nil {
			errs = append(errs, fmt.Errorf("Persistence saves the store, but the Store (%T) has no List() []any to take its objects from", c.Store))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, nil, fmt.Errorf("driver: invalid config: %w", err)
	}
	if c.Clock == nil {
		c.Clock = clockx.Real()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, m, nil
}
