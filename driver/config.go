package driver

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/transitions"
)

// Config is what Run needs. Client, Server and Resource are required; the rest have defaults.
type Config struct {
	// Client performs every request; it carries TLS and authentication (see rest.HTTPClientFor).
	// It must not have a Timeout: that would cut every watch stream.
	Client *http.Client
	// Server is the API server's base URL, e.g. https://127.0.0.1:6443.
	Server   string
	Resource Resource

	// Store receives the objects. Default: a new MemStore.
	Store Store
	// Machine decides. Default: transitions with the default configuration.
	Machine *transitions.Machine
	// Clock is what timers run on. Default: the wall clock.
	Clock clockx.Clock
	// Decoder turns bodies into objects. Default: Unstructured().
	Decoder Decoder
	// MaxFrameBytes bounds one watch frame. Default 16 MiB, apimachinery's own decoder limit.
	MaxFrameBytes int64
	// MaxListBytes bounds one LIST response body. Default 2 GiB.
	MaxListBytes int64
	// Observer sees every transition, on the driver's goroutine: it must not block.
	Observer Observer
	// Journal, when set, records every event.
	Journal *journal.Writer
	// Logger receives structured logs. Default: slog.Default(), so that a failing reflector
	// is never silent; slog.New(slog.DiscardHandler) silences it.
	Logger *slog.Logger
	// Checked validates every transition against the stateless machine built from fsm.Table.
	Checked bool
	// UserAgent is sent with every request. Default "rewatch".
	UserAgent string
}

// Defaults for Config.
const (
	DefaultMaxFrameBytes = 16 << 20
	DefaultMaxListBytes  = 2 << 30
	DefaultUserAgent     = "rewatch"
)

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
}

// Observer is told of every event the machine takes.
type Observer interface{ Observe(Transition) }

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Transition)

func (f ObserverFunc) Observe(t Transition) { f(t) }

func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("Client is nil"))
	} else if c.Client.Timeout != 0 {
		errs = append(errs, fmt.Errorf("Client has a Timeout (%v), which would cut every watch stream", c.Client.Timeout))
	}
	if u, err := url.Parse(c.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("Server %q is not an http(s) URL", c.Server))
	}
	if err := c.Resource.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("driver: invalid config: %w", err)
	}
	if c.Store == nil {
		c.Store = NewMemStore()
	}
	if c.Machine == nil {
		c.Machine = transitions.MustNew(transitions.Config{})
	}
	if c.Clock == nil {
		c.Clock = clockx.Real()
	}
	if c.Decoder == nil {
		c.Decoder = Unstructured()
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.MaxListBytes <= 0 {
		c.MaxListBytes = DefaultMaxListBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c, nil
}
