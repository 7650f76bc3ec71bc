package transitions

import (
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/fsm"
)

// The rules of a listing: the first fill (Listing, at RV 0) and a relist (Relisting, at the
// last RV), page by page or as a watch-list stream (docs/semantics.md, "Initial LIST",
// "Relist after a watch failure", "Watch-list"). Their rows in the two states are as
// fsm.ListingAndRelisting says, which fsm.NewTable checks when the package loads.

// Failure classes a listing reads.
var (
	rvUnusableClasses = fsm.ClassesOf(fsm.ClassExpired, fsm.ClassTooLargeRV)
	listRetryClasses  = fsm.ClassesOf(fsm.ClassBusy, fsm.ClassInternal, fsm.ClassTransport, fsm.ClassExpired, fsm.ClassTooLargeRV)
	anyFailure        = fsm.ClassesOf(fsm.ClassBusy, fsm.ClassInternal, fsm.ClassTransport, fsm.ClassExpired, fsm.ClassTooLargeRV, fsm.ClassRejected)
)

var listRules = []rule{
	{
		cause: fsm.CauseStart, label: "start: LIST RV=0",
		reads: []reading{on(answersNothing, fsm.EvStart).when(plainStart)},
		rows:  []fsm.Transition{stays(fsm.Listing)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.startListing(s, &out)
			return out
		},
	},
	{
		cause: fsm.CauseListItem, label: "LIST item → stage", accepted: true,
		reads: []reading{on(answersList, fsm.EvListItem)},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(_ *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			stageItem(s, &e, &out)
			return out
		},
	},
	{
		cause: fsm.CauseListPageMore, label: "page with continue → next page", accepted: true,
		reads: []reading{on(answersList, fsm.EvListPage).when(pageHasMore)},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			pageAnswered(s)
			stagePage(s, &e, &out)
			m.listPage(s, &out, pageContinue, e.Continue)
			return out
		},
	},
	{
		cause: fsm.CauseListComplete, label: "last page → Replace, WATCH from list RV", accepted: true,
		reads: []reading{on(answersList, fsm.EvListPage).when(not(pageHasMore))},
		rows:  []fsm.Transition{moves(fsm.Listing, fsm.Watching), moves(fsm.Relisting, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			stagePage(s, &e, &out)
			m.replaceAndWatch(s, e.ResourceVersion, e.Now, &out)
			return out
		},
	},
	{
		// client-go's pager: an expired or too-large first page retries as a consistent read
		// (an RV already "" is a plain failure).
		cause: fsm.CauseListExpired, label: "410 / too large RV → LIST RV=\"\"", retry: true,
		reads: []reading{
			on(answersList, fsm.EvListFailed).anyOf(rvUnusableClasses).when(firstPageAtRV),
			on(answersStream, fsm.EvWatchOpenFailed, fsm.EvWatchError).anyOf(rvUnusableClasses).when(firstPageAtRV),
		},
		rows: []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.endRequest(s, &e, &out)
			discardStaged(s, &out)
			s.RVUnusable = true
			m.startListing(s, &out)
			return out
		},
	},
	{
		// client-go's pager: an expired continue token falls back to one full list at the
		// original RV. Once whole lists fail there is no full list to fall back to: the pages
		// start again from page 1, after the wait of a failed LIST (docs/semantics.md, "A list
		// that cannot be served whole").
		cause: fsm.CauseContinueExpired, label: "continue expired → one full LIST at RV", retry: true,
		reads: []reading{on(answersList, fsm.EvListFailed).anyOf(rvUnusableClasses).when(continuingWhole)},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			discardStaged(s, &out)
			m.listPage(s, &out, pageFull, "")
			return out
		},
	},
	{
		cause: fsm.CauseListFailed, label: "LIST failed (429/5xx/transport) → Retry-After or backoff", retry: true,
		reads: []reading{
			on(answersList, fsm.EvListFailed).anyOf(listRetryClasses).otherwise(),
			on(answersStream, fsm.EvWatchOpenFailed).anyOf(listRetryClasses).otherwise(),
			// The probe of a start from a persisted snapshot waits as a failed LIST, and its
			// timer retries the probe (listAgain); a verification the server cannot answer is
			// snapshot-unverifiable's.
			on(answersProbe, fsm.EvListFailed).anyOf(listRetryClasses).when(not(verificationRefused)),
		},
		rows: []fsm.Transition{waits(fsm.Listing, fsm.Listing), waits(fsm.Relisting, fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			if s.Resume.Probing && e.Failure != nil && e.Failure.Transport == fsm.TooLarge {
				// A probe page past MaxListBytes: the collection is too large to be taken in
				// one page anyway, and one item tells where the server is.
				s.Resume.Limit = 1
			}
			// A token the server said has expired (when whole lists fail, so that no full list
			// can replace the pages) is not retried either.
			m.listBrokeOff(s, &e, &out, s.List.Continuing && !s.List.Streaming && !unusableRV(e.Failure))
			return out
		},
	},
	{
		// A listing refused with 401 asks the caller to refresh the credentials, as a watch's
		// 401 does (refresh-credentials), at most once a minute: credentials that expire while
		// the reflector relists — or a refresh that failed once — would otherwise be sent again
		// at every backoff step while the store it serves never moves (docs/semantics.md,
		// "credentials expired"). When the caller has answered, the listing starts again.
		cause: fsm.CauseListRefreshCredentials, label: "LIST 401 → ask to refresh credentials (once a minute)", retry: true,
		reads: []reading{
			on(answersList, fsm.EvListFailed).class(fsm.ClassRejected).when(listRefreshHelps),
			on(answersProbe, fsm.EvListFailed).class(fsm.ClassRejected).when(listRefreshHelps),
			on(answersStream, fsm.EvWatchOpenFailed, fsm.EvWatchError).class(fsm.ClassRejected).when(listRefreshHelps),
		},
		rows: []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.listBrokeOff(s, &e, &out, false)
			m.ask(s, fsm.HookRefreshCredentials, e.Now, &out)
			return out
		},
	},
	{
		// A misspelt resource or a bad selector: retried like any failure, but a cause of its
		// own so that it is logged as a warning (docs/semantics.md, "LIST fails: 401 / 403 /
		// 404 / other"). A continuation page the server refused (400: a token it cannot read)
		// is not retried: the same token would be refused forever. The listing starts again
		// from page 1 after the wait, as client-go's does.
		cause: fsm.CauseListRejected, label: "LIST refused (401/403/404/other 4xx) → backoff, warn", retry: true,
		reads: []reading{
			on(answersList, fsm.EvListFailed).class(fsm.ClassRejected).when(not(listRefreshHelps)),
			on(answersProbe, fsm.EvListFailed).class(fsm.ClassRejected).when(and(not(verificationRefused), not(listRefreshHelps))),
			on(answersStream, fsm.EvWatchOpenFailed).class(fsm.ClassRejected).when(and(watchListRefused, not(listRefreshHelps))),
		},
		rows: []fsm.Transition{waits(fsm.Listing, fsm.Listing), waits(fsm.Relisting, fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.listBrokeOff(s, &e, &out, false)
			return out
		},
		wait: (*Machine).listRefusalDelay,
	},
	{
		cause: fsm.CauseWatchListOpened, label: "watch-list stream opened", accepted: true,
		reads: []reading{on(answersStream, fsm.EvWatchOpened)},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			streamOpened(s, &e)
			m.armEndDeadline(s, &e, &out)
			return out
		},
	},
	{
		// A watch-list whose initial-events-end bookmark will not come: a server that supports
		// watch-list sends no other bookmark before the one that ends the initial events, so
		// one that sends a plain bookmark has dropped the annotation (an older aggregated
		// server, a proxy); and initial events that fall silent past their bound without it
		// will not end either (initial_end.go). Paginated LISTs from then on, for the
		// reflector's life (docs/semantics.md, "Streaming list").
		cause: fsm.CauseWatchListNoEnd, label: "watch-list without its end bookmark → paginated LIST", retry: true,
		reads: []reading{
			on(answersStream, fsm.EvWatchEvent).when(plainBookmark),
			on(answersEndDeadline, fsm.EvTimerFired).when(initialEventsSilent),
		},
		rows: []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, _ fsm.Event, out []fsm.Command) []fsm.Command {
			m.watchListNoEnd(s, &out)
			return out
		},
	},
	{
		cause: fsm.CauseInitialEventsCheck, label: "deadline, initial events arriving → next deadline",
		reads: []reading{on(answersEndDeadline, fsm.EvTimerFired).otherwise()},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.List.EndTimer = 0
			m.armEndDeadline(s, &e, &out)
			return out
		},
	},
	{
		cause: fsm.CauseInitialEvent, label: "initial event → stage", accepted: true,
		reads: []reading{on(answersStream, fsm.EvWatchEvent).when(not(anyBookmark))},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(_ *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.List.HeardAt = e.Now
			if e.Type != fsm.Bookmark {
				s.List.Staged++
				emit(&out, fsm.Command{Kind: fsm.CmdStage, Type: e.Type, Key: e.Key, Object: e.Object, Items: e.Items, ItemCount: e.ItemCount})
			}
			return out
		},
	},
	{
		cause: fsm.CauseInitialEventsEnd, label: "initial-events-end bookmark → Replace",
		reads: []reading{on(answersStream, fsm.EvWatchEvent).when(initialEventsEnd)},
		rows:  []fsm.Transition{moves(fsm.Listing, fsm.Watching), moves(fsm.Relisting, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			// The stream that delivered the initial state goes on as the watch: a watch that
			// opens now, with nothing delivered yet.
			m.replace(s, e.ResourceVersion, e.Now, &out)
			streamClosed(s)
			streamOpened(s, &e)
			s.Server.WatchListServed = true
			return out
		},
	},
	{
		// A server without watch-list answers 400 Invalid (or 403/404 through some proxies):
		// fall back to LIST for good, as client-go does. A 401 or 403 from a server that has
		// served a watch-list is a refusal (list-rejected), not this.
		cause: fsm.CauseWatchListUnsupported, label: "watch-list unsupported → paginated LIST", retry: true,
		reads: []reading{on(answersStream, fsm.EvWatchOpenFailed).class(fsm.ClassRejected).when(not(watchListRefused))},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			discardStaged(s, &out)
			s.Server.WatchListUnsupported = true
			m.startListing(s, &out)
			return out
		},
	},
	{
		// A watch-list that failed in a way that may be its own, where a LIST may well work: a
		// server error (a 500, another 5xx but a gateway's 502), an error the client cannot
		// classify (a ListerWatcher whose Watch cannot take the request — client-go's fake
		// source cannot parse the empty resourceVersion of a first watch-list), an ERROR event
		// before the initial-events-end bookmark that neither asks to come back later nor says
		// the RV expired, a frame that will not decode, or a stream closed in order within a
		// second with nothing on it. The listing goes on as a LIST at once, as client-go's
		// reflector falls back, and the next listing (a relist) tries the watch-list again, as
		// client-go's next ListAndWatch does: waiting for a stream that may never come would
		// never sync (docs/semantics.md, "Streaming list").
		cause: fsm.CauseWatchListFailed, label: "watch-list failed → LIST this time", retry: true,
		reads: []reading{
			on(answersStream, fsm.EvWatchOpenFailed).anyOf(fsm.ClassesOf(fsm.ClassInternal, fsm.ClassTransport)).when(watchListFailed),
			on(answersStream, fsm.EvWatchError).anyOf(fsm.ClassesOf(fsm.ClassInternal, fsm.ClassRejected)).when(watchListFailed),
			on(answersStream, fsm.EvWatchEnded).class(fsm.ClassInternal),
			on(answersStream, fsm.EvWatchEnded).when(veryShortStream),
		},
		rows: []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.endRequest(s, &e, &out)
			discardStaged(s, &out)
			s.List.StreamFailed = true
			m.startListing(s, &out)
			return out
		},
	},
	{
		// A watch-list stream that broke off, whatever the reason: it has nothing to resume
		// from.
		cause: fsm.CauseInitialTransferCut, label: "initial transfer cut", retry: true,
		reads: []reading{on(answersStream, fsm.EvWatchError, fsm.EvWatchEnded).anyOf(anyFailure | fsm.ClassesOf(fsm.NoClass)).otherwise()},
		rows:  []fsm.Transition{waits(fsm.Listing, fsm.Listing), waits(fsm.Relisting, fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.listBrokeOff(s, &e, &out, false)
			return out
		},
	},
	{
		// A whole list (no limit, or RV 0, which the watch cache serves whole) that came back
		// too large for MaxListBytes (a transport fact), or timed out while the server built it
		// (a 504). Asking for the same whole list again at every backoff step would fail the
		// same way: page from now on, at once (docs/semantics.md, "A list that cannot be served
		// whole").
		cause: fsm.CauseWholeListRefused, label: "whole LIST too large / timed out → pages", retry: true,
		reads: []reading{on(answersList, fsm.EvListFailed).class(fsm.ClassTransport, fsm.ClassBusy).when(wholeListRefused)},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.endRequest(s, &e, &out)
			discardStaged(s, &out)
			s.Server.WholeListsFail = true
			m.startListing(s, &out)
			return out
		},
	},
	{
		// A LIST whose response stopped coming, its connection held open — a balancer or a
		// node hanging mid response — was cancelled by the transport's progress bound: it is
		// asked again after the wait of a failed LIST, where it broke off (a continuation page
		// with its token), and a whole list in pages from then on: a smaller answer is less to
		// lose to the next stall (docs/semantics.md, "A response that stops halfway").
		cause: fsm.CauseListStalled, label: "LIST response stalled → cancelled, pages, backoff", retry: true,
		reads: []reading{on(answersList, fsm.EvListFailed).class(fsm.ClassTransport).when(responseStalled)},
		rows:  []fsm.Transition{waits(fsm.Listing, fsm.Listing), waits(fsm.Relisting, fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			if s.List.Whole && m.cfg.PageSize > 0 {
				s.Server.WholeListsFail = true
			}
			m.listBrokeOff(s, &e, &out, s.List.Continuing)
			return out
		},
	},
	{
		// A page with a limit that came back larger than MaxListBytes: asked again with the
		// same limit it would fail the same way at every backoff step, while smaller pages would
		// fit. The same page again at once with half the limit, which later LISTs keep
		// (docs/semantics.md, "A list that cannot be served whole").
		cause: fsm.CausePageTooLarge, label: "page too large → same page, half the limit", retry: true,
		reads: []reading{on(answersList, fsm.EvListFailed).class(fsm.ClassTransport).when(pageTooLarge)},
		rows:  []fsm.Transition{stays(fsm.Listing), stays(fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.shrinkPage(s, &e, &out)
			return out
		},
	},
}

func responseStalled(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool {
	return e.Failure != nil && e.Failure.Transport == fsm.Stalled
}

func pageTooLarge(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return m.pageTooLarge(s, e.Failure)
}

// Conditions of the listing rules' readings.

// plainStart: the start, without a persisted snapshot (a start with one is
// start-from-snapshot's).
func plainStart(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return s.Seq == 0 && e.ResourceVersion == ""
}

func pageHasMore(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool { return e.Continue != "" }

// continuingWhole: a continuation page failed, and a whole list can still replace the pages.
func continuingWhole(_ *Machine, s *fsm.Snapshot, _ fsm.Event) bool {
	return s.List.Continuing && !s.Server.WholeListsFail
}

// firstPageAtRV: the listing that failed asked for a resourceVersion on its first page (or
// stream: a first stream asks for none, streamRV), so a consistent read is left to fall back
// to.
func firstPageAtRV(_ *Machine, s *fsm.Snapshot, _ fsm.Event) bool {
	return !s.List.Continuing && s.List.RV != ""
}

// unusableRV: the failure says the request's resourceVersion (or its continue token's) cannot
// be served — expired, or too large.
func unusableRV(f *fsm.Failure) bool {
	c := classify(f)
	return c == fsm.ClassExpired || c == fsm.ClassTooLargeRV
}

func initialEventsEnd(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool {
	return e.Type == fsm.Bookmark && e.InitialEventsEnd
}

func plainBookmark(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool {
	return e.Type == fsm.Bookmark && !e.InitialEventsEnd
}

func anyBookmark(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool { return e.Type == fsm.Bookmark }

func initialEventsSilent(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return e.Now.Sub(s.List.HeardAt) >= initialEventsSilence
}

func wholeListRefused(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return m.wholeListRefused(s, e.Failure)
}

func not(cond func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool) func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool { return !cond(m, s, e) }
}

func and(a, b func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool) func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool { return a(m, s, e) && b(m, s, e) }
}

// listRefreshHelps: a listing refused with 401, with a caller that refreshes credentials not
// asked within the last minute. Unlike a watch's 401 it needs no synced store: credentials that
// were never accepted may be refreshed too.
func listRefreshHelps(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return m.cfg.CredentialsRefresh && apierrors.IsUnauthorized(statusError(e.Failure)) &&
		!askedWithin(s, fsm.HookRefreshCredentials, e.Now, credentialsRefreshEvery)
}

// watchListRefused: a watch-list answered 401 or 403 by a server that has served one: a
// refusal of the request, as of a LIST — right after a kube-apiserver restart its authorizer
// answers 403 until its caches have synced — not a server without watch-list, which would
// send this reflector to paginated LISTs for good (docs/semantics.md, "Streaming list").
func watchListRefused(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	if !s.Server.WatchListServed || e.Failure == nil {
		return false
	}
	err := statusError(e.Failure)
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}

// watchListFailed: a watch-list's failure that may be the watch-list's own rather than the
// server's or the network's — a LIST would meet a busy server (429, 503, 504), a refused, reset
// or timed-out connection and a gateway's 502 all the same, and those wait and stream again —
// so the listing goes on as a LIST (watch-list-failed): a server error, an error the client
// cannot classify (fsm.OtherTransport: not a Status, not a connection failure), and any ERROR
// event read as internal or a refusal (docs/semantics.md, "Streaming list").
func watchListFailed(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool {
	f := e.Failure
	switch classify(f) {
	case fsm.ClassTransport:
		return f.Transport == fsm.OtherTransport
	case fsm.ClassInternal:
		return f == nil || statusError(f).ErrStatus.Code != http.StatusBadGateway
	}
	return true
}

// veryShortStream: the watch-list closed in order within a second of opening, having delivered
// nothing — what client-go's reflector reads as a VeryShortWatchError and answers with a LIST: a
// ListerWatcher whose Watch ignores sendInitialEvents and has nothing to send
// (watch.NewEmptyWatch) would otherwise be streamed again after every wait, and never synced.
func veryShortStream(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return e.Failure == nil && s.Watch.Open && s.List.Staged == 0 && e.Now.Sub(s.Watch.OpenedAt) < veryShortStreamBound
}

// veryShortStreamBound is client-go's bound for a very short watch.
const veryShortStreamBound = time.Second

// listBrokeOff ends a listing's request that failed. A continuation page that can be retried
// whole with its token (keepPages) drops what came of it; anything else — a first page, a
// watch-list stream, a refused continuation — has nothing to resume from, and its listing
// starts again from page 1 after the wait (docs/semantics.md, "Initial LIST").
func (m *Machine) listBrokeOff(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command, keepPages bool) {
	m.endRequest(s, e, out)
	if keepPages {
		discardPageItems(s, out)
		return
	}
	discardStaged(s, out)
	s.List.Continue = ""
}
