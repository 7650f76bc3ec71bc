package rewatch

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Resource says what to list and watch.
type Resource = httpapi.Resource

// Format is the wire format the reflector asks the server for (httpapi.Format): FormatAuto, the
// default, asks for what the decoder reads best first — protobuf for built-in types with a typed
// or metadata-only decoder — and reads whatever the server answers.
type Format = httpapi.Format

// Wire formats.
const (
	FormatAuto     = httpapi.FormatAuto
	FormatJSON     = httpapi.FormatJSON
	FormatProtobuf = httpapi.FormatProtobuf
	FormatCBOR     = httpapi.FormatCBOR
)

// Store is what the reflector keeps in sync; client-go's cache.Store satisfies it.
type Store = driver.Store

// Connection is where the API server is and what to watch on it: Client, Server and Resource
// (required; FromRESTConfig fills the first two), the Decoder and wire Format, the User-Agent
// and the size limits on LIST bodies and watch frames. It is the HTTP transport's own configuration.
type Connection = httpapi.Config

// Policy is how the reflector waits, retries, pages and times its watches (docs/semantics.md).
// It is the machine's own configuration, and the journal header records it as it is.
type Policy = transitions.Config

// RetryAfterExact, as Policy.RetryAfterSpread, waits every Retry-After exactly, even one that
// repeats (docs/semantics.md, "a repeated Retry-After"); the default spreads a repeated one.
const RetryAfterExact = transitions.RetryAfterExact

// Config configures a Reflector. Its two embedded parts are the transport's and the machine's
// configurations themselves, so every tunable of either is set here (cfg.Resource,
// cfg.Backoff, cfg.QuickWatch, cfg.MaxFrameBytes, …); the rest is what only the façade adds.
// Every field but Client, Server and Resource has a default.
type Config struct {
	Connection
	Policy

	// Store defaults to a driver.MemStore.
	Store Store
	// Clock is what every wait runs on; default the wall clock.
	Clock clockx.Clock
	// Logger receives the reflector's logs: every failure with the server's message, refusals
	// (401/403/404, other 4xx) at error level (docs/semantics.md, "Levels"). Default slog.Default(); pass
	// slog.New(slog.DiscardHandler) for silence.
	Logger *slog.Logger
	// WatchErrorHandler, like client-go's SharedInformer.SetWatchErrorHandlerWithContext, is
	// called with every LIST or WATCH failure the reflector answers (which is also logged) but a
	// watch-list it falls back from to a LIST (transitions.Reported), on the reflector's
	// goroutine: it must return quickly. err is a *apierrors.StatusError when the
	// server answered, so apierrors.IsNotFound, IsTooManyRequests and the like work on it, and
	// a *fsm.TransportError otherwise. The reflector retries whatever the handler does.
	WatchErrorHandler func(ctx context.Context, err error)
	// RefreshCredentials, when set, is asked to refresh the credentials the Client's requests
	// carry when a watch is refused with 401 after the server had accepted them (a rotated or
	// short-lived token): at most once a minute, and the watch is re-opened at once when it
	// returns (docs/semantics.md, "credentials expired"). It runs on a goroutine of its own;
	// its context ends when the reflector stops. Its error is logged and the watch re-opened.
	RefreshCredentials func(ctx context.Context) error
	// Journal, when set, receives the event journal as JSON lines (docs/journal.md). A write
	// error stops the reflector: Run returns it.
	Journal io.Writer
	// JournalFullCapture records whole objects in the journal, not only their keys.
	JournalFullCapture bool
	// OnTransition sees every event the machine takes, on the reflector's goroutine.
	OnTransition func(driver.Transition)
	// Metrics receives counters and durations (see the metrics package for Prometheus).
	Metrics Metrics
	// Checked validates every transition against the stateless machine built from the table.
	Checked bool
	// ResyncPeriod and ShouldResync are client-go's reflector resync: every ResyncPeriod (on
	// Clock) while the store holds a full state and no relist is under way, the Store's Resync
	// is called (a cache.Store's or a DeltaFIFO's), unless ShouldResync returns false
	// (docs/semantics.md, "Stores"). 0 never resyncs.
	ResyncPeriod time.Duration
	ShouldResync func() bool

	// Persist, when set, keeps a snapshot of the store there — persist.Dir(path) for a
	// directory, persist.Sealed around a store to seal its snapshots, persist/objstore for an
	// S3 bucket replicas share — and starts from it: the store is restored and the watch resumed from the
	// snapshot's resourceVersion instead of a LIST of everything (docs/semantics.md,
	// "Persisted cache"). The snapshot holds the objects as the decoder's codec encodes them
	// (Secrets too, if this reflector watches them): leave it nil for a resource whose objects
	// must not reach the disk. A snapshot of another server, resource, namespace, selector or
	// decoder is never loaded. It needs a Store with List() []any (MemStore has it) and a
	// Decoder with a snapshot codec (the built-in ones; httpapi.ObjectEncoder for one's own).
	Persist persist.Store
	// PersistPeriod is how often the store is saved while the reflector runs, besides once at
	// stop: default DefaultPersistPeriod; negative: only at stop.
	PersistPeriod time.Duration
}

// DefaultPersistPeriod is how often a persisted store is saved while the reflector runs. A
// controller that is killed (no save at stop) restarts from a snapshot at most this old plus
// its time down; kube-apiserver keeps about 75 s of history, so with a minute the watch of a
// controller back within seconds still resumes, and an older one relists decoding only what
// changed. A save is skipped when nothing changed since the last.
const DefaultPersistPeriod = time.Minute
