package transitions

import (
	"strconv"
	"time"

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
		cause: fsm.CauseStartFromSnapshot, label: "start from a snapshot → probe LIST RV=\"\" limit=1",
		reads: []reading{on(answersNothing, fsm.EvStart).when(startsFromSnapshot)},
		rows:  []fsm.Transition{stays(fsm.Listing)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.Resume = fsm.ResumeState{RV: e.ResourceVersion, Items: e.ItemCount, Probing: true}
			m.probe(s, &out)
			return out
		},
	},
	{
		// The probe's one item says nothing the page does not: it is not staged.
		cause: fsm.CauseProbeItem, label: "probe item (not kept)", accepted: true,
		reads: []reading{on(answersProbe, fsm.EvListItem)},
		rows:  []fsm.Transition{stays(fsm.Listing)},
	},
	{
		cause: fsm.CauseResume, label: "probe: snapshot not ahead → restore, WATCH", accepted: true,
		reads: []reading{on(answersProbe, fsm.EvListPage).when(snapshotResumable)},
		rows:  []fsm.Transition{moves(fsm.Listing, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
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
		reads: []reading{on(answersProbe, fsm.EvListPage).when(not(snapshotResumable))},
		rows:  []fsm.Transition{stays(fsm.Listing)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.Request = 0
			s.Resume = fsm.ResumeState{}
			emit(&out, fsm.Command{Kind: fsm.CmdDropSnapshot})
			m.startListing(s, &out)
			return out
		},
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
// timer that ticks about every second: with a 5 s deadline the bookmark — at the watch cache's
// resourceVersion, at or past the probe's — comes 2 to 4 s after the watch opened, where a
// quiet resource would otherwise leave the store unsynced for one to two minutes (measured on
// kube-apiserver v1.37: synced 2.6–3.2 s after the start). A deadline under 3 s would leave the
// bookmark less than a second of margin. The watch after it asks for the usual timeout
// (docs/semantics.md, "Persisted cache").
const catchUpWatchTimeout = 5

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
		(last.IsZero() || e.Now.Sub(last) >= catchUpQuietTail)
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
func snapshotResumable(_ *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	snap, ok1 := parseRV(s.Resume.RV)
	now, ok2 := parseRV(e.ResourceVersion)
	return ok1 && ok2 && snap <= now
}

func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// probe asks for the consistent read the snapshot is measured against: one item of a LIST at
// RV "", which the server answers at its current resourceVersion.
func (m *Machine) probe(s *fsm.Snapshot, out *[]fsm.Command) {
	s.Request = m.nextID(s)
	s.List.RV, s.List.Continuing, s.List.Full, s.List.Whole, s.List.Continue = "", false, false, false, ""
	emit(out, fsm.Command{Kind: fsm.CmdListPage, Request: s.Request, RVSet: true, Limit: 1})
}

// resume restores the snapshot and watches from its resourceVersion. The store is synced at
// once when the snapshot is as new as the probe (nothing happened since it was written);
// otherwise once the watch reaches the probe's RV (catchUp). The RV's age is unknown — the
// snapshot may be minutes old — so it is treated as past ResumeRVLifetime: a 410 relists at
// once (no re-watch on a fresh connection for a young watch cache) and a re-watch's wait is
// not cut short for it.
func (m *Machine) resume(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	target, _ := parseRV(e.ResourceVersion)
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
