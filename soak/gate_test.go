package soak

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rewatch/rewatch/internal/loopback"
)

// gate is a TCP forwarder on a fixed loopback port in front of the fault proxy. Down closes
// the listener and every connection, so the reflector meets a real "connection refused"; Up
// listens again on the same port. Kick only drops the open connections, which ends the watch
// in flight so that the next one meets the fault proxy's new rules.
type gate struct {
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newGate(target string) (*gate, error) {
	g := &gate{target: target, conns: map[net.Conn]struct{}{}}
	// Below the ephemeral range, so that no connection of a test beside takes the port while
	// the gate is down (loopback.Listen).
	ln, err := loopback.Listen()
	if err != nil {
		return nil, err
	}
	g.addr = ln.Addr().String()
	g.serve(ln)
	return g, nil
}

func (g *gate) URL() string { return "http://" + g.addr }

func (g *gate) serve(ln net.Listener) {
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.wg.Add(1)
			go func() { defer g.wg.Done(); g.forward(c) }()
		}
	}()
}

func (g *gate) track(c net.Conn, add bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !add {
		delete(g.conns, c)
		return true
	}
	if g.ln == nil {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *gate) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", g.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	if !g.track(c, true) || !g.track(up, true) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	g.track(c, false)
	g.track(up, false)
}

// Kick closes every open connection (the client sees a reset or EOF).
func (g *gate) Kick() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

// Down stops listening and drops every connection: the port refuses connections.
func (g *gate) Down() {
	g.mu.Lock()
	ln := g.ln
	g.ln = nil
	g.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	g.Kick()
}

// Up listens again on the same port.
func (g *gate) Up() error {
	var ln net.Listener
	var err error
	// The port was ours a moment ago; another process could in theory take it.
	for range 50 {
		if ln, err = net.Listen("tcp", g.addr); err == nil {
			g.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(errors.New("gate: cannot listen again on "+g.addr), err)
}

// Close stops everything and waits for the forwarding goroutines.
func (g *gate) Close() {
	g.Down()
	g.wg.Wait()
}
