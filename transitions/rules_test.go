package transitions

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// The readings of one event exclude each other: in any snapshot at most one reading that is no
// fallback holds, so that the order of the rules decides nothing; and every failure a request
// in flight can meet is read as some cause, its fallback at least (docs/design.md, "A rule is
// the unit of change").
func TestReadingsExcludeEachOther(t *testing.T) {
	m := MustNew(Config{})
	now := time.Unix(1_700_000_000, 0)
	failures := []*fsm.Failure{
		nil,
		httpBare(http.StatusTooManyRequests),
		httpBare(http.StatusServiceUnavailable),
		httpBare(http.StatusGatewayTimeout),
		httpBare(http.StatusInternalServerError),
		httpStatus(http.StatusInternalServerError, metav1.Status{Reason: metav1.StatusReasonStoreReadError}),
		httpBare(http.StatusGone),
		httpStatus(http.StatusGone, metav1.Status{Reason: metav1.StatusReasonExpired, Message: fsm.TooOldMessage("5", "9")}),
		httpStatus(http.StatusGatewayTimeout, metav1.Status{Reason: metav1.StatusReasonTimeout,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}),
		httpBare(http.StatusForbidden),
		httpBare(http.StatusBadRequest),
		{Transport: fsm.Refused},
		{Transport: fsm.TooLarge},
		{Transport: fsm.Decode},
	}
	kinds := []fsm.EventKind{fsm.EvStart, fsm.EvStop, fsm.EvListItem, fsm.EvListPage, fsm.EvListFailed,
		fsm.EvWatchOpened, fsm.EvWatchEvent, fsm.EvWatchError, fsm.EvWatchOpenFailed, fsm.EvWatchEnded}
	failed := map[fsm.EventKind]bool{fsm.EvListFailed: true, fsm.EvWatchError: true, fsm.EvWatchOpenFailed: true}
	rng := rand.New(rand.NewPCG(1, 2))
	coin := func() bool { return rng.IntN(2) == 0 }
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 3000 {
		s := fsm.Snapshot{Seq: uint64(rng.IntN(2) * 3), Request: 3, LastRV: pick("", "5"), RVUnusable: coin()}
		s.List = fsm.ListState{RV: pick("", "0", "5"), Continuing: coin(), Streaming: coin(), Whole: coin()}
		s.Server.WholeListsFail = coin()
		s.Watch = fsm.WatchState{Open: coin(), OpenedAt: now.Add(-time.Duration(rng.IntN(3)) * time.Second),
			Events: rng.IntN(2), Progressed: coin(), QuickEnds: fsm.Streak{N: rng.IntN(3)},
			ExpiredStreak: fsm.Streak{N: rng.IntN(2)}, Rejected: fsm.Streak{N: rng.IntN(2)}, FreshTried: fsm.Streak{N: rng.IntN(2)}}
		if coin() {
			s.InternalErrors.Start = now.Add(-time.Duration(rng.IntN(60)) * time.Second)
			s.InternalErrors.Rewatches = rng.IntN(5)
			s.InternalErrors.Streak = fsm.Streak{N: 1}
		}
		e := fsm.Event{Kind: kinds[rng.IntN(len(kinds))], Now: now, Request: 3,
			Type: fsm.WatchEventType(1 + rng.IntN(4)), InitialEventsEnd: coin(), Continue: pick("", "c")}
		if failed[e.Kind] || e.Kind == fsm.EvWatchEnded {
			e.Failure = failures[rng.IntN(len(failures))]
		}
		var on answers
		switch {
		case e.Kind == fsm.EvStart || e.Kind == fsm.EvStop:
			on = answersNothing
		case s.List.Streaming:
			on = answersStream
		case e.Kind == fsm.EvListItem || e.Kind == fsm.EvListPage || e.Kind == fsm.EvListFailed:
			on = answersList
		default:
			on = answersWatch
		}
		var holding, fallbacks []fsm.Cause
		class := eventClass(&e)
		if int(e.Kind) < len(readings[on]) {
			for _, r := range readings[on][e.Kind] {
				switch {
				case !r.admits(class):
				case r.fallback:
					fallbacks = append(fallbacks, r.cause)
				case r.cond == nil || r.cond(m, &s, e):
					holding = append(holding, r.cause)
				}
			}
		}
		require.LessOrEqual(t, len(holding), 1, "%s in %+v: readings %v all hold", e, s, holding)
		require.LessOrEqual(t, len(fallbacks), 1, "%s in %+v: fallbacks %v", e, s, fallbacks)
		// A LIST's failure while a stream is in flight answers no request of its kind.
		if failed[e.Kind] && on != answersNothing && !(on == answersStream && e.Kind == fsm.EvListFailed) {
			require.NotEmpty(t, append(holding, fallbacks...), "%s (%s) in %+v is read as nothing", e, class, s)
		}
	}
}
