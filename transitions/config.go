package transitions

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
)

// Config holds the reflector's tunables. The zero value of every field means "the default".
// It is the one definition of the policy: the façade embeds it, the driver builds its machine
// from it and the journal header records it as it is (the json tags are the journal's).
type Config struct {
	// Backoff is the wait before a retry when the server gave no Retry-After. Any policy works;
	// the default is client-go's reflector backoff (800 ms, ×2, jitter 1.0, cap 30 s). It returns
	// to its first step on watch progress; whatever it returns, no wait is shorter than MinWait.
	Backoff backoff.Policy `json:"-"`
	// InternalErrorWindow and InternalErrorRewatches bound a streak of InternalErrors: the
	// reflector re-watches until the streak is at least InternalErrorWindow old (default 30 s)
	// and has re-opened the watch at least InternalErrorRewatches times (default 3), then
	// relists. Both bounds must be met, so neither long waits nor a burst of fast errors can
	// keep a streak from its relist, or force one early.
	InternalErrorWindow    time.Duration `json:"internalErrorWindow" help:"relist on an InternalError only once its streak is this old (and has re-watched internal-error-rewatches times)"`
	InternalErrorRewatches int           `json:"internalErrorRewatches" help:"relist on an InternalError only once its streak has re-opened the watch this often (and is internal-error-window old)"`
	// ResumeRVLifetime is how long after the resume RV last advanced a re-watch can count on
	// the server still having it (the apiserver's watch cache keeps at least 75 s). While the RV
	// is younger, a re-watch waits at most max(1 s, ResumeRVLifetime − age); once it is older,
	// the backoff alone decides. Default 60 s.
	ResumeRVLifetime time.Duration `json:"resumeRVLifetime" help:"how long the server keeps a resume RV; a re-watch never waits past it"`
	// RetryAfterCap caps a server's Retry-After, so that a hostile or broken value cannot park
	// the reflector. Default 5 minutes; at least MinWait (100 ms), the floor of every wait.
	RetryAfterCap time.Duration `json:"retryAfterCap" help:"upper bound on a server's Retry-After"`
	// RetryAfterSpread spreads a repeated Retry-After: when the server answers with a
	// Retry-After again before it has accepted any request since the last one, the wait is
	// drawn from [Retry-After, Retry-After × (1 + RetryAfterSpread)) instead of being exactly
	// the Retry-After. The first Retry-After after an accepted request is always waited
	// exactly, and no wait is shorter than the server asked. API Priority and Fairness gives
	// every request a priority level rejects the same value (1 s, doubling to 32 s while it keeps
	// rejecting), so a fleet it rejects together that waits exactly comes back together, and is
	// rejected together again, round after round (docs/semantics.md, "a repeated Retry-After";
	// bench/RESULTS.md, "Fleets"). Default 1 (0 means the default); at most 1; a negative value
	// waits every Retry-After exactly.
	RetryAfterSpread float64 `json:"retryAfterSpread" help:"spread a repeated Retry-After over [RA, RA×(1+spread)); at most 1, negative waits exactly"`
	// PageSize is the LIST limit. Default 500; negative disables pagination.
	PageSize int64 `json:"pageSize" help:"LIST page size (limit); negative lists in one request"`
	// PageRelists makes a relist at a known RV ask for pages too. By default it asks for the
	// whole list in one response, which the watch cache serves, until the server has paged a
	// list (docs/semantics.md, "Requests").
	PageRelists bool `json:"pageRelists,omitempty" help:"page relists at a known RV too, not only once the server has paged"`
	// QuickWatch: a watch that ends within this time having delivered nothing counts as a quick
	// end. Default 1 s, like client-go.
	QuickWatch time.Duration `json:"quickWatch" help:"a watch that ends this soon having delivered nothing is a quick end"`
	// QuickEndsBeforeBackoff: this many consecutive quick ends back off instead of re-watching
	// at once. Default 2.
	QuickEndsBeforeBackoff int `json:"quickEndsBeforeBackoff" help:"consecutive quick ends that back off instead of re-watching at once"`
	// WatchSilence: a watch that has delivered nothing — no event, no bookmark, not even its
	// response headers — for this long is ended and re-opened from the last RV, with no LIST.
	// With bookmarks requested the apiserver sends one every minute — but a fresh watch's first
	// may come only after two (measured on kube-apiserver v1.37: first gaps of 60 and 120 s, then
	// 60 s) — so a watch silent for much longer is dead: behind a load balancer that lost its
	// backend, or a stalled proxy, it would otherwise stay open until its timeout (5–10 minutes)
	// while the store goes stale. The transport notices the silence within an eighth of the bound
	// past it. Default 150 s (a silent watch is replaced within 169 s; 100 s would end half of
	// the healthy quiet watches before their first bookmark); at least 1 s; negative turns it off
	// (docs/semantics.md, "silent watch").
	WatchSilence time.Duration `json:"watchSilence,omitempty" help:"end and re-open from the last RV a watch that has delivered nothing for this long; negative: never"`
	// ActiveWatchSilence and ActiveWatchSilenceFloor bound the silence of a watch of a
	// resource whose cadence is known (the longest recent gap between frames, measured
	// across re-watches): the machine ends it once it has been silent — since its last
	// frame, or since it was asked for — for four times that cadence, but never sooner than
	// the floor and never later than ActiveWatchSilence, and re-watches from the last RV on a
	// fresh connection. A resource whose gaps reach half the bookmark interval (30 s) is
	// quiet: only WatchSilence bounds its watches. The apiserver keeps a resource's events for
	// at least 75 s, so a stream that was delivering and falls silent is replaced while its RV
	// can still be resumed; behind a load balancer the fresh connection reaches another
	// kube-apiserver when the one it held was cut off. Each further re-watch of the same
	// silence triples the bound, up to WatchSilence. Defaults 45 s and 5 s; both at least 1 s and at most
	// WatchSilence (larger values are cut to it); a negative ActiveWatchSilence turns the
	// rule off, and so does a negative WatchSilence (docs/semantics.md, "silent watch").
	ActiveWatchSilence      time.Duration `json:"activeWatchSilence,omitempty" help:"longest silence allowed a watch that was delivering events; negative: only watch-silence"`
	ActiveWatchSilenceFloor time.Duration `json:"activeWatchSilenceFloor,omitempty" help:"shortest silence that ends a watch that was delivering events"`
	// WatchTimeoutMin and WatchTimeoutMax bound the randomised timeoutSeconds of each watch
	// (client-go: [5 min, 10 min)).
	WatchTimeoutMin time.Duration `json:"watchTimeoutMin" help:"shortest timeoutSeconds asked of a watch"`
	WatchTimeoutMax time.Duration `json:"watchTimeoutMax" help:"longest timeoutSeconds asked of a watch (exclusive)"`
	// MaxRelists caps relists: when this many began in the last 10 minutes, the next one waits
	// until the oldest of them is 10 minutes old (docs/semantics.md, "Relists"). 0 (the
	// default): no cap; at most fsm.RelistsKept.
	MaxRelists int `json:"maxRelists,omitempty" help:"relists allowed in any 10 minutes; a further relist waits (0: no cap)"`
	// WatchList opens the initial state as a watch-list stream (sendInitialEvents=true) and falls
	// back to LIST when the server does not support it.
	WatchList bool `json:"watchList,omitempty" help:"stream the initial state (sendInitialEvents), falling back to LIST"`
	// SingleServer says the server is one kube-apiserver, not several behind a load balancer (a
	// single control-plane node: kind, k3s, minikube). A resume answered 410 by a watch cache
	// younger than the resume RV then relists at once, instead of first re-watching on a fresh
	// connection, which can only reach the same young cache there and costs one WATCH per
	// reflector each time the server restarts; and a watch that cannot reach the server
	// (refused, a gateway's 502) relists after the wait rather than resume from a restarted
	// server's new cache, which would answer 410. Off by default: the client cannot tell one
	// server from several, and behind a balancer that re-watch is what avoids the relist
	// (docs/semantics.md, "behind a load balancer", "One kube-apiserver").
	SingleServer bool `json:"singleServer,omitempty" help:"the server is one kube-apiserver (no balancer over several): a 410 from a young watch cache relists without a fresh-connection re-watch, and a server that could not be reached (refused, 502) is relisted from, not resumed from"`
	// CredentialsRefresh: the caller refreshes credentials when asked (fsm.HookRefreshCredentials;
	// the façade's RefreshCredentials). A watch refused with 401 after the server had accepted
	// them asks it, at most once a minute, and re-watches at once (docs/semantics.md,
	// "credentials expired").
	CredentialsRefresh bool `json:"credentialsRefresh,omitempty" cli:"-" help:"the caller refreshes credentials when a watch is refused with 401"`
	// Seed seeds the jitter source. Runs with the same seed and events make the same decisions.
	Seed uint64 `json:"seed" cli:"-"`
}

// Defaults of Config.
const (
	DefaultInternalErrorWindow    = 30 * time.Second
	DefaultInternalErrorRewatches = 3
	DefaultResumeRVLifetime       = 60 * time.Second
	DefaultRetryAfterCap          = 5 * time.Minute
	DefaultRetryAfterSpread       = 1.0
	// RetryAfterExact, as RetryAfterSpread, waits every Retry-After exactly, repeated or not.
	RetryAfterExact                = -1.0
	DefaultPageSize                = 500
	DefaultQuickWatch              = time.Second
	DefaultQuickEndsBeforeBackoff  = 2
	DefaultWatchTimeoutMin         = 5 * time.Minute
	DefaultWatchTimeoutMax         = 10 * time.Minute
	DefaultWatchSilence            = 150 * time.Second
	DefaultActiveWatchSilence      = 45 * time.Second
	DefaultActiveWatchSilenceFloor = 5 * time.Second
	// MinWatchSilence is the shortest silence bound: a bound under a second would end watches
	// between two frames of a busy stream's ordinary jitter.
	MinWatchSilence = time.Second
	// MinRetryAfter: a Retry-After below one second (in practice "0") is no usable hint; the
	// backoff decides instead, so that "Retry-After: 0" forever cannot become a hot loop.
	MinRetryAfter = time.Second
	// MinWait is the floor of every wait, so that a policy returning 0 cannot turn a server that
	// keeps failing into back-to-back requests.
	MinWait = 100 * time.Millisecond
	// MinResumeWait is the shortest wait the resume-RV age guard cuts a backoff down to.
	MinResumeWait = time.Second
)

// withDefaults fills zero fields and rejects values that cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.Backoff == nil {
		c.Backoff = backoff.Reflector()
	}
	setDefault(&c.InternalErrorWindow, DefaultInternalErrorWindow)
	setDefault(&c.ResumeRVLifetime, DefaultResumeRVLifetime)
	setDefault(&c.RetryAfterCap, DefaultRetryAfterCap)
	setDefault(&c.QuickWatch, DefaultQuickWatch)
	setDefault(&c.WatchTimeoutMin, DefaultWatchTimeoutMin)
	setDefault(&c.WatchTimeoutMax, DefaultWatchTimeoutMax)
	setDefault(&c.WatchSilence, DefaultWatchSilence)
	setDefault(&c.ActiveWatchSilence, DefaultActiveWatchSilence)
	setDefault(&c.ActiveWatchSilenceFloor, DefaultActiveWatchSilenceFloor)
	if c.RetryAfterSpread == 0 {
		c.RetryAfterSpread = DefaultRetryAfterSpread
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.QuickEndsBeforeBackoff == 0 {
		c.QuickEndsBeforeBackoff = DefaultQuickEndsBeforeBackoff
	}
	if c.InternalErrorRewatches == 0 {
		c.InternalErrorRewatches = DefaultInternalErrorRewatches
	}
	var errs []error
	if v := reflect.ValueOf(c.Backoff); isNilPointer(v) {
		errs = append(errs, fmt.Errorf("Backoff is a nil %s; leave it unset for the default", v.Type()))
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"InternalErrorWindow", c.InternalErrorWindow}, {"ResumeRVLifetime", c.ResumeRVLifetime},
		{"RetryAfterCap", c.RetryAfterCap},
		{"QuickWatch", c.QuickWatch},
	} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", f.name, f.d))
		}
	}
	if c.WatchTimeoutMax < c.WatchTimeoutMin || c.WatchTimeoutMin < time.Second {
		errs = append(errs, fmt.Errorf("watch timeout range [%v, %v) is empty or under a second", c.WatchTimeoutMin, c.WatchTimeoutMax))
	}
	if !(c.RetryAfterSpread <= 1) { // NaN fails it too
		errs = append(errs, fmt.Errorf("RetryAfterSpread must be at most 1 (negative: exact waits), got %v", c.RetryAfterSpread))
	}
	if c.RetryAfterCap > 0 && c.RetryAfterCap < MinWait {
		// A smaller cap would turn every Retry-After into a wait under the floor no other wait
		// goes below (docs/semantics.md, "Floor").
		errs = append(errs, fmt.Errorf("RetryAfterCap must be at least %v (the floor of every wait), got %v", MinWait, c.RetryAfterCap))
	}
	if c.WatchSilence > 0 && c.WatchSilence < MinWatchSilence {
		errs = append(errs, fmt.Errorf("WatchSilence must be at least %v (negative: off), got %v", MinWatchSilence, c.WatchSilence))
	}
	if c.ActiveWatchSilence > 0 && c.ActiveWatchSilence < MinWatchSilence {
		errs = append(errs, fmt.Errorf("ActiveWatchSilence must be at least %v (negative: off), got %v", MinWatchSilence, c.ActiveWatchSilence))
	}
	if c.ActiveWatchSilenceFloor < MinWatchSilence {
		errs = append(errs, fmt.Errorf("ActiveWatchSilenceFloor must be at least %v, got %v", MinWatchSilence, c.ActiveWatchSilenceFloor))
	}
	if c.InternalErrorRewatches < 0 {
		errs = append(errs, fmt.Errorf("InternalErrorRewatches must not be negative, got %d", c.InternalErrorRewatches))
	}
	if c.MaxRelists < 0 || c.MaxRelists > fsm.RelistsKept {
		errs = append(errs, fmt.Errorf("MaxRelists must be between 0 (no cap) and %d, got %d", fsm.RelistsKept, c.MaxRelists))
	}
	if c.QuickEndsBeforeBackoff < 1 {
		errs = append(errs, fmt.Errorf("QuickEndsBeforeBackoff must be at least 1, got %d", c.QuickEndsBeforeBackoff))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("transitions: invalid config: %w", err)
	}
	return c, nil
}

// isNilPointer catches a policy that is an interface holding a nil pointer (or map, func…),
// which would panic at the first wait rather than here.
func isNilPointer(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}
