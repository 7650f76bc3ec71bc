package transitions

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

var (
	benchT0   = time.Unix(1_700_000_000, 0)
	benchSink []fsm.Command
)

// watching returns a snapshot with an open watch (request 2) after a one-page initial LIST.
func watching(tb testing.TB, m *Machine) fsm.Snapshot {
	tb.Helper()
	s := m.Initial()
	s, _ = m.Next(s, fsm.Event{Kind: fsm.EvStart, Now: benchT0})
	s, _ = m.Next(s, fsm.Event{Kind: fsm.EvListPage, Now: benchT0, Request: 1, ResourceVersion: "100"})
	s, _ = m.Next(s, fsm.Event{Kind: fsm.EvWatchOpened, Now: benchT0, Request: 2})
	if s.State != fsm.Watching || s.Request != 2 {
		tb.Fatalf("setup: %v request=%d", s, s.Request)
	}
	return s
}

// BenchmarkStepWatchEvent is the hot path docs/design.md bounds at ≤ 50 ns and 0 allocs.
func BenchmarkStepWatchEvent(b *testing.B) {
	m := MustNew(Config{})
	s := watching(b, m)
	obj := &struct{}{}
	ev := fsm.Event{Kind: fsm.EvWatchEvent, Now: benchT0, Request: 2, Type: fsm.Modified, ResourceVersion: "101", Key: "default/cm-1", Object: obj}
	b.ReportAllocs()
	out := make([]fsm.Command, 0, 4)
	for b.Loop() {
		out = m.Step(&s, &ev, out[:0])
	}
	benchSink = out
}

// BenchmarkStepWatchEventProgress is a busy stream's frame: each moves the resourceVersion,
// as on a real stream (BenchmarkStepWatchEvent repeats one frame, whose RV moves once).
func BenchmarkStepWatchEventProgress(b *testing.B) {
	m := MustNew(Config{})
	s := watching(b, m)
	obj := &struct{}{}
	rvs := make([]string, 1024)
	for i := range rvs {
		rvs[i] = strconv.Itoa(101 + i)
	}
	ev := fsm.Event{Kind: fsm.EvWatchEvent, Now: benchT0, Request: 2, Type: fsm.Modified, Key: "default/cm-1", Object: obj}
	b.ReportAllocs()
	out := make([]fsm.Command, 0, 4)
	i := 0
	for b.Loop() {
		ev.ResourceVersion = rvs[i&(len(rvs)-1)]
		i++
		out = m.Step(&s, &ev, out[:0])
	}
	benchSink = out
}

func BenchmarkStepBookmark(b *testing.B) {
	m := MustNew(Config{})
	s := watching(b, m)
	ev := fsm.Event{Kind: fsm.EvWatchEvent, Now: benchT0, Request: 2, Type: fsm.Bookmark, ResourceVersion: "101"}
	b.ReportAllocs()
	out := make([]fsm.Command, 0, 4)
	for b.Loop() {
		out = m.Step(&s, &ev, out[:0])
	}
	benchSink = out
}

func BenchmarkStepStaleEvent(b *testing.B) {
	m := MustNew(Config{})
	s := watching(b, m)
	ev := fsm.Event{Kind: fsm.EvWatchEvent, Now: benchT0, Request: 1, Type: fsm.Added, ResourceVersion: "101"}
	b.ReportAllocs()
	out := make([]fsm.Command, 0, 4)
	for b.Loop() {
		out = m.Step(&s, &ev, out[:0])
	}
	benchSink = out
}

// benchFrom measures one event from a fixed snapshot: each iteration starts again from a copy
// of s, so the figure includes copying the snapshot once.
func benchFrom(b *testing.B, s fsm.Snapshot, m *Machine, ev fsm.Event) {
	b.Helper()
	b.ReportAllocs()
	out := make([]fsm.Command, 0, 4)
	for b.Loop() {
		cur := s
		out = m.Step(&cur, &ev, out[:0])
	}
	benchSink = out
}

func BenchmarkStepTransitions(b *testing.B) {
	m := MustNew(Config{})
	w := watching(b, m)
	tooMany := &fsm.Failure{Code: 429, Status: &metav1.Status{Code: 429, Reason: metav1.StatusReasonTooManyRequests}}
	internal := &fsm.Failure{Status: &metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError}}
	expired := &fsm.Failure{Status: &metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired}}
	refused := &fsm.Failure{Transport: fsm.Refused}
	start := m.Initial()
	listing, _ := m.Next(start, fsm.Event{Kind: fsm.EvStart, Now: benchT0})
	backingOff, _ := m.Next(w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: 2, Failure: tooMany})
	cases := []struct {
		name string
		s    fsm.Snapshot
		ev   fsm.Event
	}{
		{"start", start, fsm.Event{Kind: fsm.EvStart, Now: benchT0}},
		{"list-page-more", listing, fsm.Event{Kind: fsm.EvListPage, Now: benchT0, Request: 1, Continue: "c1"}},
		{"list-complete", listing, fsm.Event{Kind: fsm.EvListPage, Now: benchT0, Request: 1, ResourceVersion: "100"}},
		{"list-failed-429", listing, fsm.Event{Kind: fsm.EvListFailed, Now: benchT0, Request: 1, Failure: tooMany}},
		{"list-expired", listing, fsm.Event{Kind: fsm.EvListFailed, Now: benchT0, Request: 1, Failure: expired}},
		{"watch-opened", w, fsm.Event{Kind: fsm.EvWatchOpened, Now: benchT0, Request: 2}},
		{"watch-error-429", w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: 2, Failure: tooMany}},
		{"watch-error-internal", w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: 2, Failure: internal}},
		{"watch-error-expired", w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: 2, Failure: expired}},
		{"watch-open-refused", w, fsm.Event{Kind: fsm.EvWatchOpenFailed, Now: benchT0, Request: 2, Failure: refused}},
		{"stream-ended", w, fsm.Event{Kind: fsm.EvWatchEnded, Now: benchT0.Add(time.Minute), Request: 2}},
		{"timer-fired", backingOff, fsm.Event{Kind: fsm.EvTimerFired, Now: benchT0, Timer: backingOff.Wait.Timer}},
		{"stop", w, fsm.Event{Kind: fsm.EvStop, Now: benchT0}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchFrom(b, c.s, m, c.ev) })
	}
}
