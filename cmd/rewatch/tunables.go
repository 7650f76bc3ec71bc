package main

import (
	"flag"
	"time"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
)

// tunables are the reflector settings both watch and demo expose as flags.
type tunables struct {
	internalErrorWindow time.Duration
	retryAfterCap       time.Duration
	backoffInitial      time.Duration
	backoffCap          time.Duration
	pageSize            int64
	watchList           bool
}

// libraryDefaults mirror the defaults rewatch.New applies, so --help shows real numbers.
var libraryDefaults = tunables{
	internalErrorWindow: 30 * time.Second,
	retryAfterCap:       5 * time.Minute,
	backoffInitial:      backoff.Reflector().Duration,
	backoffCap:          backoff.Reflector().Cap,
	pageSize:            500,
}

func (t *tunables) register(fs *flag.FlagSet, d tunables) {
	fs.DurationVar(&t.internalErrorWindow, "internal-error-window", d.internalErrorWindow,
		"relist on an InternalError only once its streak is this old (and has re-watched 3 times)")
	fs.DurationVar(&t.retryAfterCap, "retry-after-cap", d.retryAfterCap, "upper bound on a server's Retry-After")
	fs.DurationVar(&t.backoffInitial, "backoff-initial", d.backoffInitial, "first backoff delay (doubles, jitter 1.0)")
	fs.DurationVar(&t.backoffCap, "backoff-cap", d.backoffCap, "largest backoff delay before jitter")
	fs.Int64Var(&t.pageSize, "page-size", d.pageSize, "LIST page size (limit); negative lists in one request")
	fs.BoolVar(&t.watchList, "watch-list", d.watchList, "stream the initial state (sendInitialEvents), falling back to LIST")
}

func (t tunables) validate() error {
	switch {
	case t.backoffInitial <= 0:
		return usagef("-backoff-initial must be positive, got %s", t.backoffInitial)
	case t.backoffCap < t.backoffInitial:
		return usagef("-backoff-cap (%s) is below -backoff-initial (%s)", t.backoffCap, t.backoffInitial)
	case t.internalErrorWindow < 0:
		return usagef("-internal-error-window must not be negative")
	case t.retryAfterCap <= 0:
		return usagef("-retry-after-cap must be positive")
	case t.pageSize == 0:
		return usagef("-page-size must not be 0 (negative: unpaginated)")
	}
	return nil
}

func (t tunables) apply(cfg *rewatch.Config) {
	b := backoff.Reflector()
	b.Duration, b.Cap = t.backoffInitial, t.backoffCap
	// client-go's ceil(Cap/Duration): enough doublings to always reach the cap.
	b.Steps = int((t.backoffCap + t.backoffInitial - 1) / t.backoffInitial)
	cfg.Backoff = b
	cfg.InternalErrorWindow = t.internalErrorWindow
	cfg.RetryAfterCap = t.retryAfterCap
	cfg.PageSize = t.pageSize
	cfg.WatchList = t.watchList
}
