package main

import (
	"net/http"
	"sync"
)

// gate holds WATCH requests on their way to the simulated server. The demo needs the
// reflector's re-watch to reach the server only after a compaction, so that the 410 it gets is
// the server's own answer to a compacted resourceVersion rather than a scripted one; racing
// the compaction against the reflector's immediate re-watch would make the 410 a coin toss.
type gate struct {
	next http.RoundTripper

	mu     sync.Mutex
	held   chan struct{} // nil while open
	parked int
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := g.park(r); err != nil {
		return nil, err
	}
	return g.next.RoundTrip(r)
}

// park waits, if r is a WATCH and the gate is held, until release or r's end.
func (g *gate) park(r *http.Request) error {
	if q := r.URL.Query().Get("watch"); q != "1" && q != "true" {
		return nil
	}
	g.mu.Lock()
	ch := g.held
	if ch != nil {
		g.parked++
	}
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

// hold parks every WATCH from now until release.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held, g.parked = make(chan struct{}), 0
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

// waiting is how many WATCH requests arrived since hold.
func (g *gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.parked
}
