// Package transport holds what every transport shares: how an error that got no answer from
// the server is named (fsm.Transport), and how a client-go error becomes an fsm.Failure. The
// transports themselves are its subpackages: httpapi speaks HTTP, listwatch goes through a
// client-go ListerWatcher.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/fsm"
)

// Classify names the connection-level failure behind err. It only inspects the error's type;
// the machine decides what each kind means.
func Classify(err error) fsm.Transport {
	var de *fsm.DecodeError
	var ne net.Error
	switch {
	case err == nil:
		return fsm.NoTransportError
	case errors.As(err, &de):
		return fsm.Decode
	case errors.Is(err, ErrStalled):
		return fsm.Stalled
	case errors.Is(err, syscall.ECONNREFUSED):
		return fsm.Refused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return fsm.Reset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fsm.EOF
	case errors.Is(err, ErrSilent), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return fsm.Timeout
	default:
		return fsm.OtherTransport
	}
}

// Failure translates an error that got no usable response: the connection-level kind and the
// error's text, for logs.
func Failure(err error) *fsm.Failure {
	return &fsm.Failure{Transport: Classify(err), Message: err.Error(), Cause: err}
}

// FromError translates an error a client-go client returned: the server's Status when err
// carries one (a *apierrors.StatusError, with its code and details.retryAfterSeconds, which
// the machine reads itself), the connection-level failure otherwise.
func FromError(err error) *fsm.Failure {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		f := &fsm.Failure{Status: &st, Code: int(st.Code), Message: st.Message}
		if f.Message == "" {
			f.Message = fmt.Sprintf("%d %s: %v", st.Code, st.Reason, err)
		}
		return f
	}
	return Failure(err)
}
