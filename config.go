package rewatch

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
)

// Resource says what to list and watch.
type Resource = driver.Resource

// Store is what the reflector keeps in sync; client-go's cache.Store satisfies it.
type Store = driver.Store

// Config configures a Reflector. Client, Server and Resource are required (FromRESTConfig
// fills the first two); every other field has a default.
type Config struct {
	Client   *http.Client
	Server   string
	Resource Resource

	// Store defaults to a driver.MemStore.
	Store Store
	// Decoder defaults to unstructured objects; driver.Typed(scheme) gives typed ones.
	Decoder driver.Decoder

	// Backoff is the wait policy without Retry-After; default client-go's reflector backoff. It
	// starts over on watch progress (docs/semantics.md, "Waiting").
	Backoff backoff.Policy
	// InternalErrorWindow and InternalErrorRewatches bound re-watching on InternalErrors: the
	// reflector relists once a streak is that old (default 30 s) and has re-watched that often
	// (default 3).
	InternalErrorWindow    time.Duration
	InternalErrorRewatches int
	// ResumeRVLifetime caps a re-watch's wait while its resume RV is young (default 60 s).
	ResumeRVLifetime time.Duration
	// RetryAfterCap caps a server's Retry-After (default 5 min).
	RetryAfterCap time.Duration
	// PageSize is the LIST limit (default 500; negative: unpaginated).
	PageSize int64
	// WatchList streams the initial state (sendInitialEvents) with fallback to LIST.
	WatchList bool
	// Seed makes jitter reproducible; 0 draws one at New.
	Seed uint64

	Clock clockx.Clock
	// Logger receives the reflector's logs: every failure with the server's message, refusals
	// (401/403/404, other 4xx) at warning level. Default slog.Default(); pass
	// slog.New(slog.DiscardHandler) for silence.
	Logger *slog.Logger
	// WatchErrorHandler, like client-go's SharedInformer.SetWatchErrorHandlerWithContext, is
	// called with every LIST or WATCH failure the reflector answers (which is also logged), on the
	// reflector's goroutine: it must return quickly. err is a *apierrors.StatusError when the
	// server answered, so apierrors.IsNotFound, IsTooManyRequests and the like work on it, and
	// a *fsm.TransportError otherwise. The reflector retries whatever the handler does.
	WatchErrorHandler func(ctx context.Context, err error)
	// Journal, when set, receives the event journal as JSON lines (docs/journal.md).
	Journal io.Writer
	// JournalFullCapture records whole objects in the journal, not only their keys.
	JournalFullCapture bool
	// OnTransition sees every event the machine takes, on the reflector's goroutine.
	OnTransition func(driver.Transition)
	// Metrics receives counters and durations (see the metrics package for Prometheus).
	Metrics Metrics
	// Checked validates every transition against the stateless machine built from the table.
	Checked bool
}
