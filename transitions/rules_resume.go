package transitions

import (
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/fsm"
)

// The rules of a start from a persisted snapshot (docs/semantics.md, "Persisted cache"). The
// driver loads the snapshot before the start and EvStart says what it holds (its
// resourceVersion and object count); the machine first takes a consistent read of where the
// server is — the probe, a limit=1 LIST at RV "" whose one item is not kept — and then either
// restores the snapshot and resumes the watch from its resourceVersion, or, when the snapshot
// is ahead of the server (a restored etcd) or its resourceVersion cannot be compared, drops it
// and lists as any first start does. A restored store is not synced until the watch has
// reached the probe's resourceVersion: nothing older than the reflector's own start is ever
// reported as synced.
//
// A probe that fails is read as any failed LIST (list-failed, list-rejected) and waits as one;
// its timer retries the probe (listAgain). A resume watch answered 410 relists as any watch
// does, into the store that holds the snapshot, so a VersionedStore skips the unchanged items.

var resumeRules = []rule{
	{
		cause: fsm.CauseStartFromSnapshot, label: "start from a snapshot → probe LIST RV=\"\"",
		reads: []reading{on(answersNothing, fsm.EvStart).when(startsFromSnapshot)},
		rows:  []fsm.Transition{stays(fsm.Listing)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.Resume = fsm.ResumeState{RV: e.ResourceVersion, Items: e.ItemCount, Probing: true, Limit: m.probeLimit(s, e.ItemCount)}
			m.probe(s, &out)
			return out
		},
	},
	{
		// An item of the probe or of the verification: what it says of the snapshot's history
		// is noted, and the probe's items are held aside, a full state if the page turns out
		// to hold the whole collection.
		cause: fsm.CauseProbeItem, label: "probe item → compare, hold", accepted: true,
		reads: []reading{on(answersProbe, fsm.EvListItem)},
		rows:  []fsm.Transition{stays(fsm.Listing)},
		effect: func(_ *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			witness(s, &e)
			if !s.Resume.Verifying {
				stageItem(s, &e, &out)
				out[len(out)-1].Hold = true
			}
			return out
		},
	},
	{
		// The probe's page holds the whole collection, at a consistent resourceVersion: that
		// is a full state at once, whatever the snapshot is worth. Its items the snapshot holds
		// unchanged were not decoded (the driver took the snapshot's objects), and the watch
		// goes on from the page's resourceVersion: synced after one request.
		cause: fsm.CauseProbeWhole, label: "probe: whole collection → Replace, WATCH", accepted: true,
		reads: []reading{on(answersProbe, fsm.EvListPage).when(verdictIs(probedWhole))},
		rows:  []fsm.Transition{moves(fsm.Listing, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			stageHeldPage(s, &e, &out)
			emit(&out, fsm.Command{Kind: fsm.CmdDropSnapshot})
			s.Request = 0
			m.replaceAndWatch(s, e.ResourceVersion, e.Now, &out)
			return out
		},
	},
	{
		cause: fsm.CauseResume, label: "probe: same history → restore, WATCH", accepted: true,
		reads: []reading{on(answersProbe, fsm.EvListPage).when(verdictIs(sameHistory))},
		rows:  []fsm.Transition{moves(fsm.Listing, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			discardStaged(s, &out)
			m.resume(s, &e, &out)
			return out
		},
	},
	{
		// A snapshot ahead of the server's consistent read was written against another etcd
		// (restored from a backup): resuming it would keep objects the server no longer has,
		// and report them synced. An RV that is not a decimal number cannot be compared, so
		// no catch-up could be proved either.
		cause: fsm.CauseSnapshotAhead, label: "probe: snapshot ahead → drop it, LIST RV=0", accepted: true,
		reads:  []reading{on(answersProbe, fsm.EvListPage).when(verdictIs(snapshotAhead))},
		rows:   []fsm.Transition{stays(fsm.Listing)},
		effect: (*Machine).dropSnapshot,
	},
	{
		// An item as it was at the snapshot's resourceVersion that the snapshot does not hold,
		// or the server holding nothing there where the snapshot holds objects: the snapshot
		// is of another history — a cluster deleted and created again at the same address,
		// another cluster's volume — whose names and resourceVersions may match this one's
		// (docs/semantics.md, "Persisted cache").
		cause: fsm.CauseSnapshotForeign, label: "probe: another history → drop it, LIST RV=0", accepted: true,
		reads:  []reading{on(answersProbe, fsm.EvListPage).when(verdictIs(anotherHistory))},
		rows:   []fsm.Transition{stays(fsm.Listing)},
		effect: (*Machine).dropSnapshot,
	},
	{
		// The probe's items all changed after the snapshot was written (or it had none): they
		// say nothing of its history. The first item of the collection as it was at the
		// snapshot's resourceVersion does — a LIST at that resourceVersion, Exact, limit=1.
		cause: fsm.CauseVerifySnapshot, label: "probe: history unproven → LIST at snapshot RV, Exact", accepted: true,
		reads: []reading{on(answersProbe, fsm.EvListPage).when(verdictIs(unproven))},
		rows:  []fsm.Transition{stays(fsm.Listing)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			discardStaged(s, &out)
			// The probe's resourceVersion is still what the restored store must catch up with.
			s.Resume.Target, _ = parseRV(e.ResourceVersion)
			s.Resume.Verifying = true
			m.probe(s, &out)
			return out
		},
	},
	{
		// The server cannot say what it held at the snapshot's resourceVersion: compacted away
		// (410), a resourceVersionMatch it does not serve (400, an aggregated API), or a page
		// that came back empty with more to come. What cannot be proven is not restored.
		cause: fsm.CauseSnapshotUnverifiable, label: "probe: history unknown → drop it, LIST RV=0", retry: true,
		reads: []reading{
			on(answersProbe, fsm.EvListPage).when(verdictIs(unverifiable)),
			on(answersProbe, fsm.EvListFailed).anyOf(anyFailure).when(verificationRefused),
		},
		rows:   []fsm.Transition{stays(fsm.Listing)},
		effect: (*Machine).dropSnapshot,
	},
	{
		// The resume watch ran to the deadline it asked for and the server ended it cleanly
		// without a bookmark at the probe's RV. It was opened after the probe's consistent
		// read had made the watch cache at least as new as that RV, and a watch from the
		// cache is sent every event after its RV up to the cache's before anything later: a
		// stream the server kept open to its deadline has delivered everything up to the
		// probe's RV. kube-apiserver sends no bookmark at the RV a new watcher starts from
		// (the cache's, already past the probe's), so on a quiet resource this end, not a
		// bookmark, is what says the store caught up (docs/semantics.md, "Persisted cache").
		cause: fsm.CauseCaughtUpAtDeadline, label: "catch-up watch ended at its deadline → synced, re-WATCH",
		retry: true, avoidsList: fsm.AvoidsList,
		reads: []reading{on(answersWatch, fsm.EvWatchEnded).when(endedAtCatchUpDeadline)},
		rows:  []fsm.Transition{stays(fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.Synced = true
			s.Resume = fsm.ResumeState{}
			m.watchFailed(s, &e, &out)
			m.openWatch(s, &out)
			return out
		},
	},
	{
		// The resume watch ended early, or with a failure, before reaching the probe's RV
		// (a reset, a server going away): what it delivered proves nothing past its last
		// event. A relist bounds how long the store stays unsynced; it skips the unchanged
		// items of the restored store.
		cause: fsm.CauseCatchUpMissed, label: "watch ended before catching up → LIST at last RV", retry: true,
		reads: []reading{on(answersWatch, fsm.EvWatchEnded).when(catchUpCut)},
		rows:  []fsm.Transition{moves(fsm.Watching, fsm.Relisting)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.watchFailed(s, &e, &out)
			return out
		},
	},
}

// catchUpWatchTimeout is the timeoutSeconds of a watch that resumes a restored snapshot and
// has not caught up yet. kube-apiserver's watch cache sends a watcher's bookmark about every
// minute, and also 2 s before the watch's deadline (its cacheWatcher.nextBookmarkTime), on a
// timer that ticks every 1–1.25 s: with a 3 s deadline the bookmark — at the watch cache's
// resourceVersion, at or past the probe's — comes 1 to 2.25 s after the watch opened, where a
// quiet resource would otherwise leave the store unsynced for one to two minutes (measured on
// kube-apiserver v1.37: synced 0.7–1.4 s after the start; 2.6–3.2 s with the 5 s deadline asked
// before). Under 3 s the bookmark's time would be at or before the watcher's start, and the
// server sends none; 3 s leaves it at least 0.75 s before the deadline, and a server that sends
// none ends the watch at the deadline, which catches up too (caught-up-at-deadline). The watch
// after it asks for the usual timeout (docs/semantics.md, "Persisted cache").
const catchUpWatchTimeout = 3

// Conditions of the resume rules' readings.

func startsFromSnapshot(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return s.Seq == 0 && e.ResourceVersion != ""
}

// endedAtCatchUpDeadline: the catch-up watch ended cleanly no earlier than a second before the
// deadline it asked for (Resume.Timeout, which WatchTimeoutMax may have shortened; the
// server's timer and ours start a round trip apart), and no frame came in the second before
// its end. The server sends the events it owes a new watcher back to back, so a quiet last
// second says it had sent them all; a stream still delivering when the server's timer ended
// it may have been cut in the middle of them.
func endedAtCatchUpDeadline(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	last := s.Resume.LastFrame
	return s.Resume.CatchingUp && e.Failure == nil && s.Watch.Open &&
		e.Now.Sub(s.Watch.OpenedAt) >= time.Duration(s.Resume.Timeout)*time.Second-catchUpQuietTail &&
		(last == 0 || fsm.InstantOf(e.Now).Sub(last) >= catchUpQuietTail)
}

// catchUpQuietTail is how long a catch-up watch must have been quiet before the server ended it
// for that end to count as caught up.
const catchUpQuietTail = time.Second

func catchUpCut(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return s.Resume.CatchingUp && !endedAtCatchUpDeadline(m, s, e)
}

// snapshotResumable: the probe's page says the snapshot is not ahead of the server. Both RVs
// are read as kube-apiserver writes them, decimal etcd revisions; the API says RVs are opaque,
// so one that is not a number is not compared, and the snapshot is dropped.
func snapshotResumable(s *fsm.Snapshot, e *fsm.Event) bool {
	snap, ok1 := parseRV(s.Resume.RV)
	now, ok2 := parseRV(e.ResourceVersion)
	return ok1 && ok2 && snap <= now
}

func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// verdict is what the page of the probe or of the verification says of the snapshot.
type verdict uint8

const (
	// probedWhole: the probe's page holds the whole collection.
	probedWhole verdict = iota
	// snapshotAhead: the snapshot's resourceVersion is past the server's, or not comparable.
	snapshotAhead
	// anotherHistory: an item contradicts the snapshot, or the server held nothing at its
	// resourceVersion where the snapshot holds objects.
	anotherHistory
	// sameHistory: an item witnessed the snapshot and none contradicted it, or the server
	// held nothing at its resourceVersion and neither does the snapshot.
	sameHistory
	// unproven: the probe's items say nothing of the snapshot's history.
	unproven
	// unverifiable: the verification's page came back empty with more to come.
	unverifiable
)

// verdictOf reads the page that ends the probe or the verification (docs/semantics.md,
// "Persisted cache"). The verdicts exclude each other: each rule reads one.
func verdictOf(s *fsm.Snapshot, e *fsm.Event) verdict {
	r := &s.Resume
	switch {
	case !r.Verifying && e.Continue == "":
		return probedWhole
	case !r.Verifying && !snapshotResumable(s, e):
		return snapshotAhead
	case r.Contradicted:
		return anotherHistory
	case r.Witnessed:
		return sameHistory
	case !r.Verifying:
		return unproven
	case e.Continue != "":
		return unverifiable
	case r.Items == 0:
		return sameHistory
	}
	return anotherHistory
}

func verdictIs(v verdict) func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	return func(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool { return verdictOf(s, &e) == v }
}

// witness notes what an item of the probe or of the verification says of the snapshot's
// history. An item of the verification is as the collection was at the snapshot's
// resourceVersion; an item of the probe is current, and was so at the snapshot's
// resourceVersion too if it has not changed since (its own resourceVersion is not past the
// snapshot's). Either way the snapshot, consistent at its resourceVersion, must hold it — same
// key, resourceVersion and uid — if it is of the server's history: uids are random, so a
// cluster created again with the same names and resourceVersions has none of them.
func witness(s *fsm.Snapshot, e *fsm.Event) {
	r := &s.Resume
	if !r.Verifying {
		snap, ok1 := parseRV(r.RV)
		item, ok2 := parseRV(e.ResourceVersion)
		if !ok1 || !ok2 || item > snap {
			return
		}
	}
	if e.InSnapshot {
		r.Witnessed = true
	} else {
		r.Contradicted = true
	}
}

// verificationRefused: the verification failed in a way that will not pass — the snapshot's
// resourceVersion compacted away (410), too large, or a request the server will not serve
// (400: an aggregated API without resourceVersionMatch=Exact). A refusal that may pass (401,
// 403, 404 while a restarted server's authorizer syncs) and a busy server are waited out as
// any failed probe is.
func verificationRefused(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	if !s.Resume.Verifying {
		return false
	}
	switch classify(e.Failure) {
	case fsm.ClassExpired, fsm.ClassTooLargeRV:
		return true
	case fsm.ClassRejected:
		err := statusError(e.Failure)
		return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)
	}
	return false
}

// probeLimit is how many items the probe asks for: a LIST's page when the snapshot held no
// more than a page — the collection likely still fits one, and a page without a continue token
// is a full state at once — and one otherwise, since a larger collection resumes through the
// watch and the probe's items would be read for nothing (docs/semantics.md, "Persisted
// cache").
func (m *Machine) probeLimit(s *fsm.Snapshot, items int) int64 {
	if page := m.pageLimit(s); page > 0 && int64(items) <= page {
		return page
	}
	return 1
}

// probe asks for the consistent read the snapshot is measured against: Limit items of a LIST at
// RV "", which the server answers at its current resourceVersion; or, verifying, the first item
// of the collection as it was at the snapshot's own resourceVersion. Both are compared with the
// snapshot as they arrive.
func (m *Machine) probe(s *fsm.Snapshot, out *[]fsm.Command) {
	s.Request = m.nextID(s)
	s.List.RV, s.List.Continuing, s.List.Full, s.List.Whole, s.List.Continue = "", false, false, false, ""
	s.Resume.Witnessed, s.Resume.Contradicted = false, false
	c := fsm.Command{Kind: fsm.CmdListPage, Request: s.Request, RVSet: true, Limit: s.Resume.Limit, AgainstSnapshot: true}
	if s.Resume.Verifying {
		c.ResourceVersion, c.Match, c.Limit = s.Resume.RV, "Exact", 1
	}
	emit(out, c)
}

// dropSnapshot lets go of a snapshot that will not be restored, and lists as any first start.
func (m *Machine) dropSnapshot(s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
	m.endRequest(s, &e, &out)
	discardStaged(s, &out)
	s.Resume = fsm.ResumeState{}
	emit(&out, fsm.Command{Kind: fsm.CmdDropSnapshot})
	m.startListing(s, &out)
	return out
}

// stageHeldPage holds a probe page's items that came with the page rather than one by one.
func stageHeldPage(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	n := len(*out)
	stagePage(s, e, out)
	for i := n; i < len(*out); i++ {
		(*out)[i].Hold = true
	}
}

// resume restores the snapshot and watches from its resourceVersion. The store is synced at
// once when the snapshot is as new as the probe (nothing happened since it was written);
// otherwise once the watch reaches the probe's RV (catchUp). The RV's age is unknown — the
// snapshot may be minutes old — so it is treated as past ResumeRVLifetime: a 410 relists at
// once (no re-watch on a fresh connection for a young watch cache) and a re-watch's wait is
// not cut short for it.
func (m *Machine) resume(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	target := s.Resume.Target // the probe's, when the verification's page is the one read
	if !s.Resume.Verifying {
		target, _ = parseRV(e.ResourceVersion)
	}
	snap, _ := parseRV(s.Resume.RV)
	emit(out, fsm.Command{Kind: fsm.CmdRestore, ResourceVersion: s.Resume.RV, ItemCount: s.Resume.Items})
	s.LastRV, s.RVUnusable, s.RVAdvancedAt = s.Resume.RV, false, zeroTime
	s.Resume = fsm.ResumeState{}
	if snap >= target {
		s.Synced = true
	} else {
		s.Resume.CatchingUp, s.Resume.Target = true, target
	}
	forgetFrames(s)
	m.openWatch(s, out)
}

// catchUp notes a watch's progress to rv while the restored store is catching up: at or past
// the probe's RV, the store is as new as the consistent read taken at start, and synced. It is
// called only while catching up, so the hot path pays one test of a flag.
func catchUp(s *fsm.Snapshot, rv string) {
	if n, ok := parseRV(rv); ok && n >= s.Resume.Target {
		s.Synced = true
		s.Resume = fsm.ResumeState{}
	}
}

// Persistable says whether the store is consistent at LastRV, so that the driver may persist
// it: it holds a full state — synced, or a restored snapshot catching up — with every event up
// to LastRV applied, and no listing or replacement under way (Watching, or waiting to
// re-watch). The driver saves only then (docs/semantics.md, "Persisted cache").
func Persistable(s *fsm.Snapshot) bool {
	if (!s.Synced && !s.Resume.CatchingUp) || s.LastRV == "" {
		return false
	}
	switch s.State {
	case fsm.Watching:
		return true
	case fsm.Backoff:
		return s.Wait.Next == fsm.Watching
	}
	return false
}
