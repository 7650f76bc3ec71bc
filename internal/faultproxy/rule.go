package faultproxy

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

type action int

const (
	actPass action = iota
	actRespond
	actRefuse
	actDelay
	actInject
	actReset
	actTruncate
	actStall
	actCorruptContinue
	actPark
	actStallMidBody
)

// Fault is what happens to a request a Rule matches. Build one with Respond,
// WatchError, Reset, Truncate, Delay, Refuse, Stall, CorruptContinue or
// Park; the With/After methods return modified copies.
type Fault struct {
	act         action
	err         error
	header      http.Header
	delay       time.Duration
	afterEvents int
	afterDelay  time.Duration
	gate        <-chan struct{}
}

// Respond answers at once with the Status carried by err (an
// apierrors.APIStatus, e.g. TooManyRequests(2)) without contacting upstream.
func Respond(err error) Fault { return Fault{act: actRespond, err: err} }

// WatchError passes the watch through, then sends one ERROR event carrying
// err's Status and ends the stream, as the API server does. Without After*
// it fires before the first upstream event.
func WatchError(err error) Fault { return Fault{act: actInject, err: err} }

// Reset aborts the TCP connection with an RST. On a watch it fires after the
// After* conditions (default: once the stream is open, before any event); on
// anything else after the response headers.
func Reset() Fault { return Fault{act: actReset} }

// Truncate writes half a frame and then closes the connection without ending
// the HTTP response. On a watch the half frame follows the After* conditions;
// on anything else it is the first half of the upstream body.
func Truncate() Fault { return Fault{act: actTruncate} }

// Delay holds the upstream response for d (real time) before relaying it.
func Delay(d time.Duration) Fault { return Fault{act: actDelay, delay: d} }

// Refuse closes the connection with an RST before any response, like a
// connection reset before the watch opened.
func Refuse() Fault { return Fault{act: actRefuse} }

// Stall stops relaying without closing anything: the client keeps an open
// connection on which nothing more arrives — no events, no bookmarks — as
// behind a load balancer that lost its backend without telling the client.
// On a watch it begins after the After* conditions (default: once the
// stream is open, before any event); on anything else after the response
// headers. The stalled request ends only when the client gives up or the
// proxy closes.
func Stall() Fault { return Fault{act: actStall} }

// StallMidBody relays the first half of a response's body, then stops relaying without closing
// anything: a balancer or a node hanging in the middle of a LIST response. The request ends
// only when the client gives up or the proxy closes.
func StallMidBody() Fault { return Fault{act: actStallMidBody} }

// CorruptContinue forwards a LIST continuation page with its continue
// token replaced by one no server can read, so the server itself answers
// (kube-apiserver: 400 BadRequest, "continue key is not valid"). A request
// without a continue token passes untouched and does not count as a firing.
func CorruptContinue() Fault { return Fault{act: actCorruptContinue} }

// Park holds the request, before anything is sent upstream, until release
// is closed; then it goes on as if no rule applied, and the server answers
// it as it answers then. A client that gives up meanwhile gets no response
// (its record's Status stays 0). Parking is the fault, so the rule has
// fired once the request is held; a request that arrives after release
// passes untouched and does not count as a firing. With Times -1 every
// matching request is parked until release, so a client that gives up and
// asks again is held again: a test holds a reflector's re-watches off for as
// long as it needs (the server's history moving past the resume RV) and
// lets the one in flight through at a moment it chooses.
func Park(release <-chan struct{}) Fault { return Fault{act: actPark, gate: release} }

// corruptToken is the token CorruptContinue sends: not base64, so not a
// continue key of any kube-apiserver.
const corruptToken = "not-a-continue-token!"

// WithHeader adds a response header to a Respond fault (e.g. Retry-After,
// which the API server sets independently of details.retryAfterSeconds).
func (f Fault) WithHeader(key, value string) Fault {
	h := f.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	f.header = h
	return f
}

// AfterEvents makes a stream fault wait until n upstream events have been
// relayed.
func (f Fault) AfterEvents(n int) Fault { f.afterEvents = n; return f }

// AfterDelay makes a stream fault wait until d after the stream opened; with
// AfterEvents both conditions must hold.
func (f Fault) AfterDelay(d time.Duration) Fault { f.afterDelay = d; return f }

func (f Fault) String() string {
	switch f.act {
	case actRespond:
		return fmt.Sprintf("respond %d", statusOf(f.err).Code)
	case actRefuse:
		return "refuse"
	case actDelay:
		return fmt.Sprintf("delay %s", f.delay)
	case actInject:
		return fmt.Sprintf("watch error %d%s", statusOf(f.err).Code, f.when())
	case actReset:
		return "reset" + f.when()
	case actTruncate:
		return "truncate" + f.when()
	case actStall:
		return "stall" + f.when()
	case actCorruptContinue:
		return "corrupt continue token"
	case actPark:
		return "park"
	case actStallMidBody:
		return "stall mid-body"
	}
	return ""
}

func (f Fault) when() string {
	var parts []string
	if f.afterEvents > 0 {
		parts = append(parts, fmt.Sprintf("%d events", f.afterEvents))
	}
	if f.afterDelay > 0 {
		parts = append(parts, f.afterDelay.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return " after " + strings.Join(parts, " and ")
}

// Rule scripts a fault. Rules are tried in the order they were added; the
// first one that is due is applied. Every rule counts every request it
// matches, even when an earlier rule is applied to it, so Nth always refers
// to the position among all matching requests.
//
// A rule has fired when its fault reached the client, not when it was
// chosen: a stream fault waits for its After* conditions, and a stream that
// ends first (the server's timeout, the client going away) never saw it.
// Such a request gives its turn back, so a rule with Times n is delivered n
// times whatever happens to the streams it was chosen for.
type Rule struct {
	// Kind to match; Any matches all.
	Kind Kind
	// PathContains, when set, must be a substring of the request path.
	PathContains string
	// Nth is the 1-based position of the first matching request the rule
	// fires on; 0 means the first.
	Nth int
	// Times bounds how often the rule fires; 0 means once, negative means
	// on every matching request from Nth on.
	Times int
	Fault Fault
}

// Handle reports on a rule added to a Proxy.
type Handle struct {
	rule Rule
	seen int
	// pending counts requests the rule was chosen for whose fault has not
	// been delivered yet; fired those whose fault has.
	pending int
	fired   int
	p       *Proxy
}

// Fired is how many times the rule's fault has reached a client.
func (h *Handle) Fired() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.fired
}

// offer counts a matching request and reports whether the rule is due.
// Called with the proxy's lock held.
func (h *Handle) offer(k Kind, path string) bool {
	if h.rule.Kind != Any && h.rule.Kind != k {
		return false
	}
	if h.rule.PathContains != "" && !strings.Contains(path, h.rule.PathContains) {
		return false
	}
	h.seen++
	nth := max(h.rule.Nth, 1)
	if h.seen < nth {
		return false
	}
	times := h.rule.Times
	if times == 0 {
		times = 1
	}
	return times < 0 || h.fired+h.pending < times
}
