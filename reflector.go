package rewatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/transitions"
)

// Reflector keeps a Store in sync with one resource of an API server.
type Reflector struct {
	cfg     Config
	machine *transitions.Machine
	store   Store
	count   *counter
	running atomic.Bool
}

// New validates cfg and fills in defaults. Nothing is contacted until Run.
func New(cfg Config) (*Reflector, error) {
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() // recorded in the journal header, so a replay uses the same jitter
	}
	m, err := transitions.New(transitions.Config{
		Backoff: cfg.Backoff, InternalErrorWindow: cfg.InternalErrorWindow, InternalErrorRewatches: cfg.InternalErrorRewatches,
		ResumeRVLifetime: cfg.ResumeRVLifetime, RetryAfterCap: cfg.RetryAfterCap, PageSize: cfg.PageSize, WatchList: cfg.WatchList, Seed: cfg.Seed,
	})
	if err != nil {
		return nil, fmt.Errorf("rewatch: %w", err)
	}
	if cfg.Client == nil || cfg.Server == "" {
		return nil, errors.New("rewatch: Client and Server are required (see FromRESTConfig)")
	}
	store := cfg.Store
	if store == nil {
		store = driver.NewMemStore()
	}
	return &Reflector{cfg: cfg, machine: m, store: store, count: newCounter(cfg.Metrics, store)}, nil
}

// Store is the store the reflector fills.
func (r *Reflector) Store() Store { return r.store }

// Stats is a snapshot of what the reflector has done so far. Safe to call from any goroutine.
func (r *Reflector) Stats() Stats { return r.count.snapshot() }

// HasSynced reports whether the initial state has reached the store.
func (r *Reflector) HasSynced() bool { return r.Stats().Synced }

// Run runs the reflector until ctx is done; then every wait and request is aborted and Run
// returns nil. A Reflector runs once.
func (r *Reflector) Run(ctx context.Context) (err error) {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("rewatch: Reflector.Run called twice")
	}
	dc := driver.Config{
		Client: r.cfg.Client, Server: r.cfg.Server, Resource: r.cfg.Resource, Store: r.store,
		Machine: r.machine, Clock: r.cfg.Clock, Decoder: r.cfg.Decoder, Logger: r.cfg.Logger, Checked: r.cfg.Checked,
		Observer: driver.ObserverFunc(func(t driver.Transition) {
			r.count.observe(t)
			if r.cfg.OnTransition != nil {
				r.cfg.OnTransition(t)
			}
			if h := r.cfg.WatchErrorHandler; h != nil && t.Event.Failure != nil && t.Cause != fsm.NoCause {
				h(ctx, t.Event.Failure.Err())
			}
		}),
	}
	if r.cfg.Journal != nil {
		started := time.Now()
		if r.cfg.Clock != nil {
			started = r.cfg.Clock.Now()
		}
		jw, err := journal.NewWriter(r.cfg.Journal, journal.Header{
			Resource: r.cfg.Resource.String(), Started: started.UTC(),
			Config: journal.RecordConfig(r.machine.Config()), FullCapture: r.cfg.JournalFullCapture,
		})
		if err != nil {
			return fmt.Errorf("rewatch: %w", err)
		}
		dc.Journal = jw
		defer func() {
			if cerr := jw.Close(); err == nil {
				err = cerr
			}
		}()
	}
	return driver.Run(ctx, dc)
}
