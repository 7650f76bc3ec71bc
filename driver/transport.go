package driver

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/rewatch/rewatch/fsm"
)

// transportOf names the connection-level failure behind err. It only inspects the error; the
// machine decides what each kind means.
func transportOf(err error) fsm.Transport {
	var de *fsm.DecodeError
	var ne net.Error
	switch {
	case err == nil:
		return fsm.NoTransportError
	case errors.As(err, &de):
		return fsm.Decode
	case errors.Is(err, syscall.ECONNREFUSED):
		return fsm.Refused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return fsm.Reset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fsm.EOF
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return fsm.Timeout
	default:
		return fsm.OtherTransport
	}
}
