package fsmcheck_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transitions/fsmcheck"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestCheckedStepAgreesWithStateless(t *testing.T) {
	m := transitions.MustNew(transitions.Config{})
	s := m.Initial()
	var out []fsm.Command
	var err error
	for _, e := range []fsm.Event{
		{Kind: fsm.EvStart, Now: t0},
		{Kind: fsm.EvListPage, Now: t0, Request: 1, ResourceVersion: "7"},
		{Kind: fsm.EvWatchOpened, Now: t0, Request: 2},
		{Kind: fsm.EvWatchEvent, Now: t0, Request: 2, Type: fsm.Added, ResourceVersion: "8", Key: "ns/a"},
		{Kind: fsm.EvWatchOpened, Now: t0, Request: 99}, // stale: ignored, still fine
		{Kind: fsm.EvStop, Now: t0},
	} {
		out, err = fsmcheck.Step(m, &s, &e, out[:0])
		require.NoError(t, err)
	}
	require.Equal(t, fsm.Stopped, s.State)
}

// FuzzStep drives the machine with arbitrary event sequences (each event drawn from 6 bytes)
// and arbitrary Status bodies: Step must never panic, every transition must be one the
// stateless machine built from transitions.Table permits, and nothing may follow Stopped.
func FuzzStep(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 5, 0, 1, 0, 0, 0}, []byte(`{"kind":"Status","code":429,"reason":"TooManyRequests","details":{"retryAfterSeconds":3}}`))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 3, 0, 0, 5, 0, 0, 9, 0, 0, 0, 9, 0}, []byte(`{"code":504,"details":{"causes":[{"reason":"ResourceVersionTooLarge"}]}}`))
	f.Add([]byte{1, 1, 1, 1, 1, 1, 6, 6, 6, 6, 6, 6, 10, 0, 0, 0, 0, 0}, []byte(`{"code":-7,"reason":"`+"\xff"+`"}`))
	f.Fuzz(func(t *testing.T, script []byte, status []byte) {
		var st *metav1.Status
		if s := new(metav1.Status); json.Unmarshal(status, s) == nil {
			st = s
		}
		for _, watchList := range []bool{false, true} {
			m := transitions.MustNew(transitions.Config{WatchList: watchList, Seed: uint64(len(script))})
			s := m.Initial()
			now := time.Unix(1_700_000_000, 0)
			var out []fsm.Command
			for i := 0; i+6 <= len(script); i += 6 {
				b := script[i : i+6]
				now = now.Add(time.Duration(b[4]) * 100 * time.Millisecond)
				e := fsm.Event{Kind: fsm.EventKind(1 + b[0]%10), Now: now, Type: fsm.WatchEventType(1 + b[2]%4)}
				e.Request = s.Request + uint64(b[1]%3) - 1 // mostly the current request, sometimes stale
				e.Timer = s.Wait.Timer
				if b[1]%5 == 0 {
					e.Timer++
				}
				e.ResourceVersion = string('0' + rune(b[3]%10))
				e.InitialEventsEnd = b[3]&0x80 != 0
				if b[3]&0x40 != 0 {
					e.Continue = "c"
				}
				switch b[5] % 4 {
				case 1:
					e.Failure = &fsm.Failure{Status: st, Code: int(b[5]) * 3, RetryAfter: time.Duration(b[4]) * time.Second, HasRetryAfter: b[5]&8 != 0}
				case 2:
					e.Failure = &fsm.Failure{Transport: fsm.Transport(b[5] % 7)}
				}
				before := s
				var err error
				out, err = fsmcheck.Step(m, &s, &e, out[:0])
				if err != nil {
					t.Fatalf("event %d %s in %s: %v", i/6, e, before.State, err)
				}
				if before.State == fsm.Stopped && len(out) > 0 {
					t.Fatalf("commands after Stopped: %v", out)
				}
			}
		}
	})
}

// FuzzClassify reads arbitrary Status bodies, codes and Retry-After values as the driver would
// hand them over: classification must never panic, a Retry-After must never come out negative,
// and the answers apimachinery is sure of must hold.

func TestCheckStepHoldsWaitsToTheirThen(t *testing.T) {
	watching := fsm.Snapshot{State: fsm.Watching}
	waiting := fsm.Snapshot{State: fsm.Backoff, Wait: fsm.WaitState{Next: fsm.Watching}}
	require.NoError(t, fsmcheck.CheckStep(watching, fsm.CauseServerBusy, waiting))
	relistLater := fsm.Snapshot{State: fsm.Backoff, Wait: fsm.WaitState{Next: fsm.Relisting}}
	require.NoError(t, fsmcheck.CheckStep(watching, fsm.CauseWatchRejected, relistLater))

	require.ErrorContains(t, fsmcheck.CheckStep(watching, fsm.CauseServerBusy, relistLater),
		"waits to go on in Relisting, the table says Watching")
	require.ErrorContains(t, fsmcheck.CheckStep(waiting, fsm.CauseRetryRelist, fsm.Snapshot{State: fsm.Relisting}),
		"the wait was armed to lead to Watching")
	require.NoError(t, fsmcheck.CheckStep(waiting, fsm.CauseStop, fsm.Snapshot{State: fsm.Stopped}))
	require.ErrorContains(t, fsmcheck.CheckStep(watching, fsm.CauseListComplete, watching), "not permitted")
}
