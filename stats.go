package rewatch

import (
	"fmt"
	"sync"
	"time"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Stats summarises a reflector's life: what it asked of the server and what it avoided.
type Stats struct {
	State fsm.State
	// LastResourceVersion is the last resourceVersion observed.
	LastResourceVersion string
	Synced              bool
	// Lists counts LIST operations (a paginated list counts once; the one-item probe of a
	// start from a persisted snapshot counts as one); ListPages counts requests.
	Lists, ListPages int
	Watches          int
	// Retries counts, by cause, every failure the reflector answered by trying again.
	Retries map[fsm.Cause]int
	// ListsAvoided counts watch failures answered by a re-watch where a relist-on-error
	// reflector would have listed everything again.
	ListsAvoided int
	// Relists counts relists: listings of the synced store after the watch could not be
	// resumed, each once however many requests it took (the machine's Snapshot.Relists).
	Relists int
	// BackingOff is the time spent waiting on backoff timers.
	BackingOff time.Duration
	// WatchEvents counts ADDED/MODIFIED/DELETED/BOOKMARK frames.
	WatchEvents int
	// Objects is the store's size when the store can tell (-1 otherwise).
	Objects int
	// LastFailures holds the most recent failure of each cause, with the server's message;
	// LastFailure is the most recent of all (nil before any).
	LastFailures map[fsm.Cause]Failure
	LastFailure  *Failure
	// WireFormat is what the reflector asks the server for ("auto (protobuf, json)", "json", …);
	// AnsweredFormat the format of the server's last successful answer ("" before the first).
	WireFormat, AnsweredFormat string
	// Start says how the start went: listed, resumed from a persisted snapshot, relisted
	// after restoring one (and how much of that relist was decoded), or why a snapshot was
	// not used (docs/semantics.md, "Persisted cache").
	Start Start
	// ListFailing is a listing — the first, or a relist while the store keeps serving the
	// state it had — that has failed and not completed since: the store has not been refreshed
	// since ListFailing.Since. nil while no listing is failing (docs/semantics.md,
	// "Visibility").
	ListFailing *ListFailing
	// Persist is how the persisted cache's saves go: nil until the first save ended, or
	// without a persisted cache (docs/semantics.md, "Persisted cache").
	Persist *PersistStats
}

// PersistStats is how the saves of a persisted cache go.
type PersistStats struct {
	// Saves counts the saves that succeeded; LastSaved, LastSavedRV and LastSavedObjects
	// describe the last of them (zero: none yet).
	Saves            int
	LastSaved        time.Time
	LastSavedRV      string
	LastSavedObjects int
	// Failures counts the saves that failed since the last that succeeded (0: saving works),
	// FailingSince is when the first of them ended, and LastError is the last one's error.
	Failures     int
	FailingSince time.Time
	LastError    string
}

func (p PersistStats) String() string {
	saved := "nothing saved yet"
	if p.Saves > 0 {
		saved = fmt.Sprintf("%d saves, the last at rv %s (%d objects)", p.Saves, p.LastSavedRV, p.LastSavedObjects)
	}
	if p.Failures == 0 {
		return saved
	}
	return fmt.Sprintf("FAILING since %s (%d failures): %s; %s", p.FailingSince.Format(time.RFC3339), p.Failures, p.LastError, saved)
}

// StartWay is which way a reflector's start went.
type StartWay string

// The ways a start goes (docs/semantics.md, "Persisted cache").
const (
	// StartListed: no persisted snapshot; a LIST of everything.
	StartListed StartWay = "listed"
	// StartRefused: a snapshot there was could not be loaded (Start.Refused says why); a LIST.
	StartRefused StartWay = "refused"
	// StartProbing: the snapshot waits for the probe, the consistent read it is measured
	// against.
	StartProbing StartWay = "probing"
	// StartSnapshotAhead: the snapshot was ahead of the server (or its RV not comparable),
	// dropped; a LIST.
	StartSnapshotAhead StartWay = "snapshot-ahead"
	// StartSnapshotForeign: the snapshot was of another history than the server's (a cluster
	// created again at the same address), dropped; a LIST.
	StartSnapshotForeign StartWay = "snapshot-foreign"
	// StartSnapshotUnverifiable: the server could not say whether the snapshot was of its
	// history (compacted past it), dropped; a LIST.
	StartSnapshotUnverifiable StartWay = "snapshot-unverifiable"
	// StartProbedWhole: the probe's page held the whole collection, a full state at once:
	// synced after one request; Start.Decoded of Start.Listed items were decoded, the rest
	// taken from the snapshot.
	StartProbedWhole StartWay = "probed-whole"
	// StartResuming: the snapshot is restored and the watch resumed from its RV; not synced
	// until the watch reaches the probe's RV.
	StartResuming StartWay = "resuming"
	// StartResumed: the restored store caught up through the watch: no LIST of everything.
	StartResumed StartWay = "resumed"
	// StartRelisted: the restored store was relisted (its RV had left the server's history,
	// or the watch could not catch up); Start.Decoded of Start.Listed items were decoded.
	StartRelisted StartWay = "relisted"
)

// Start is how a reflector's start went.
type Start struct {
	Way StartWay
	// SnapshotRV and SnapshotItems describe the persisted snapshot loaded ("": none); Refused
	// is why one could not be.
	SnapshotRV    string
	SnapshotItems int
	Refused       string
	// Restored counts the objects put into the store from the snapshot.
	Restored int
	// Listed and Decoded count the items of the relist that followed a restore, and those of
	// them decoded: the rest the store held at the same resourceVersion.
	Listed, Decoded int
}

func (s Start) String() string {
	switch s.Way {
	case StartRefused:
		return "listed; snapshot refused: " + s.Refused
	case StartProbing:
		return fmt.Sprintf("probing the server for the snapshot at rv %s", s.SnapshotRV)
	case StartSnapshotAhead:
		return fmt.Sprintf("listed; the snapshot at rv %s is ahead of the server", s.SnapshotRV)
	case StartSnapshotForeign:
		return fmt.Sprintf("listed; the snapshot at rv %s is of another history than the server's (another cluster at the same address?)", s.SnapshotRV)
	case StartSnapshotUnverifiable:
		return fmt.Sprintf("listed; the server cannot say whether the snapshot at rv %s is of its history", s.SnapshotRV)
	case StartProbedWhole:
		return fmt.Sprintf("listed in one page: %d of %d items decoded (snapshot at rv %s)", s.Decoded, s.Listed, s.SnapshotRV)
	case StartResuming:
		return fmt.Sprintf("restored %d objects at rv %s, catching up", s.Restored, s.SnapshotRV)
	case StartResumed:
		return fmt.Sprintf("resumed at rv %s with %d objects restored, no LIST", s.SnapshotRV, s.Restored)
	case StartRelisted:
		return fmt.Sprintf("relisted: %d of %d items decoded (%d objects restored at rv %s)", s.Decoded, s.Listed, s.Restored, s.SnapshotRV)
	}
	return string(s.Way)
}

// ListFailing says since when and why a listing has not been able to complete.
type ListFailing struct {
	// Since is the first failure of the listing; Failures counts its failed requests.
	Since    time.Time
	Failures int
	// Relist: the store holds an earlier state (HasSynced stayed true); otherwise the first
	// listing has not completed and the store is empty.
	Relist bool
	// Last is the most recent failure.
	Last Failure
}

// Failure is one failure the reflector answered, as Stats keeps it.
type Failure struct {
	At    time.Time
	Cause fsm.Cause
	// Code and Reason are the HTTP code and the Status reason, when the server answered.
	Code   int
	Reason string
	// Message is the server's Status message, or what went wrong on the connection.
	Message string
	// RetryAfter is the server's Retry-After, when it gave one.
	RetryAfter time.Duration
	// Err is the failure as an error apimachinery's apierrors predicates understand.
	Err error
}

func (f Failure) String() string {
	if f.Code != 0 {
		return fmt.Sprintf("%s: %d %s: %s", f.Cause, f.Code, f.Reason, f.Message)
	}
	return fmt.Sprintf("%s: %s", f.Cause, f.Message)
}

func failureOf(t driver.Transition) Failure {
	f := t.Event.Failure
	out := Failure{At: t.Event.Now, Cause: t.Cause, Code: f.Code, Message: f.Message, Err: f.Err()}
	if f.HasRetryAfter {
		out.RetryAfter = f.RetryAfter
	}
	if f.Status != nil {
		out.Reason = string(f.Status.Reason)
		if f.Status.Code != 0 {
			out.Code = int(f.Status.Code)
		}
		if d := f.Status.Details; d != nil && d.RetryAfterSeconds > 0 && !f.HasRetryAfter {
			out.RetryAfter = time.Duration(d.RetryAfterSeconds) * time.Second
		}
	}
	return out
}

// counter folds transitions into Stats and forwards them to Metrics.
type counter struct {
	mu      sync.Mutex
	st      Stats
	metrics Metrics
	sizer   interface{ Len() int }

	armedAt     time.Time
	armedReason fsm.Cause
	// storeFailed: a command failed (the store refused a Replace or an object) and the
	// reflector is stopping. Synced keeps the value it had before: the machine's snapshot
	// says synced as soon as it asks for the Replace, not once the store has taken it.
	storeFailed bool
}

func newCounter(m Metrics, store Store) *counter {
	c := &counter{metrics: m, st: Stats{Retries: map[fsm.Cause]int{}, LastFailures: map[fsm.Cause]Failure{}, Objects: -1}}
	c.sizer, _ = store.(interface{ Len() int })
	return c
}

func (c *counter) observe(t driver.Transition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.st
	st.State, st.LastResourceVersion, st.Relists = t.To, t.Snapshot.LastRV, t.Snapshot.Relists.Count
	if t.Err != nil {
		c.storeFailed = true
	}
	if !c.storeFailed {
		st.Synced = t.Snapshot.Synced
	}
	if t.Event.Kind == fsm.EvWatchEvent && t.Cause == fsm.CauseWatchEvent {
		st.WatchEvents++
		if st.Start.Way == StartResuming && t.Snapshot.Synced {
			st.Start.Way = StartResumed // the watch caught up with the probe
		}
		if c.metrics != nil {
			c.metrics.WatchEvent(t.Event.Type)
		}
		return
	}
	if t.Cause == fsm.NoCause {
		return
	}
	c.noteStart(t)
	// What counts as a retry or a LIST avoided is what the cause's rule declares.
	facts := transitions.Table.Facts(t.Cause)
	if facts.Retry {
		st.Retries[t.Cause]++
	}
	var failure *Failure
	if t.Event.Failure != nil {
		f := failureOf(t)
		st.LastFailures[t.Cause] = f
		st.LastFailure, failure = &f, &f
	}
	c.noteListing(t, failure)
	if facts.AvoidsList.Avoids(t.Event.Failure != nil) {
		st.ListsAvoided++
	}
	// Every row out of Backoff (its timer rows, a stop) ends the wait.
	if !c.armedAt.IsZero() && t.From == fsm.Backoff {
		d := t.Event.Now.Sub(c.armedAt)
		st.BackingOff += d
		if c.metrics != nil {
			c.metrics.Waited(c.armedReason, d)
		}
		c.armedAt = time.Time{}
	}
	for _, cmd := range t.Commands {
		switch cmd.Kind {
		case fsm.CmdListPage:
			st.ListPages++
			if cmd.Continue == "" {
				st.Lists++
			}
			c.request("list")
		case fsm.CmdOpenWatch:
			st.Watches++
			c.request("watch")
		case fsm.CmdArmTimer:
			c.armedAt, c.armedReason = t.Event.Now, cmd.Reason
		}
	}
	if c.metrics != nil {
		c.metrics.Transition(t.From, t.To, t.Cause)
		if c.sizer != nil {
			c.metrics.Objects(c.sizer.Len())
		}
	}
}

// observeSave folds how a save went into Stats.Persist.
func (c *counter) observeSave(r driver.SaveResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.st.Persist
	if p == nil {
		p = &PersistStats{}
		c.st.Persist = p
	}
	if r.Err != nil {
		if p.Failures == 0 {
			p.FailingSince = r.At
		}
		p.Failures++
		p.LastError = r.Err.Error()
		return
	}
	p.Saves++
	p.LastSaved, p.LastSavedRV, p.LastSavedObjects = r.At, r.RV, r.Objects
	p.Failures, p.FailingSince, p.LastError = 0, time.Time{}, ""
}

func (c *counter) request(kind string) {
	if c.metrics != nil {
		c.metrics.Request(kind)
	}
}

func (c *counter) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.st
	out.Retries = make(map[fsm.Cause]int, len(c.st.Retries))
	for k, v := range c.st.Retries {
		out.Retries[k] = v
	}
	out.LastFailures = make(map[fsm.Cause]Failure, len(c.st.LastFailures))
	for k, v := range c.st.LastFailures {
		out.LastFailures[k] = v
	}
	if c.st.LastFailure != nil {
		f := *c.st.LastFailure
		out.LastFailure = &f
	}
	if c.st.ListFailing != nil {
		lf := *c.st.ListFailing
		out.ListFailing = &lf
	}
	if c.st.Persist != nil {
		p := *c.st.Persist
		out.Persist = &p
	}
	if c.sizer != nil {
		out.Objects = c.sizer.Len()
	}
	return out
}

// droppedBy is the way a start went when a cause dropped its snapshot.
var droppedBy = map[fsm.Cause]StartWay{
	fsm.CauseSnapshotAhead:        StartSnapshotAhead,
	fsm.CauseSnapshotForeign:      StartSnapshotForeign,
	fsm.CauseSnapshotUnverifiable: StartSnapshotUnverifiable,
	fsm.CauseProbeWhole:           StartProbedWhole,
}

// noteStart follows how the start went: what the start event said of a snapshot, the probe's
// verdict, the restore, and how the restored store got synced — through the watch, or by a
// relist whose items it counts (docs/semantics.md, "Persisted cache").
func (c *counter) noteStart(t driver.Transition) {
	st := &c.st.Start
	if t.Event.Kind == fsm.EvStart {
		*st = Start{Way: StartListed, SnapshotRV: t.Event.ResourceVersion, SnapshotItems: t.Event.ItemCount, Refused: t.Event.Refused}
		switch {
		case st.Refused != "":
			st.Way = StartRefused
		case st.SnapshotRV != "":
			st.Way = StartProbing
		}
	}
	if st.Way != StartProbing && st.Way != StartResuming && st.Way != StartProbedWhole {
		return
	}
	for _, cmd := range t.Commands {
		switch cmd.Kind {
		case fsm.CmdDropSnapshot:
			st.Way = droppedBy[t.Cause]
		case fsm.CmdRestore:
			st.Way, st.Restored = StartResuming, cmd.ItemCount
		case fsm.CmdStage:
			if cmd.Key != "" && len(cmd.Items) == 0 {
				st.Listed++
				if cmd.Object != nil {
					st.Decoded++
				}
			} else {
				n := max(cmd.ItemCount, len(cmd.Items))
				st.Listed += n
				st.Decoded += len(cmd.Items)
			}
		case fsm.CmdDiscardStaged:
			if cmd.ItemCount == 0 {
				st.Listed, st.Decoded = 0, 0 // the relist starts over
			} else { // a page that broke off, asked again
				st.Listed = max(st.Listed-cmd.ItemCount, 0)
				st.Decoded = min(st.Decoded, st.Listed)
			}
		}
	}
	if st.Way == StartResuming && t.Snapshot.Synced {
		st.Way = StartResumed
		if t.Cause == fsm.CauseListComplete || t.Cause == fsm.CauseInitialEventsEnd {
			st.Way = StartRelisted
		}
	}
}

// noteListing keeps ListFailing: a failure answering a listing (a LIST request, or a watch-list
// stream before its initial state) starts or extends it; a completed listing ends it. failure
// is the transition's failure as observe recorded it (nil: none).
func (c *counter) noteListing(t driver.Transition, failure *Failure) {
	switch {
	case t.Cause == fsm.CauseListComplete || t.Cause == fsm.CauseInitialEventsEnd:
		c.st.ListFailing = nil
	case failure != nil && (t.From == fsm.Listing || t.From == fsm.Relisting):
		lf := c.st.ListFailing
		if lf == nil {
			lf = &ListFailing{Since: t.Event.Now, Relist: t.From == fsm.Relisting}
			c.st.ListFailing = lf
		}
		lf.Failures++
		lf.Last = *failure
	}
}

// StatsObserver folds a reflector's transitions into Stats and forwards them to Metrics, as a
// Reflector does for its own: it is the driver.Observer behind the Stats of reflectors the
// façade does not run (package informer's). Safe for one reflector's goroutine to Observe while
// any goroutine reads Stats.
type StatsObserver struct {
	c       *counter
	formats interface {
		WireFormat() string
		AnsweredFormat() string
	}
}

// NewStatsObserver returns a StatsObserver forwarding to m (nil: none). size, when set, is the
// store's size for Stats.Objects and Metrics.Objects; transport, when it says what wire format
// it asks for and got (the HTTP transport does), fills Stats.WireFormat and AnsweredFormat.
func NewStatsObserver(m Metrics, size func() int, transport driver.Transport) *StatsObserver {
	o := &StatsObserver{c: newCounter(m, nil)}
	if size != nil {
		o.c.sizer = lenFunc(size)
	}
	o.formats, _ = transport.(interface {
		WireFormat() string
		AnsweredFormat() string
	})
	return o
}

type lenFunc func() int

func (f lenFunc) Len() int { return f() }

// Observe takes one transition; it never fails.
func (o *StatsObserver) Observe(t driver.Transition) error {
	o.c.observe(t)
	return nil
}

// ObserveSave takes how a save of the persisted store went (driver.SaveObserver).
func (o *StatsObserver) ObserveSave(r driver.SaveResult) { o.c.observeSave(r) }

// Stats is a snapshot of what the reflector has done so far.
func (o *StatsObserver) Stats() Stats {
	st := o.c.snapshot()
	if o.formats != nil {
		st.WireFormat, st.AnsweredFormat = o.formats.WireFormat(), o.formats.AnsweredFormat()
	}
	return st
}
