package fsm_test

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// failureKind is the model server's own label for a failure it produced: an oracle kept apart
// from the classification in transitions, so the properties test it rather than restate it.
type failureKind uint8

const (
	fkNone failureKind = iota
	fkBusy
	fkInternal
	fkExpired
	fkTooLarge
	fkTransport
	fkRejected
	fkStreamEnd
)

// modelServer answers the machine's requests the way an API server (and a network) could:
// resourceVersions only grow, and any request may fail in any of the ways docs/semantics.md lists.
type modelServer struct {
	rv  int64
	now time.Time
	// lastDelay is the delay of the timer the machine armed last, so the model fires it no
	// earlier than asked.
	lastDelay time.Duration
	// deadlineDue is when the watch's deadline the machine armed last is due
	// (docs/semantics.md, "silent watch"): the model fires it then, or later.
	deadlineDue time.Time
	// sent counts the LIST items sent in answer to each request, by the model's own count.
	sent map[uint64]int
	// asking is the question the machine last asked its caller (fsm.CmdAsk): while it is in
	// flight the model answers it as the caller would.
	asking fsm.Command
	// askedRV is the last RV of the snapshot the current event answers: what a watch asked for.
	askedRV string
}

func (ms *modelServer) nextRV() string {
	ms.rv += int64(1 + ms.rv%3)
	return strconv.FormatInt(ms.rv, 10)
}

// generated is an event plus what the model knows about it.
type generated struct {
	event      fsm.Event
	kind       failureKind
	retryAfter time.Duration // usable Retry-After the model sent, 0 if none
	stale      bool
}

func drawConfig(t *rapid.T) transitions.Config {
	b := backoff.Reflector()
	b.Jitter = rapid.SampledFrom([]float64{0, 0.5, 1}).Draw(t, "jitter")
	if rapid.IntRange(0, 9).Draw(t, "zeroPolicy") == 0 {
		b = backoff.Backoff{} // a policy that always says 0: the MinWait floor must hold
	}
	return transitions.Config{
		Backoff:                b,
		Seed:                   rapid.Uint64().Draw(t, "seed"),
		WatchList:              rapid.Bool().Draw(t, "watchList"),
		InternalErrorWindow:    rapid.SampledFrom([]time.Duration{0, 5 * time.Second, time.Minute}).Draw(t, "window"),
		InternalErrorRewatches: rapid.SampledFrom([]int{0, 1, 5}).Draw(t, "rewatches"),
		ResumeRVLifetime:       rapid.SampledFrom([]time.Duration{0, 10 * time.Second}).Draw(t, "rvLifetime"),
		RetryAfterCap:          rapid.SampledFrom([]time.Duration{0, time.Minute}).Draw(t, "raCap"),
		PageSize:               rapid.SampledFrom([]int64{0, 2, -1}).Draw(t, "pageSize"),
		RetryAfterSpread:       rapid.SampledFrom([]float64{0, 0, 0.5, 1, transitions.RetryAfterExact}).Draw(t, "raSpread"),
		PageRelists:            rapid.Bool().Draw(t, "pageRelists"),
		SingleServer:           rapid.Bool().Draw(t, "singleServer"),
		// The optional policies: a relist cap, a caller that refreshes credentials.
		MaxRelists:         rapid.SampledFrom([]int{0, 0, 1, 3}).Draw(t, "maxRelists"),
		CredentialsRefresh: rapid.Bool().Draw(t, "credentialsRefresh"),
	}
}

func (ms *modelServer) advance(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{0, 0, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, 3 * time.Minute}).Draw(t, "dt")
	ms.now = ms.now.Add(d)
}

// next draws the next event for the machine in snapshot s.
func (ms *modelServer) next(t *rapid.T, s *fsm.Snapshot) generated {
	ms.advance(t)
	ms.askedRV = s.LastRV
	switch rapid.IntRange(0, 39).Draw(t, "special") {
	case 0:
		return generated{event: fsm.Event{Kind: fsm.EvStop, Now: ms.now}}
	case 1, 2:
		return ms.stale(t, s)
	}
	if s.State == fsm.Stopped {
		return ms.stale(t, s)
	}
	if s.Seq == 0 {
		return generated{event: fsm.Event{Kind: fsm.EvStart, Now: ms.now}}
	}
	if s.Request != 0 && s.Request == ms.asking.Request {
		return ms.answer(t)
	}
	switch s.State {
	case fsm.Backoff:
		ms.now = ms.now.Add(ms.lastDelay)
		return generated{event: fsm.Event{Kind: fsm.EvTimerFired, Now: ms.now, Timer: s.Wait.Timer}}
	case fsm.Listing, fsm.Relisting:
		if s.List.Streaming {
			return ms.watchAnswer(t, s, true)
		}
		return ms.listAnswer(t, s)
	case fsm.Watching:
		if s.Watch.Silence.Timer != 0 && rapid.IntRange(0, 3).Draw(t, "deadline") == 0 {
			if ms.now.Before(ms.deadlineDue) {
				ms.now = ms.deadlineDue
			}
			return generated{event: fsm.Event{Kind: fsm.EvTimerFired, Now: ms.now, Timer: s.Watch.Silence.Timer}}
		}
		return ms.watchAnswer(t, s, false)
	}
	return ms.stale(t, s)
}

// answer is the caller's answer to the question in flight, whichever hook asks it: one of the
// answers its hook may give (fsm.Hook.Examples), or its error.
func (ms *modelServer) answer(t *rapid.T) generated {
	h := ms.asking.Hook
	e := fsm.Event{Kind: fsm.EvAnswer, Now: ms.now, Request: ms.asking.Request, Hook: h}
	if rapid.IntRange(0, 3).Draw(t, "hookFails") == 0 {
		e.Failure = &fsm.Failure{Message: "hook " + h.String() + ": it failed"}
		return generated{event: e}
	}
	if text := rapid.SampledFrom(h.Examples()).Draw(t, "answer"); h.Answers() {
		a, err := h.ParseAnswer(text)
		if err != nil {
			t.Fatalf("hook %s's example %q: %v", h, text, err)
		}
		e.Answer = a
	}
	return generated{event: e}
}

func (ms *modelServer) stale(t *rapid.T, s *fsm.Snapshot) generated {
	// No timer is armed but Backoff's wait or the watch's deadline, never both: 100 past the
	// armed one is none.
	e := fsm.Event{Now: ms.now, Request: s.Request + 1 + uint64(rapid.IntRange(0, 3).Draw(t, "staleReq")),
		Timer: s.Wait.Timer + s.Watch.Silence.Timer + 100}
	e.Kind = rapid.SampledFrom([]fsm.EventKind{fsm.EvListPage, fsm.EvListFailed, fsm.EvWatchOpened,
		fsm.EvWatchEvent, fsm.EvWatchError, fsm.EvWatchOpenFailed, fsm.EvWatchEnded, fsm.EvTimerFired}).Draw(t, "staleKind")
	e.Type, e.ResourceVersion = fsm.Added, "1"
	if e.Kind == fsm.EvTimerFired {
		e.Request = 0
	}
	return generated{event: e, stale: true}
}

// listAnswer answers a LIST page: one of its items (a streaming transport hands each over as
// it is decoded), the page's end, or a failure — also after some of the page's items. An
// item's key names its page (the continue token it was asked with) and its place in it, so a
// page retried with its token brings the same keys again. A page whose items were streamed
// ends with their count; a page answered whole carries a count only.
func (ms *modelServer) listAnswer(t *rapid.T, s *fsm.Snapshot) generated {
	e := fsm.Event{Now: ms.now, Request: s.Request}
	switch rapid.IntRange(0, 7).Draw(t, "listOutcome") {
	case 0, 1:
		e.Kind = fsm.EvListPage
		e.ResourceVersion = ms.nextRV()
		e.ItemCount = ms.sent[s.Request]
		if e.ItemCount == 0 {
			e.ItemCount = rapid.IntRange(0, 3).Draw(t, "items")
		}
		return generated{event: e}
	case 2:
		e.Kind = fsm.EvListPage
		e.Continue = "c" + ms.nextRV()
		e.ItemCount = max(ms.sent[s.Request], 2)
		return generated{event: e}
	case 5, 6, 7:
		page := "first"
		if s.List.Continuing {
			page = s.List.Continue
		}
		e.Kind = fsm.EvListItem
		if ms.sent == nil {
			ms.sent = map[uint64]int{}
		}
		e.Key = "ns/" + page + "-" + strconv.Itoa(ms.sent[s.Request])
		ms.sent[s.Request]++
		e.ResourceVersion = strconv.FormatInt(ms.rv, 10)
		return generated{event: e}
	}
	e.Kind = fsm.EvListFailed
	g := ms.failure(t, e, false)
	return g
}

func (ms *modelServer) watchAnswer(t *rapid.T, s *fsm.Snapshot, streaming bool) generated {
	e := fsm.Event{Now: ms.now, Request: s.Request}
	if !s.Watch.Open {
		if rapid.IntRange(0, 2).Draw(t, "opens") > 0 {
			e.Kind = fsm.EvWatchOpened
			return generated{event: e}
		}
		e.Kind = fsm.EvWatchOpenFailed
		return ms.failure(t, e, true)
	}
	switch rapid.IntRange(0, 9).Draw(t, "watchOutcome") {
	case 0, 1, 2, 3:
		e.Kind = fsm.EvWatchEvent
		e.Type = rapid.SampledFrom([]fsm.WatchEventType{fsm.Added, fsm.Modified, fsm.Deleted, fsm.Bookmark}).Draw(t, "type")
		e.ResourceVersion = ms.nextRV()
		e.Key = "default/o" + strconv.Itoa(rapid.IntRange(0, 5).Draw(t, "obj"))
		if e.Type == fsm.Bookmark {
			e.Key = ""
			e.InitialEventsEnd = streaming && rapid.Bool().Draw(t, "initialEnd")
		}
		return generated{event: e}
	case 4, 5, 6:
		e.Kind = fsm.EvWatchError
		return ms.failure(t, e, false)
	}
	e.Kind = fsm.EvWatchEnded
	switch rapid.IntRange(0, 2).Draw(t, "endKind") {
	case 0:
		return generated{event: e, kind: fkStreamEnd}
	case 1:
		e.Failure = &fsm.Failure{Transport: fsm.Reset}
		return generated{event: e, kind: fkStreamEnd}
	}
	e.Failure = &fsm.Failure{Transport: fsm.Decode, Message: "invalid character"}
	return generated{event: e, kind: fkInternal}
}

// failure attaches a drawn failure to e. Transport failures only happen before a response, so
// only where allowTransport says a connection was being made.
func (ms *modelServer) failure(t *rapid.T, e fsm.Event, allowTransport bool) generated {
	kinds := []failureKind{fkBusy, fkInternal, fkExpired, fkTooLarge, fkRejected}
	if allowTransport || e.Kind == fsm.EvListFailed {
		kinds = append(kinds, fkTransport)
	}
	k := rapid.SampledFrom(kinds).Draw(t, "failure")
	g := generated{event: e, kind: k}
	f := &fsm.Failure{}
	st := func(code int32, reason metav1.StatusReason) *metav1.Status {
		return &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason}
	}
	switch k {
	case fkBusy:
		f.Status = rapid.SampledFrom([]*metav1.Status{
			st(429, metav1.StatusReasonTooManyRequests), st(503, metav1.StatusReasonServiceUnavailable),
			st(504, metav1.StatusReasonTimeout)}).Draw(t, "busyStatus")
		switch rapid.IntRange(0, 3).Draw(t, "retryAfter") {
		case 1:
			f.HasRetryAfter = true
			f.RetryAfter = rapid.SampledFrom([]time.Duration{0, time.Second, 7 * time.Second, 2 * time.Hour}).Draw(t, "raHeader")
		case 2:
			secs := rapid.SampledFrom([]int32{0, 3, 30, 100000}).Draw(t, "raDetails")
			f.Status.Details = &metav1.StatusDetails{RetryAfterSeconds: secs}
		}
		if f.HasRetryAfter {
			g.retryAfter = f.RetryAfter
		} else if f.Status.Details != nil {
			g.retryAfter = time.Duration(f.Status.Details.RetryAfterSeconds) * time.Second
		}
	case fkInternal:
		f.Status = rapid.SampledFrom([]*metav1.Status{
			st(500, metav1.StatusReasonInternalError), st(502, ""), st(0, "SomethingNew")}).Draw(t, "internalStatus")
		if secs := rapid.SampledFrom([]int32{0, 0, 2, 90}).Draw(t, "internalRetryAfter"); secs > 0 {
			// A 500 with a long Retry-After is the case that kept revision 1's streak from
			// ever reaching its relist.
			f.Status.Details = &metav1.StatusDetails{RetryAfterSeconds: secs}
			g.retryAfter = time.Duration(secs) * time.Second
		}
	case fkExpired:
		f.Status = rapid.SampledFrom([]*metav1.Status{st(410, metav1.StatusReasonExpired), st(410, metav1.StatusReasonGone)}).Draw(t, "expiredStatus")
		if ms.askedRV != "" && rapid.Bool().Draw(t, "youngCache") {
			// A watch cache younger than the RV asked for: a kube-apiserver that restarted
			// behind a load balancer.
			f.Status.Message = fsm.TooOldMessage(ms.askedRV, ms.nextRV())
		}
	case fkTooLarge:
		s := st(504, metav1.StatusReasonTimeout)
		s.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}
		f.Status = s
	case fkRejected:
		code := rapid.SampledFrom([]int{401, 403, 404, 400, 422}).Draw(t, "rejectedCode")
		if rapid.Bool().Draw(t, "bareCode") {
			f.Code = code
		} else {
			f.Status = st(int32(code), "")
		}
	case fkTransport:
		f.Transport = rapid.SampledFrom([]fsm.Transport{fsm.Refused, fsm.Reset, fsm.EOF, fsm.Timeout, fsm.OtherTransport}).Draw(t, "transport")
	}
	g.event.Failure = f
	return g
}
