package transitions

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/fsm"
)

type pageKind uint8

const (
	pageFirst pageKind = iota
	pageContinue
	pageFull
)

// listRV is the resourceVersion a new listing asks for (client-go's relistResourceVersion):
// "0" before anything was seen (served from the watch cache), the last observed RV after that
// (never "" straight away: that would send every client to etcd at once, kubernetes#86430), and
// "" only once the server has said that RV cannot be served.
func (m *Machine) listRV(s *fsm.Snapshot) string {
	switch {
	case s.RVUnusable:
		return ""
	case s.LastRV == "":
		return "0"
	}
	return s.LastRV
}

// streamRV is the resourceVersion a watch-list stream asks for: listRV, except that a first
// stream asks for "" rather than "0". With resourceVersionMatch=NotOlderThan that is a
// consistent snapshot, at least as new as etcd when the request arrived, where "0" takes
// whatever the watch cache holds, possibly older than what the client saw from elsewhere
// (client-go's watch-list asks the same; docs/semantics.md, "Streaming list").
func (m *Machine) streamRV(s *fsm.Snapshot) string {
	if rv := m.listRV(s); rv != "0" {
		return rv
	}
	return ""
}

// startListing begins a new listing, as a watch-list stream when configured and supported,
// unless this listing's watch-list has failed already (List.StreamFailed).
func (m *Machine) startListing(s *fsm.Snapshot, out *[]fsm.Command) {
	s.List.RV = m.listRV(s)
	if m.cfg.WatchList && !s.Server.WatchListUnsupported && !s.List.StreamFailed {
		s.List.RV = m.streamRV(s)
		s.List.Streaming = true
		s.List.Continuing, s.List.Full = false, false
		s.Request = m.nextID(s)
		emit(out, fsm.Command{
			Kind: fsm.CmdOpenWatch, Request: s.Request, ResourceVersion: s.List.RV, RVSet: s.List.RV != "",
			Match: "NotOlderThan", Bookmarks: true, SendInitialEvents: true,
			TimeoutSeconds: m.watchTimeout(s), SilenceBound: m.silenceBound(),
		})
		return
	}
	s.List.Streaming = false
	if s.List.RV == "0" && s.Server.WholeListsFail {
		// The watch cache answers RV 0 whole whatever the limit, and a whole list is what
		// could not be taken: a consistent read is the one it pages (docs/semantics.md, "A
		// list that cannot be served whole").
		s.List.RV = ""
	}
	m.listPage(s, out, pageFirst, "")
}

// listPage requests one LIST page. A continue page carries no resourceVersion (the token pins
// it); the full fallback list carries no limit, and neither does a relist at a known RV while
// the server has never paged a list (see paged).
func (m *Machine) listPage(s *fsm.Snapshot, out *[]fsm.Command, kind pageKind, cont string) {
	s.Request = m.nextID(s)
	s.List.Continuing, s.List.Full = kind == pageContinue, kind == pageFull
	s.List.Continue = cont
	c := fsm.Command{Kind: fsm.CmdListPage, Request: s.Request}
	if kind == pageContinue {
		c.Continue = cont
	} else {
		c.ResourceVersion, c.RVSet = s.List.RV, true
		if s.List.RV != "" && s.List.RV != "0" {
			// Without a match, a specific RV with a limit means Exact, which the server may have
			// to read from etcd; NotOlderThan lets it serve from its watch cache.
			c.Match = "NotOlderThan"
		}
	}
	paged := m.paged(s, kind)
	if paged {
		c.Limit = m.pageLimit(s)
	}
	// At RV 0 the watch cache ignores the limit and answers in one response.
	s.List.Whole = kind != pageContinue && (!paged || s.List.RV == "0")
	emit(out, c)
}

// paged says whether a LIST request asks for a limit. A relist at a known RV does not, as long
// as the server has not shown that no watch cache serves this resource: the watch cache serves
// a LIST at a given RV from memory, and unpaginated it takes one request instead of one per
// page — which counts when a fleet relists at once behind API Priority and Fairness, where
// every page queues for a seat and may be turned away on its own (bench/RESULTS.md, "Fleets";
// client-go's reflector makes the same choice). What shows it is a paged answer to the LIST at
// RV 0 (Server.Pages, set in pageAnswered): without a watch cache a whole list would be one
// large read from etcd, so relists page too. Relists page as well once a whole list could not
// be taken (Server.WholeListsFail). The first LIST always asks for a limit: at RV 0 the watch
// cache ignores it, and without a watch cache it is what tells the two apart.
// docs/semantics.md, "Requests".
func (m *Machine) paged(s *fsm.Snapshot, kind pageKind) bool {
	switch {
	case kind == pageFull || m.cfg.PageSize <= 0:
		return false
	case kind == pageFirst && s.List.RV != "" && s.List.RV != "0":
		return s.Server.Pages || s.Server.WholeListsFail || m.cfg.PageRelists
	}
	return true
}

// pageAnswered notes what a page with a continue token says about the server. Only a paged
// answer to a LIST at RV 0 says that no watch cache serves the resource: the watch cache
// answers RV 0 whole whatever the limit, but pages a consistent read ("") and, in v1.37, a read
// at a given RV that asks for a limit, so a paged answer to either says nothing (measured on
// kube-apiserver v1.37; client-go decides from the RV 0 list alone as well).
func pageAnswered(s *fsm.Snapshot) {
	if s.List.RV == "0" {
		s.Server.Pages = true
	}
}

// wholeListRefused: the request in flight asked for the whole list, and the answer says it
// cannot be served whole — larger than MaxListBytes, or, for a request without a limit, a
// server timeout while it built the list (a 504 Timeout or ServerTimeout Status that is not
// "too large resource version"). A timeout answering RV 0 is not read so: the watch cache
// serves that from memory, and a slow answer there says the server is busy, not that the list
// is too big. Only when the listing can page and does not already.
func (m *Machine) wholeListRefused(s *fsm.Snapshot, f *fsm.Failure) bool {
	if !s.List.Whole || m.cfg.PageSize <= 0 || s.Server.WholeListsFail || f == nil {
		return false
	}
	switch classify(f) {
	case fsm.ClassTransport:
		return f.Transport == fsm.TooLarge
	case fsm.ClassBusy:
		err := statusError(f)
		return s.List.RV != "0" && (apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err))
	}
	return false
}

// pageLimit is the limit a paged LIST asks for: PageSize, or the smaller one a page too large
// for MaxListBytes left (Server.PageLimit).
func (m *Machine) pageLimit(s *fsm.Snapshot) int64 {
	if s.Server.PageLimit > 0 {
		return s.Server.PageLimit
	}
	return m.cfg.PageSize
}

// pageTooLarge: the request in flight asked for a page with a limit above one item, and the
// answer was larger than MaxListBytes. Asked again with the same limit it would fail the same
// way at every backoff step, while smaller pages would fit (docs/semantics.md, "A list that
// cannot be served whole").
func (m *Machine) pageTooLarge(s *fsm.Snapshot, f *fsm.Failure) bool {
	return !s.List.Whole && m.cfg.PageSize > 0 && f != nil && f.Status == nil && f.Code == 0 &&
		f.Transport == fsm.TooLarge && m.pageLimit(s) > 1
}

// shrinkPage asks for the page that was too large again, at once, with half the limit; every
// later LIST keeps it. A continuation page keeps its token and the pages before it.
func (m *Machine) shrinkPage(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	s.Server.PageLimit = max(m.pageLimit(s)/2, 1)
	cont := s.List.Continuing
	m.endRequest(s, e, out)
	discardPageItems(s, out)
	if cont {
		m.listPage(s, out, pageContinue, s.List.Continue)
		return
	}
	m.listPage(s, out, pageFirst, "")
}

// stageItem stages one LIST item as it arrives (docs/semantics.md, "Relists").
func stageItem(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	s.List.Staged++
	s.List.PageItems++
	emit(out, fsm.Command{Kind: fsm.CmdStage, Key: e.Key, ResourceVersion: e.ResourceVersion, Object: e.Object, ItemCount: 1})
}

// stagePage stages a page's items at its end, unless they were staged one by one as they
// arrived.
func stagePage(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if s.List.PageItems > 0 {
		s.List.PageItems = 0
		return
	}
	count := max(e.ItemCount, len(e.Items))
	if count == 0 {
		return
	}
	s.List.Staged++
	emit(out, fsm.Command{Kind: fsm.CmdStage, Items: e.Items, ItemCount: count})
}

func discardStaged(s *fsm.Snapshot, out *[]fsm.Command) {
	if s.List.Staged > 0 {
		emit(out, fsm.Command{Kind: fsm.CmdDiscardStaged})
		s.List.Staged = 0
	}
	s.List.PageItems = 0
}

// discardPageItems drops the items of a page that broke off, keeping the pages before it.
func discardPageItems(s *fsm.Snapshot, out *[]fsm.Command) {
	if s.List.PageItems > 0 {
		emit(out, fsm.Command{Kind: fsm.CmdDiscardStaged, ItemCount: s.List.PageItems})
		s.List.Staged -= s.List.PageItems
		s.List.PageItems = 0
	}
}

// replace hands everything staged to the store at rv.
func (m *Machine) replace(s *fsm.Snapshot, rv string, now time.Time, out *[]fsm.Command) {
	emit(out, fsm.Command{Kind: fsm.CmdReplaceStore, ResourceVersion: rv})
	s.List.Staged, s.List.PageItems = 0, 0
	s.List.Streaming, s.List.Continuing, s.List.Full, s.List.Whole, s.List.Continue = false, false, false, false, ""
	s.List.StreamFailed = false // the next listing tries the watch-list again
	s.Synced = true
	s.Resume = fsm.ResumeState{} // a restored snapshot is synced by a full state too
	s.Moments.Listings++         // a moment that ends streaks (fsm.AtListing)
	s.RVAdvancedAt = now
	forgetFrames(s)
	if rv != "" {
		s.LastRV = rv
		s.RVUnusable = false
	}
}

func (m *Machine) replaceAndWatch(s *fsm.Snapshot, rv string, now time.Time, out *[]fsm.Command) {
	m.replace(s, rv, now, out)
	m.openWatch(s, out)
}
