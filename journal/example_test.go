package journal_test

import (
	"bytes"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/transitions"
)

// A journal records every event the machine took with what it did; Replay rebuilds the machine
// from the header and folds the events again, and with Check stops at the first decision that
// differs from the recorded one. A reflector records one when rewatch.Config.Journal is set
// (the Writer is then one of the driver's observers); here the machine is stepped by hand.
func Example() {
	m := transitions.MustNew(transitions.Config{Seed: 1})
	var buf bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := journal.NewWriter(&buf, journal.Header{Resource: "v1/configmaps", Started: t0, Config: journal.RecordConfig(m.Config())})
	if err != nil {
		panic(err)
	}
	s := m.Initial()
	busy := &fsm.Failure{Status: &metav1.Status{Status: metav1.StatusFailure, Code: 429, Reason: metav1.StatusReasonTooManyRequests},
		RetryAfter: 2 * time.Second, HasRetryAfter: true}
	for _, e := range []fsm.Event{
		{Kind: fsm.EvStart, Now: t0},
		{Kind: fsm.EvListPage, Now: t0, Request: 1, ResourceVersion: "100", ItemCount: 3},
		{Kind: fsm.EvWatchOpenFailed, Now: t0, Request: 2, Failure: busy},
		{Kind: fsm.EvTimerFired, Now: t0.Add(2 * time.Second), Timer: 3},
	} {
		from := s.State
		cause := m.Classify(&s, &e)
		var cmds []fsm.Command
		s, cmds = m.Next(s, e)
		if err := w.Write(e, from, s.State, cause, cmds); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	final, err := journal.Replay(&buf, journal.ReplayOptions{Check: true, OnStep: func(st journal.Step) {
		fmt.Printf("%s --%s--> %s %v\n", st.From, st.Cause, st.To, st.Commands)
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("replayed to", final)
	// Output:
	// Listing --start--> Listing [list request=1 rv="0" limit=500]
	// Listing --list-complete--> Watching [stage items=3 replace-store rv="100" watch request=2 rv="100" timeout=469s]
	// Watching --server-busy--> Backoff [arm-timer timer=3 delay=2s reason=server-busy]
	// Backoff --retry-watch--> Watching [watch request=4 rv="100" timeout=523s]
	// replayed to Watching rv="100" retry-after-repeats=1
}
