package transitions

import (
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// The rules of the watch: its frames, and every way it fails or ends (docs/semantics.md, the
// failure rows). A failure is read by its class (classify) and the streaks the snapshot keeps;
// a rule that leads to Relisting, at once or after a wait, begins a relist, which the relist
// rules may hold back (relist.go).

// watchFailure are the events that end or refuse a watch with a failure.
var watchFailure = []fsm.EventKind{fsm.EvWatchOpenFailed, fsm.EvWatchError, fsm.EvWatchEnded}

// The streaks the watch's rules count, and the moments that end them (fsm.Streak): declared
// here, beside the rules that count and read them, and reset nowhere else.
var (
	// quickEnds: watches in a row that ended quickly without moving the RV (read by
	// stream-ended and stream-ended-quickly); over once a watch moves the RV, or one ends
	// after the quick-end threshold (watchFailed).
	quickEnds = streak{func(s *fsm.Snapshot) *fsm.Streak { return &s.Watch.QuickEnds }, fsm.AtProgress}
	// expiredStreak: 410s since the last watch event (expired, expired-again).
	expiredStreak = streak{func(s *fsm.Snapshot) *fsm.Streak { return &s.Watch.ExpiredStreak }, fsm.AtFrame}
	// freshTried: a young watch cache's 410 was re-watched on a fresh connection since the
	// last watch event (expired-young-cache).
	freshTried = streak{func(s *fsm.Snapshot) *fsm.Streak { return &s.Watch.FreshTried }, fsm.AtFrame}
	// rejected: refusals (a watch's, or a LIST's: listRefusalDelay) since a watch last opened
	// or a listing completed (watch-rejected-once, watch-rejected, list-rejected).
	rejected = streak{func(s *fsm.Snapshot) *fsm.Streak { return &s.Watch.Rejected }, fsm.AtOpen | fsm.AtListing}
	// internalErrors: the InternalErrors since the last progress (internal-error-in-window,
	// internal-error-past-window). A fresh full state is what relisting past the window buys,
	// so it ends the streak too: one that began before it must not buy another relist (seen
	// in the bench storm: a relist for a 410, then an InternalError 40 ms later relisting
	// again because the streak was 49 s old).
	internalErrors = streak{func(s *fsm.Snapshot) *fsm.Streak { return &s.InternalErrors.Streak }, fsm.AtProgress | fsm.AtListing}
)

var watchRules = []rule{
	{
		cause: fsm.CauseWatchOpened, label: "watch opened", accepted: true,
		reads: []reading{on(answersWatch, fsm.EvWatchOpened)},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(_ *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			streamOpened(s, &e)
			return out
		},
	},
	{
		// The hot path. A frame on a stream not yet reported open counts as its opening, and
		// so as accepted (watchEvent); any later frame finds nothing to reset.
		cause: fsm.CauseWatchEvent, label: "ADDED / MODIFIED / DELETED / BOOKMARK",
		reads: []reading{on(answersWatch, fsm.EvWatchEvent)},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			return m.watchEvent(s, &e, out)
		},
	},
	{
		// A failure of class busy, whichever answer it was (fsm.ClassBusy).
		cause: fsm.CauseServerBusy, label: "server busy / Retry-After → wait, re-WATCH",
		retry: true, avoidsList: fsm.AvoidsList,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassBusy)},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Watching)},
		effect: watchFailedEffect,
	},
	{
		// An InternalError (or an unknown 5xx, or a frame that would not decode) re-watches
		// while its streak is young (docs/semantics.md, InternalError row).
		cause: fsm.CauseInternalErrorInWindow, label: "InternalError within window",
		retry: true, avoidsList: fsm.AvoidsList,
		reads: []reading{on(answersWatch, watchFailure...).class(fsm.ClassInternal).when(internalRewatches)},
		rows:  []fsm.Transition{waits(fsm.Watching, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			noteInternalError(s, &e)
			m.watchFailed(s, &e, &out)
			return out
		},
	},
	{
		// The streak is spent: relist. The completed LIST ends the streak, so a lasting outage
		// costs one LIST per window, not one per error. A StorageReadError relists at once.
		cause: fsm.CauseInternalErrorPastWindow, label: "InternalError past window, or StorageReadError → LIST at last RV",
		retry:  true,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassInternal).when(internalRelists)},
		rows:   []fsm.Transition{moves(fsm.Watching, fsm.Relisting)},
		effect: watchFailedEffect,
	},
	{
		cause: fsm.CauseConnectFailed, label: "refused / reset / EOF before open",
		retry: true, avoidsList: fsm.AvoidsList,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassTransport).when(not(oneServerUnreachable))},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Watching)},
		effect: watchFailedEffect,
	},
	{
		// Told the server is one kube-apiserver (SingleServer), a watch that cannot reach it —
		// nothing listens, or the gateway in front of it answers 502 — means it is down: when
		// it answers again it is a new process, whose watch cache began after the resume RV
		// and would answer the resume 410. The wait leads to the relist at the last RV that
		// 410 would have led to, one request sooner (docs/semantics.md, "One kube-apiserver").
		cause: fsm.CauseServerUnreachable, label: "the one kube-apiserver unreachable (refused, 502) → wait, LIST at last RV", retry: true,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassTransport, fsm.ClassInternal).when(oneServerUnreachable)},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Relisting)},
		effect: watchFailedEffect,
	},
	{
		// A stream that ended without a failure class (a timeout as asked, a reset, an EOF)
		// is re-opened at once (docs/semantics.md, "watch stream ends").
		cause: fsm.CauseStreamEnded, label: "stream end → re-WATCH at once",
		retry: true, avoidsList: fsm.AvoidsListIfFailed,
		reads: []reading{on(answersWatch, fsm.EvWatchEnded).when(rewatchesAtEnd)},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.watchFailed(s, &e, &out)
			m.openWatch(s, &out)
			return out
		},
	},
	{
		cause: fsm.CauseStreamEndedQuickly, label: "repeated quick stream ends",
		retry: true, avoidsList: fsm.AvoidsList,
		reads:  []reading{on(answersWatch, fsm.EvWatchEnded).when(waitsAtEnd)},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Watching)},
		effect: watchFailedEffect,
	},
	{
		cause: fsm.CauseExpired, label: "410 Gone / Expired → LIST at last RV", retry: true,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassExpired).when(firstExpiry(false))},
		rows:   []fsm.Transition{moves(fsm.Watching, fsm.Relisting)},
		effect: (*Machine).watchExpired,
	},
	{
		cause: fsm.CauseExpiredAgain, label: "410 again without progress", retry: true,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassExpired).when(expiredAgain)},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Relisting)},
		effect: (*Machine).watchExpired,
	},
	{
		// A watch cache started after the resume RV (a kube-apiserver restarted behind a load
		// balancer) answers the resume 410 where another kube-apiserver would not: one
		// re-watch on a fresh connection first (docs/semantics.md, "behind a load balancer").
		cause: fsm.CauseExpiredYoungCache, label: "410 from a watch cache younger than the RV → re-WATCH on a fresh connection",
		retry: true, avoidsList: fsm.AvoidsList,
		reads: []reading{on(answersWatch, watchFailure...).class(fsm.ClassExpired).when(firstExpiry(true))},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			freshTried.add(s)
			m.watchFailed(s, &e, &out)
			m.openWatch(s, &out)
			out[len(out)-1].FreshConnection = true
			return out
		},
	},
	{
		// A watch cache lagging etcd answers a re-watch "too large" until it catches up: the
		// relist at "" waits first (lagDelay), or every round would cost a consistent LIST at
		// once.
		cause: fsm.CauseTooLargeRV, label: "too large RV → wait (Retry-After), LIST RV=\"\"", retry: true,
		reads: []reading{on(answersWatch, watchFailure...).class(fsm.ClassTooLargeRV)},
		rows:  []fsm.Transition{waits(fsm.Watching, fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.RVUnusable = true
			m.watchFailed(s, &e, &out)
			return out
		},
		wait: func(m *Machine, s *fsm.Snapshot, e fsm.Event) time.Duration { return m.lagDelay(s, &e) },
	},
	{
		// The first refusal since a watch was last accepted re-watches after the wait: right
		// after an apiserver restart the authorizer may answer 403 before its caches have
		// synced, which takes it about a second. The wait is the backoff's first step, not
		// the step the failures of the restart itself (a server that could not be reached)
		// have grown it to (docs/semantics.md, "watch refused").
		cause: fsm.CauseWatchRejectedOnce, label: "401 / 403 / 404 / other, first → re-WATCH after backoff",
		retry: true, avoidsList: fsm.AvoidsList,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassRejected).when(firstRefusal)},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Watching)},
		effect: (*Machine).watchRejected,
		wait:   (*Machine).firstRefusalDelay,
	},
	{
		cause: fsm.CauseWatchRejected, label: "401 / 403 / 404 / other, again", retry: true,
		reads:  []reading{on(answersWatch, watchFailure...).class(fsm.ClassRejected).when(refusedAgain)},
		rows:   []fsm.Transition{waits(fsm.Watching, fsm.Relisting)},
		effect: (*Machine).watchRejected,
	},
	{
		// A relist the relist rules hold back (relistRow), whatever watch failure began it:
		// no event is read as it, the failure's own rule gives its effect. No rule holds one
		// back unless configured (docs/semantics.md, "Relists").
		cause: fsm.CauseRelistDeferred, label: "relist held back by a relist rule", retry: true,
		rows: []fsm.Transition{waits(fsm.Watching, fsm.Relisting)},
		takesRelist: func(m *Machine, s *fsm.Snapshot, e fsm.Event, _ fsm.Transition) bool {
			return len(m.relistRules) > 0 && m.relistWait(s, &e) > 0
		},
		wait: (*Machine).deferredWait,
	},
	{
		// A 401 to a watch after the server had accepted the reflector's credentials: they
		// expired (a rotated token, a short-lived one). The caller is asked to refresh them
		// (fsm.HookRefreshCredentials), at most once a minute, and the watch is re-opened at
		// once when it has answered; otherwise the refusal is a refusal (docs/semantics.md,
		// "credentials expired").
		cause: fsm.CauseRefreshCredentials, label: "401 after credentials were accepted → ask to refresh them (once a minute)",
		retry: true, avoidsList: fsm.AvoidsList,
		reads: []reading{on(answersWatch, watchFailure...).class(fsm.ClassRejected).when(refreshHelps)},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.watchFailed(s, &e, &out)
			m.ask(s, fsm.HookRefreshCredentials, e.Now, &out)
			return out
		},
	},
	{
		// The caller has refreshed the credentials, or failed to (its error is logged): the
		// request they were refused for goes out again at once — the watch from the last RV,
		// or the listing (list-refresh-credentials) from its start.
		cause: fsm.CauseCredentialsRefreshed, label: "credentials refreshed → the refused request again",
		reads: []reading{answered(fsm.HookRefreshCredentials)},
		rows:  []fsm.Transition{stays(fsm.Watching), stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, _ fsm.Event, out []fsm.Command) []fsm.Command {
			switch {
			case s.State == fsm.Watching:
				m.openWatch(s, &out)
			case s.Resume.Probing:
				m.probe(s, &out)
			default:
				m.startListing(s, &out)
			}
			return out
		},
	},
	{
		// A stream that was delivering and fell silent for longer than its bound, which
		// follows the stream's cadence (docs/semantics.md, "silent watch"): ended by the
		// machine and re-opened from the last RV on a fresh connection, before the RV can
		// leave the server's watch cache. A stream silent from the start is the transport's
		// (WatchSilence) and ends as stream-ended.
		cause: fsm.CauseWatchSilent, label: "stream silent past its cadence's bound → re-WATCH from last RV, fresh connection",
		retry: true, avoidsList: fsm.AvoidsList,
		reads: []reading{on(answersDeadline, fsm.EvTimerFired).when(silentPastBound)},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, _ fsm.Event, out []fsm.Command) []fsm.Command {
			m.watchSilent(s, &out)
			return out
		},
	},
	{
		// The deadline of a stream that delivered since it was armed: the next one is armed
		// (keepDeadline).
		cause: fsm.CauseSilenceCheck, label: "deadline, stream delivering → next deadline",
		reads: []reading{on(answersDeadline, fsm.EvTimerFired).otherwise()},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(_ *Machine, s *fsm.Snapshot, _ fsm.Event, out []fsm.Command) []fsm.Command {
			s.Watch.Silence.Timer = 0
			return out
		},
	},
}

// Conditions of the watch rules' readings.

// internalRelists and internalRewatches: the internal error relists at once (a
// StorageReadError, or an InternalError that ends a spent streak) or re-watches; neither when
// it says the one kube-apiserver is unreachable (server-unreachable reads it).
func internalRelists(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return !oneServerUnreachable(m, s, e) && (storageReadError(e.Failure) || internalStreakSpent(m, s, e))
}

func internalRewatches(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return !oneServerUnreachable(m, s, e) && !internalRelists(m, s, e)
}

// oneServerUnreachable: the caller says the server is one kube-apiserver (SingleServer), and
// the watch could not reach it: the connection was refused, or a gateway in front of it answered
// 502 Bad Gateway, which kube-apiserver itself never answers a watch with. A reset or an EOF is
// not read so: a kube-apiserver that is up ends watches so too (docs/semantics.md, "One
// kube-apiserver").
func oneServerUnreachable(m *Machine, _ *fsm.Snapshot, e fsm.Event) bool {
	f := e.Failure
	return m.cfg.SingleServer && f != nil &&
		(f.Transport == fsm.Refused || statusError(f).ErrStatus.Code == http.StatusBadGateway)
}

// storageReadError: a 500 whose reason is StorageReadError — the server could not read an
// object from etcd (undecryptable, corrupt), and such an object's deletion
// (ignoreStoreReadErrorWithClusterBreakingPotential, KEP-3926) ends watches so. Waiting it out
// would keep the deleted object in the store for good, since the watch resumes after the delete:
// the streak's window does not apply, the reflector relists at once, as client-go's does (it
// retries only reason InternalError; docs/semantics.md, "500 InternalError" row).
func storageReadError(f *fsm.Failure) bool {
	return f != nil && f.Status != nil && f.Status.Reason == metav1.StatusReasonStoreReadError
}

// internalStreakSpent: the InternalError at e.Now ends a streak that is both old enough and
// has re-watched often enough (docs/semantics.md, InternalError row). Requiring both means a
// streak of long waits still reaches its relist after a few re-watches, and a burst of fast
// errors cannot force one before the window has passed.
func internalStreakSpent(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return s.InternalErrors.Live(&s.Moments) &&
		e.Now.Sub(s.InternalErrors.Start) >= m.cfg.InternalErrorWindow &&
		s.InternalErrors.Rewatches >= m.cfg.InternalErrorRewatches
}

// quickEndsSpent: this quick end makes QuickEndsBeforeBackoff in a row.
func quickEndsSpent(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return m.quickEnd(s, &e) && quickEnds.count(s)+1 >= m.cfg.QuickEndsBeforeBackoff
}

// rewatchesAtEnd and waitsAtEnd read a stream's end while no restored snapshot is catching up
// (caught-up-at-deadline and catch-up-missed read it then): before QuickEndsBeforeBackoff quick ends in a row, or with
// it.
func rewatchesAtEnd(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return !s.Resume.CatchingUp && !quickEndsSpent(m, s, e)
}

func waitsAtEnd(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return !s.Resume.CatchingUp && quickEndsSpent(m, s, e)
}

// expiredAgain: a 410 since the last watch event.
func expiredAgain(_ *Machine, s *fsm.Snapshot, _ fsm.Event) bool { return expiredStreak.count(s) > 0 }

// firstExpiry: the first 410 since the last watch event, from a young watch cache or not.
func firstExpiry(young bool) func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
		return expiredStreak.count(s) == 0 && m.youngCache(s, &e) == young
	}
}

// youngCache: the 410 answers a resume before the watch delivered anything, its Status says a
// watch cache whose oldest event is newer than the RV asked for (kube-apiserver's "too old
// resource version: RV (OLDEST)"), the resume RV is younger than ResumeRVLifetime, and no fresh
// connection has been tried since the last watch event. Another kube-apiserver behind the same
// load balancer, with an older cache, can serve the resume; etcd's own 410 (compaction) says no
// such thing, since every kube-apiserver would answer it alike.
//
// The RV's age is what tells a young cache from an old one: a long-running kube-apiserver's watch
// cache keeps every event at least 75 s, so it answers an RV with these words only once the
// reflector reached that RV more than 75 s ago — an ordinary 410, which would only cost an extra
// WATCH before the relist. An RV reached less than ResumeRVLifetime (60 s) ago that a cache no
// longer holds is one its cache started after (docs/semantics.md, "behind a load balancer").
// Where the caller says there is one kube-apiserver (SingleServer), no other cache can serve it.
func (m *Machine) youngCache(s *fsm.Snapshot, e *fsm.Event) bool {
	if m.cfg.SingleServer || freshTried.count(s) > 0 || s.Watch.Events > 0 || e.Failure == nil ||
		e.Now.Sub(s.RVAdvancedAt) >= m.cfg.ResumeRVLifetime {
		return false
	}
	asked, oldest, ok := e.Failure.WatchCacheTooOld()
	return ok && oldest > asked && strconv.FormatUint(asked, 10) == s.LastRV
}

// firstRefusal and refusedAgain: no watch was refused since one last opened, or one was; and
// a credentials refresh does not answer this refusal.
func firstRefusal(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return rejected.count(s) == 0 && !refreshHelps(m, s, e)
}

func refusedAgain(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return rejected.count(s) > 0 && !refreshHelps(m, s, e)
}

// refreshHelps: the caller refreshes credentials, the server accepted them before (the store
// synced), the refusal is a 401, and they were not refreshed in the last credentialsRefreshEvery.
func refreshHelps(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return m.cfg.CredentialsRefresh && s.Synced && apierrors.IsUnauthorized(statusError(e.Failure)) &&
		!askedWithin(s, fsm.HookRefreshCredentials, e.Now, credentialsRefreshEvery)
}

// credentialsRefreshEvery bounds how often a 401 asks for fresh credentials: a refresh that
// does not help is not asked for again and again (docs/semantics.md, "credentials expired").
const credentialsRefreshEvery = time.Minute

// Effects shared by watch rules.

// watchFailedEffect is watchFailed as a rule's effect.
func watchFailedEffect(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
	m.watchFailed(s, &e, &out)
	return out
}

func (m *Machine) watchExpired(s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
	expiredStreak.add(s)
	m.watchFailed(s, &e, &out)
	return out
}

func (m *Machine) watchRejected(s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
	m.watchFailed(s, &e, &out)
	rejected.add(s)
	return out
}
