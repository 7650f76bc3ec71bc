package transitions

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// play drives a machine through events that answer whatever is in flight, for setting up a
// state in which the next event takes a given row.
type play struct {
	t   *testing.T
	m   *Machine
	s   fsm.Snapshot
	now time.Time
}

func newPlay(t *testing.T, cfg Config) *play {
	cfg.Seed = 1
	m := MustNew(cfg)
	return &play{t: t, m: m, s: m.Initial(), now: benchT0}
}

func (p *play) event(kind fsm.EventKind) fsm.Event {
	return fsm.Event{Kind: kind, Now: p.now, Request: p.s.Request}
}

func (p *play) step(e fsm.Event) []fsm.Command {
	p.t.Helper()
	from := p.s.State
	out := p.m.Step(&p.s, &e, nil)
	require.NotEqual(p.t, fsm.NoCause, p.s.Cause, "setup event %s ignored in %s", e, from)
	return out
}

func (p *play) start() *play {
	p.step(fsm.Event{Kind: fsm.EvStart, Now: p.now})
	return p
}

func (p *play) page(rv, cont string) *play {
	e := p.event(fsm.EvListPage)
	e.ResourceVersion, e.Continue, e.ItemCount = rv, cont, 2
	p.step(e)
	return p
}

func (p *play) watching() *play {
	p.start()
	if p.m.cfg.WatchList {
		e := p.event(fsm.EvWatchEvent)
		e.Type, e.ResourceVersion, e.InitialEventsEnd = fsm.Bookmark, "100", true
		p.step(e)
		return p
	}
	return p.page("100", "")
}

func (p *play) watchFails(code int) *play {
	e := p.event(fsm.EvWatchOpenFailed)
	e.Failure = httpBare(code)
	p.step(e)
	return p
}

func (p *play) fire() *play {
	p.now = p.now.Add(time.Hour)
	p.step(fsm.Event{Kind: fsm.EvTimerFired, Now: p.now, Timer: p.s.Wait.Timer})
	return p
}

func (p *play) initialEvent() *play {
	e := p.event(fsm.EvWatchEvent)
	e.Type, e.Key, e.ResourceVersion = fsm.Added, "ns/a", "5"
	p.step(e)
	return p
}

func failing(kind fsm.EventKind, f *fsm.Failure) func(*play) fsm.Event {
	return func(p *play) fsm.Event { e := p.event(kind); e.Failure = f; return e }
}

func plain(kind fsm.EventKind) func(*play) fsm.Event {
	return func(p *play) fsm.Event { return p.event(kind) }
}

// snapshotStart is the start from a persisted snapshot of two objects at RV 100.
func snapshotStart(p *play) fsm.Event {
	e := p.event(fsm.EvStart)
	e.Request, e.ResourceVersion, e.ItemCount = 0, "100", 2
	return e
}

// probePage is the probe's page, at rv, with a continue token: the collection holds more.
func probePage(rv string) func(*play) fsm.Event {
	return func(p *play) fsm.Event {
		e := p.event(fsm.EvListPage)
		e.ResourceVersion, e.Continue, e.ItemCount = rv, "c1", 1
		return e
	}
}

// probeItem is an item of the probe (or verification) at rv, which the snapshot holds or not.
func probeItem(rv string, inSnapshot bool) func(*play) fsm.Event {
	return func(p *play) fsm.Event {
		e := p.event(fsm.EvListItem)
		e.Key, e.ResourceVersion, e.InSnapshot = "ns/a", rv, inSnapshot
		return e
	}
}

// rowCase sets a machine up in the row's From state and returns the event that takes the row,
// with the commands the row must give, by kind.
type rowCase struct {
	cfg   Config
	setup func(*play)
	event func(*play) fsm.Event
	want  []fsm.CommandKind
}

var (
	relisting   = func(p *play) { p.watching().watchFails(410) }
	watchListOn = Config{WatchList: true}
)

// rowCases has one case per row of Table: TestEveryTableRowHasItsEffects fails for a row
// without one, so a new row comes with what it must do.
func rowCases() map[fsm.Transition]rowCase {
	row := func(from fsm.State, c fsm.Cause) fsm.Transition {
		r, ok := Table.Lookup(from, c)
		if !ok {
			panic(fmt.Sprintf("no row %s --%s-->", from, c))
		}
		return r
	}
	const (
		list    = fsm.CmdListPage
		watch   = fsm.CmdOpenWatch
		arm     = fsm.CmdArmTimer
		stage   = fsm.CmdStage
		replace = fsm.CmdReplaceStore
		discard = fsm.CmdDiscardStaged
		cancel  = fsm.CmdCancelRequest
		stopped = fsm.CmdStopped
	)
	cases := map[fsm.Transition]rowCase{}
	// Listing and Relisting list alike; only their setup differs.
	for _, from := range []fsm.State{fsm.Listing, fsm.Relisting} {
		setup := func(p *play) { p.start() }
		if from == fsm.Relisting {
			setup = relisting
		}
		cases[row(from, fsm.CauseListItem)] = rowCase{setup: setup,
			event: func(p *play) fsm.Event {
				e := p.event(fsm.EvListItem)
				e.Key, e.ResourceVersion = "ns/a", "7"
				return e
			},
			want: []fsm.CommandKind{stage}}
		cases[row(from, fsm.CauseListPageMore)] = rowCase{setup: setup,
			event: func(p *play) fsm.Event { e := p.event(fsm.EvListPage); e.Continue, e.ItemCount = "c1", 2; return e },
			want:  []fsm.CommandKind{stage, list}}
		cases[row(from, fsm.CauseListComplete)] = rowCase{setup: setup,
			event: func(p *play) fsm.Event {
				e := p.event(fsm.EvListPage)
				e.ResourceVersion, e.ItemCount = "200", 2
				return e
			},
			want: []fsm.CommandKind{stage, replace, watch}}
		cases[row(from, fsm.CauseListExpired)] = rowCase{setup: setup,
			event: failing(fsm.EvListFailed, httpBare(410)), want: []fsm.CommandKind{list}}
		cases[row(from, fsm.CauseContinueExpired)] = rowCase{setup: func(p *play) { setup(p); p.page("", "c1") },
			event: failing(fsm.EvListFailed, httpBare(410)), want: []fsm.CommandKind{discard, list}}
		cases[row(from, fsm.CauseListFailed)] = rowCase{setup: setup,
			event: failing(fsm.EvListFailed, httpBare(500)), want: []fsm.CommandKind{arm}}
		cases[row(from, fsm.CauseListRejected)] = rowCase{setup: setup,
			event: failing(fsm.EvListFailed, httpBare(403)), want: []fsm.CommandKind{arm}}
		cases[row(from, fsm.CauseWatchListOpened)] = rowCase{cfg: watchListOn, setup: setup,
			event: plain(fsm.EvWatchOpened), want: []fsm.CommandKind{fsm.CmdWatchDeadline}}
		streamOpen := func(p *play) { setup(p); p.step(p.event(fsm.EvWatchOpened)); p.initialEvent() }
		cases[row(from, fsm.CauseWatchListNoEnd)] = rowCase{cfg: watchListOn, setup: streamOpen,
			event: func(p *play) fsm.Event {
				e := p.event(fsm.EvWatchEvent)
				e.Type, e.ResourceVersion = fsm.Bookmark, "300"
				return e
			},
			want: []fsm.CommandKind{fsm.CmdCancelTimer, cancel, discard, list}}
		cases[row(from, fsm.CauseInitialEventsCheck)] = rowCase{cfg: watchListOn, setup: streamOpen,
			event: func(p *play) fsm.Event {
				return fsm.Event{Kind: fsm.EvTimerFired, Now: p.now.Add(time.Second), Timer: p.s.List.EndTimer}
			},
			want: []fsm.CommandKind{fsm.CmdWatchDeadline}}
		cases[row(from, fsm.CauseInitialEvent)] = rowCase{cfg: watchListOn, setup: setup,
			event: func(p *play) fsm.Event { e := p.event(fsm.EvWatchEvent); e.Type, e.Key = fsm.Added, "ns/a"; return e },
			want:  []fsm.CommandKind{stage}}
		cases[row(from, fsm.CauseInitialEventsEnd)] = rowCase{cfg: watchListOn, setup: func(p *play) { setup(p); p.initialEvent() },
			event: func(p *play) fsm.Event {
				e := p.event(fsm.EvWatchEvent)
				e.Type, e.ResourceVersion, e.InitialEventsEnd = fsm.Bookmark, "300", true
				return e
			},
			want: []fsm.CommandKind{replace}}
		cases[row(from, fsm.CauseWatchListUnsupported)] = rowCase{cfg: watchListOn, setup: func(p *play) { setup(p); p.initialEvent() },
			event: failing(fsm.EvWatchOpenFailed, httpBare(422)), want: []fsm.CommandKind{discard, list}}
		cases[row(from, fsm.CauseWatchListFailed)] = rowCase{cfg: watchListOn, setup: streamOpen,
			event: failing(fsm.EvWatchError, httpBare(500)), want: []fsm.CommandKind{fsm.CmdCancelTimer, cancel, discard, list}}
		cases[row(from, fsm.CauseInitialTransferCut)] = rowCase{cfg: watchListOn, setup: func(p *play) { setup(p); p.initialEvent() },
			event: plain(fsm.EvWatchEnded), want: []fsm.CommandKind{discard, arm}}
		cases[row(from, fsm.CauseWholeListRefused)] = rowCase{setup: setup,
			event: failing(fsm.EvListFailed, &fsm.Failure{Transport: fsm.TooLarge}), want: []fsm.CommandKind{list}}
		cases[row(from, fsm.CauseListStalled)] = rowCase{setup: setup,
			event: failing(fsm.EvListFailed, &fsm.Failure{Transport: fsm.Stalled}), want: []fsm.CommandKind{arm}}
		cases[row(from, fsm.CausePageTooLarge)] = rowCase{setup: func(p *play) { setup(p); p.page("", "c1") },
			event: failing(fsm.EvListFailed, &fsm.Failure{Transport: fsm.TooLarge}), want: []fsm.CommandKind{list}}
		cases[row(from, fsm.CauseStop)] = rowCase{setup: setup,
			event: plain(fsm.EvStop), want: []fsm.CommandKind{cancel, stopped}}
	}
	cases[row(fsm.Listing, fsm.CauseStart)] = rowCase{setup: func(*play) {},
		event: plain(fsm.EvStart), want: []fsm.CommandKind{list}}

	// A start from a persisted snapshot at RV 100 (docs/semantics.md, "Persisted cache"): the
	// probe, its item — unchanged since the snapshot and held by it, which witnesses the
	// snapshot's history, or not held, which contradicts it — and its page: at RV 150 with
	// more to come (resume, catching up; or another history; or, without a witness, the
	// verification at the snapshot's RV), at 50 (the snapshot is ahead), or without a continue
	// token (the whole collection).
	cases[row(fsm.Listing, fsm.CauseStartFromSnapshot)] = rowCase{setup: func(*play) {},
		event: snapshotStart, want: []fsm.CommandKind{list}}
	probing := func(p *play) { p.step(snapshotStart(p)) }
	witnessed := func(p *play) { probing(p); p.step(probeItem("90", true)(p)) }
	cases[row(fsm.Listing, fsm.CauseProbeItem)] = rowCase{setup: probing,
		event: probeItem("7", true), want: []fsm.CommandKind{stage}}
	cases[row(fsm.Listing, fsm.CauseResume)] = rowCase{setup: witnessed,
		event: probePage("150"), want: []fsm.CommandKind{discard, fsm.CmdRestore, watch}}
	cases[row(fsm.Listing, fsm.CauseSnapshotAhead)] = rowCase{setup: probing,
		event: probePage("50"), want: []fsm.CommandKind{fsm.CmdDropSnapshot, list}}
	cases[row(fsm.Listing, fsm.CauseProbeWhole)] = rowCase{setup: witnessed,
		event: func(p *play) fsm.Event {
			e := probePage("150")(p)
			e.Continue = ""
			return e
		},
		want: []fsm.CommandKind{fsm.CmdDropSnapshot, replace, watch}}
	cases[row(fsm.Listing, fsm.CauseSnapshotForeign)] = rowCase{
		setup: func(p *play) { probing(p); p.step(probeItem("90", false)(p)) },
		event: probePage("150"), want: []fsm.CommandKind{discard, fsm.CmdDropSnapshot, list}}
	cases[row(fsm.Listing, fsm.CauseVerifySnapshot)] = rowCase{setup: probing,
		event: probePage("150"), want: []fsm.CommandKind{list}}
	cases[row(fsm.Listing, fsm.CauseSnapshotUnverifiable)] = rowCase{
		setup: func(p *play) { probing(p); p.step(probePage("150")(p)) },
		event: failing(fsm.EvListFailed, httpBare(410)), want: []fsm.CommandKind{fsm.CmdDropSnapshot, list}}
	resumed := func(p *play) { witnessed(p); p.step(probePage("150")(p)); p.step(p.event(fsm.EvWatchOpened)) }
	cases[row(fsm.Watching, fsm.CauseCatchUpMissed)] = rowCase{
		setup: resumed, event: plain(fsm.EvWatchEnded), want: []fsm.CommandKind{list}}
	cases[row(fsm.Watching, fsm.CauseCaughtUpAtDeadline)] = rowCase{
		setup: resumed,
		event: func(p *play) fsm.Event {
			p.now = p.now.Add(5 * time.Second)
			return p.event(fsm.EvWatchEnded)
		},
		want: []fsm.CommandKind{watch}}

	watching := func(p *play) { p.watching() }
	opened := func(p *play) { p.watching(); p.step(p.event(fsm.EvWatchOpened)) }
	cases[row(fsm.Watching, fsm.CauseWatchOpened)] = rowCase{setup: watching, event: plain(fsm.EvWatchOpened)}
	cases[row(fsm.Watching, fsm.CauseWatchEvent)] = rowCase{setup: opened,
		event: func(p *play) fsm.Event {
			e := p.event(fsm.EvWatchEvent)
			e.Type, e.Key, e.ResourceVersion = fsm.Modified, "ns/a", "101"
			return e
		},
		want: []fsm.CommandKind{fsm.CmdApply}}
	cases[row(fsm.Watching, fsm.CauseServerBusy)] = rowCase{setup: watching,
		event: failing(fsm.EvWatchOpenFailed, httpBare(429)), want: []fsm.CommandKind{arm}}
	cases[row(fsm.Watching, fsm.CauseInternalErrorInWindow)] = rowCase{setup: opened,
		event: failing(fsm.EvWatchError, httpBare(500)), want: []fsm.CommandKind{cancel, arm}}
	cases[row(fsm.Watching, fsm.CauseInternalErrorPastWindow)] = rowCase{
		setup: func(p *play) {
			p.watching()
			for range DefaultInternalErrorRewatches {
				p.watchFails(500).fire()
			}
		},
		event: failing(fsm.EvWatchOpenFailed, httpBare(500)), want: []fsm.CommandKind{list}}
	cases[row(fsm.Watching, fsm.CauseConnectFailed)] = rowCase{setup: watching,
		event: failing(fsm.EvWatchOpenFailed, &fsm.Failure{Transport: fsm.Refused}), want: []fsm.CommandKind{arm}}
	// Told there is one kube-apiserver, a 502 from the gateway before it waits for a relist.
	cases[row(fsm.Watching, fsm.CauseServerUnreachable)] = rowCase{cfg: Config{SingleServer: true}, setup: watching,
		event: failing(fsm.EvWatchOpenFailed, httpBare(502)), want: []fsm.CommandKind{arm}}
	cases[row(fsm.Watching, fsm.CauseStreamEnded)] = rowCase{setup: opened,
		event: plain(fsm.EvWatchEnded), want: []fsm.CommandKind{watch}}
	cases[row(fsm.Watching, fsm.CauseStreamEndedQuickly)] = rowCase{
		setup: func(p *play) { opened(p); p.step(p.event(fsm.EvWatchEnded)); p.step(p.event(fsm.EvWatchOpened)) },
		event: plain(fsm.EvWatchEnded), want: []fsm.CommandKind{arm}}
	cases[row(fsm.Watching, fsm.CauseExpired)] = rowCase{setup: opened,
		event: failing(fsm.EvWatchError, httpBare(410)), want: []fsm.CommandKind{cancel, list}}
	cases[row(fsm.Watching, fsm.CauseExpiredAgain)] = rowCase{setup: func(p *play) { relisting(p); p.page("200", "") },
		event: failing(fsm.EvWatchOpenFailed, httpBare(410)), want: []fsm.CommandKind{arm}}
	cases[row(fsm.Watching, fsm.CauseExpiredYoungCache)] = rowCase{setup: watching,
		event: func(p *play) fsm.Event {
			st := metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
				Message: fsm.TooOldMessage(p.s.LastRV, "100000")}
			return failing(fsm.EvWatchOpenFailed, httpStatus(410, st))(p)
		}, want: []fsm.CommandKind{watch}}
	cases[row(fsm.Watching, fsm.CauseTooLargeRV)] = rowCase{setup: watching,
		event: failing(fsm.EvWatchOpenFailed, httpStatus(504, tooLargeRVStatus())), want: []fsm.CommandKind{arm}}
	cases[row(fsm.Watching, fsm.CauseWatchRejectedOnce)] = rowCase{setup: watching,
		event: failing(fsm.EvWatchOpenFailed, httpBare(403)), want: []fsm.CommandKind{arm}}
	cases[row(fsm.Watching, fsm.CauseWatchRejected)] = rowCase{setup: func(p *play) { p.watching().watchFails(403).fire() },
		event: failing(fsm.EvWatchOpenFailed, httpBare(403)), want: []fsm.CommandKind{arm}}
	// A 401 to a watch once the store synced, with a caller that refreshes credentials: asked,
	// and the answer re-watches.
	refreshing := Config{CredentialsRefresh: true}
	cases[row(fsm.Watching, fsm.CauseRefreshCredentials)] = rowCase{cfg: refreshing, setup: watching,
		event: failing(fsm.EvWatchOpenFailed, httpBare(401)), want: []fsm.CommandKind{fsm.CmdAsk}}
	cases[row(fsm.Watching, fsm.CauseCredentialsRefreshed)] = rowCase{cfg: refreshing,
		setup: func(p *play) { p.watching().watchFails(401) },
		event: func(p *play) fsm.Event {
			e := p.event(fsm.EvAnswer)
			e.Hook = fsm.HookRefreshCredentials
			return e
		}, want: []fsm.CommandKind{watch}}
	// A listing refused with 401 asks too, synced or not, and the answer lists again.
	answer := func(p *play) fsm.Event {
		e := p.event(fsm.EvAnswer)
		e.Hook = fsm.HookRefreshCredentials
		return e
	}
	listRefused := failing(fsm.EvListFailed, httpBare(401))
	cases[row(fsm.Listing, fsm.CauseListRefreshCredentials)] = rowCase{cfg: refreshing,
		setup: func(p *play) { p.step(plain(fsm.EvStart)(p)) }, event: listRefused, want: []fsm.CommandKind{fsm.CmdAsk}}
	cases[row(fsm.Relisting, fsm.CauseListRefreshCredentials)] = rowCase{cfg: refreshing,
		setup: relisting, event: listRefused, want: []fsm.CommandKind{fsm.CmdAsk}}
	cases[row(fsm.Listing, fsm.CauseCredentialsRefreshed)] = rowCase{cfg: refreshing,
		setup: func(p *play) { p.step(plain(fsm.EvStart)(p)); p.step(listRefused(p)) }, event: answer, want: []fsm.CommandKind{list}}
	cases[row(fsm.Relisting, fsm.CauseCredentialsRefreshed)] = rowCase{cfg: refreshing,
		setup: func(p *play) { relisting(p); p.step(listRefused(p)) }, event: answer, want: []fsm.CommandKind{list}}
	cases[row(fsm.Watching, fsm.CauseRelistDeferred)] = rowCase{
		setup: func(p *play) { opened(p); p.m.relistRules = []relistRule{holdRelistsUntil(p.now.Add(time.Minute))} },
		event: failing(fsm.EvWatchError, httpBare(410)), want: []fsm.CommandKind{cancel, arm}}
	// A stream that delivered twice, a second apart, has a cadence: its deadline is armed.
	delivering := func(p *play) {
		opened(p)
		for _, rv := range []string{"101", "102"} {
			p.now = p.now.Add(time.Second)
			e := p.event(fsm.EvWatchEvent)
			e.Type, e.Key, e.ResourceVersion = fsm.Modified, "ns/a", rv
			p.step(e)
		}
		require.NotZero(p.t, p.s.Watch.Silence.Timer, "a delivering stream has a deadline")
	}
	deadline := func(p *play) fsm.Event {
		p.now = p.now.Add(time.Hour)
		return fsm.Event{Kind: fsm.EvTimerFired, Now: p.now, Timer: p.s.Watch.Silence.Timer}
	}
	cases[row(fsm.Watching, fsm.CauseWatchSilent)] = rowCase{setup: delivering, event: deadline,
		want: []fsm.CommandKind{cancel, watch, fsm.CmdWatchDeadline}}
	cases[row(fsm.Watching, fsm.CauseSilenceCheck)] = rowCase{setup: delivering,
		event: func(p *play) fsm.Event {
			p.now = p.now.Add(time.Second)
			e := p.event(fsm.EvWatchEvent)
			e.Type, e.Key, e.ResourceVersion = fsm.Modified, "ns/a", "103"
			p.step(e)
			p.now = p.now.Add(time.Second)
			return fsm.Event{Kind: fsm.EvTimerFired, Now: p.now, Timer: p.s.Watch.Silence.Timer}
		},
		want: []fsm.CommandKind{fsm.CmdWatchDeadline}}
	cases[row(fsm.Watching, fsm.CauseStop)] = rowCase{setup: opened,
		event: plain(fsm.EvStop), want: []fsm.CommandKind{cancel, stopped}}

	timer := func(p *play) fsm.Event {
		p.now = p.now.Add(time.Hour)
		return fsm.Event{Kind: fsm.EvTimerFired, Now: p.now, Timer: p.s.Wait.Timer}
	}
	cases[row(fsm.Backoff, fsm.CauseRetryWatch)] = rowCase{setup: func(p *play) { p.watching().watchFails(429) },
		event: timer, want: []fsm.CommandKind{watch}}
	cases[row(fsm.Backoff, fsm.CauseRetryRelist)] = rowCase{setup: func(p *play) { p.watching().watchFails(403).fire().watchFails(403) },
		event: timer, want: []fsm.CommandKind{list}}
	cases[row(fsm.Backoff, fsm.CauseRetryList)] = rowCase{setup: func(p *play) { p.start(); p.step(failing(fsm.EvListFailed, httpBare(500))(p)) },
		event: timer, want: []fsm.CommandKind{list}}
	cases[row(fsm.Backoff, fsm.CauseStop)] = rowCase{setup: func(p *play) { p.watching().watchFails(429) },
		event: plain(fsm.EvStop), want: []fsm.CommandKind{fsm.CmdCancelTimer, stopped}}
	return cases
}

// Every row of Table, stepped: the event takes exactly that row, and the row does what its
// kind of row must do — a row into Backoff arms one timer for its cause and remembers its Then,
// a row into a listing state or out of Backoff issues the request it goes on with, a row that
// completes a listing replaces the store — and gives exactly the commands its case lists.
func TestEveryTableRowHasItsEffects(t *testing.T) {
	cases := rowCases()
	for _, row := range Table.Rows() {
		name := fmt.Sprintf("%s --%s--> %s", row.From, row.Cause, row.To)
		t.Run(name, func(t *testing.T) {
			c, ok := cases[row]
			require.True(t, ok, "no case for row %s: add one to rowCases", name)
			p := newPlay(t, c.cfg)
			c.setup(p)
			require.Equal(t, row.From, p.s.State, "setup")
			e := c.event(p)
			before := p.s
			out := p.m.Step(&p.s, &e, nil)
			require.Equal(t, row.Cause, p.s.Cause, "the event took another row")
			require.Equal(t, row.To, p.s.State)

			assert.Equal(t, kindsString(c.want), kindsOf(out), "commands")
			checkRowKind(t, row, before, p.s, out)
		})
	}
}

// checkRowKind holds what every row of a kind must do, whatever its cause.
func checkRowKind(t *testing.T, row fsm.Transition, before, after fsm.Snapshot, out []fsm.Command) {
	t.Helper()
	switch {
	case row.To == fsm.Backoff:
		arms := commandsOf(out, fsm.CmdArmTimer)
		require.Len(t, arms, 1, "a row into Backoff arms one timer")
		assert.Equal(t, row.Cause, arms[0].Reason, "the timer's reason is the row's cause")
		assert.Equal(t, arms[0].Timer, after.Wait.Timer)
		assert.Equal(t, row.Then, after.Wait.Next, "the wait leads where the row's Then says")
		assert.Zero(t, after.Request, "nothing is in flight while waiting")
		assert.GreaterOrEqual(t, arms[0].Delay, MinWait)
	case row.To == fsm.Stopped:
		require.NotEmpty(t, out)
		assert.Equal(t, fsm.CmdStopped, out[len(out)-1].Kind)
		assert.Zero(t, after.Request)
		assert.Zero(t, after.Wait.Timer)
	case row.From == fsm.Backoff:
		require.Len(t, out, 1, "a timer row issues the request it goes on with")
		assert.Equal(t, after.Request, out[0].Request)
		if row.To == fsm.Watching {
			assert.Equal(t, fsm.CmdOpenWatch, out[0].Kind)
			assert.Equal(t, after.LastRV, out[0].ResourceVersion, "re-watch from the last RV")
		} else {
			assert.True(t, listRequest(out[0]), "a timer row into %s lists: %v", row.To, out[0])
		}
		assert.Zero(t, after.Wait.Timer)
	case (row.To == fsm.Listing || row.To == fsm.Relisting) && row.From != row.To:
		assert.True(t, len(out) > 0 && listRequest(out[len(out)-1]), "a row into %s lists: %v", row.To, out)
		if before.Resume.CatchingUp {
			// A restored snapshot that could not catch up: the store keeps serving it, and
			// is synced by the relist.
			assert.False(t, after.Synced, "a restored snapshot is not synced before it caught up")
			assert.True(t, after.Resume.CatchingUp)
			break
		}
		assert.True(t, after.Synced, "a relist keeps the synced store serving")
	case row.To == fsm.Watching && row.From != fsm.Watching && row.Cause == fsm.CauseResume:
		restores := commandsOf(out, fsm.CmdRestore)
		require.Len(t, restores, 1, "a resume restores the snapshot")
		assert.Equal(t, before.Resume.RV, restores[0].ResourceVersion)
		assert.Equal(t, restores[0].ResourceVersion, after.LastRV, "the watch resumes from the snapshot's RV")
		assert.False(t, after.Synced, "a snapshot older than the probe is synced only once caught up")
		assert.True(t, after.Resume.CatchingUp)
	case row.To == fsm.Watching && row.From != fsm.Watching:
		require.NotEmpty(t, commandsOf(out, fsm.CmdReplaceStore), "a listing that completes replaces the store")
		assert.True(t, after.Synced)
		assert.Zero(t, after.List.Staged)
	}
	if Table.Facts(row.Cause).Accepted {
		assert.Zero(t, after.RetryAfter.Repeats, "%s: the server accepted a request", row.Cause)
	}
	if len(out) > 0 && (out[len(out)-1].Kind == fsm.CmdListPage || out[len(out)-1].Kind == fsm.CmdOpenWatch) {
		assert.NotEqual(t, before.Request, after.Request, "a new request has a new id")
	}
}

func listRequest(c fsm.Command) bool {
	return c.Kind == fsm.CmdListPage || c.Kind == fsm.CmdOpenWatch && c.SendInitialEvents
}

func commandsOf(out []fsm.Command, kind fsm.CommandKind) []fsm.Command {
	var got []fsm.Command
	for _, c := range out {
		if c.Kind == kind {
			got = append(got, c)
		}
	}
	return got
}

func kindsOf(out []fsm.Command) string {
	kinds := make([]fsm.CommandKind, len(out))
	for i, c := range out {
		kinds[i] = c.Kind
	}
	return kindsString(kinds)
}

func kindsString(kinds []fsm.CommandKind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = k.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

// A row whose cause is read from a failure is reached by that failure's shape in both
// transports (TestClassifiedFailuresTakeTheirCause); this holds the other direction: the table
// has no failure row left unclassified, every cause with classes is a row somewhere.
func TestEveryFailureCauseHasARow(t *testing.T) {
	for _, c := range fsm.Causes() {
		if Table.Facts(c).Classes == 0 {
			continue
		}
		found := false
		for _, row := range Table.Rows() {
			found = found || row.Cause == c
		}
		assert.True(t, found, "%s declares classes %v but has no row", c, Table.Facts(c).Classes.List())
	}
}
