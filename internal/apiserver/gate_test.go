package apiserver

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write(append(sc.Bytes(), '\n')); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	return r.ReadString('\n')
}

// Frozen, the gate holds bytes both ways and keeps the connection open; thawed, what it held
// arrives. A connection opened while frozen waits for the thaw too.
func TestGateFreezeHoldsBytesAndConnections(t *testing.T) {
	g, err := newGate(echoServer(t))
	require.NoError(t, err)
	defer func() { require.NoError(t, g.close()) }()

	c, err := net.Dial("tcp", g.addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	got, err := roundTrip(c, r, "one", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "one\n", got)

	g.freeze()
	_, err = roundTrip(c, r, "two", 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "no answer while frozen")
	assert.True(t, ne.Timeout())

	late, err := net.Dial("tcp", g.addr())
	require.NoError(t, err, "a frozen gate still accepts")
	defer late.Close()
	lr := bufio.NewReader(late)
	_, err = roundTrip(late, lr, "late", 300*time.Millisecond)
	require.ErrorAs(t, err, &ne)

	g.thaw()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err = r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "two\n", got, "what was held arrives on thaw")
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err = lr.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "late\n", got)
}

// close ends connections held by a frozen gate instead of hanging on them.
func TestGateCloseWhileFrozen(t *testing.T) {
	g, err := newGate(echoServer(t))
	require.NoError(t, err)
	c, err := net.Dial("tcp", g.addr())
	require.NoError(t, err)
	defer c.Close()
	g.freeze()
	_, _ = c.Write([]byte("held\n"))
	done := make(chan error)
	go func() { done <- g.close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("close hung on a frozen connection")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	assert.Error(t, err, "the connection was closed")
}
