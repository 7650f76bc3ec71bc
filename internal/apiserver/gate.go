package apiserver

import (
	"errors"
	"io"
	"net"
	"sync"
)

// gate is a TCP relay between one kube-apiserver and one etcd member. Frozen, it passes no
// bytes in either direction and leaves every connection open, new ones included: to the
// kube-apiserver, etcd has gone silent, as behind a network partition that drops packets
// rather than refusing them. The kube-apiserver itself keeps serving (from its watch cache
// where it can), which is the point: a process signal (SIGSTOP) would stop it serving too.
type gate struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed when the gate thaws; replaced on each freeze
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func newGate(upstream string) (*gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gate{ln: ln, upstream: upstream, thawed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(g.thawed)
	g.wg.Add(1)
	go g.accept()
	return g, nil
}

// addr is the gate's listening address, host:port.
func (g *gate) addr() string { return g.ln.Addr().String() }

func (g *gate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.wg.Add(1)
		go g.relay(c)
	}
}

// track records c so that close can end it; it reports false once the gate is closed.
func (g *gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *gate) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

func (g *gate) relay(down net.Conn) {
	defer g.wg.Done()
	defer down.Close()
	if !g.track(down) {
		return
	}
	defer g.untrack(down)
	// A connection opened while frozen is held, not refused, and dialled on thaw.
	if !g.wait() {
		return
	}
	up, err := net.Dial("tcp", g.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	if !g.track(up) {
		return
	}
	defer g.untrack(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		g.copy(dst, src)
		// One side ended: end both, so the other copy returns too.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, down)
	go pipe(down, up)
	<-done
	<-done
}

// copy moves bytes from src to dst, holding each chunk while the gate is frozen.
func (g *gate) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !g.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while the gate is frozen; it reports false when the gate closed meanwhile.
func (g *gate) wait() bool {
	for {
		g.mu.Lock()
		frozen, thawed, closed := g.frozen, g.thawed, g.closed
		g.mu.Unlock()
		if closed {
			return false
		}
		if !frozen {
			return true
		}
		<-thawed
	}
}

func (g *gate) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.frozen {
		g.frozen = true
		g.thawed = make(chan struct{})
	}
}

func (g *gate) thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen {
		g.frozen = false
		close(g.thawed)
	}
}

// close ends the listener and every connection, and returns once every relay has.
func (g *gate) close() error {
	err := g.ln.Close()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		_ = c.Close()
	}
	g.mu.Unlock()
	g.thaw() // wakes every relay held by a freeze, to find the gate closed
	g.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
