package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
)

// Classification goes by the error's type, never by its text.
func TestClassify(t *testing.T) {
	for err, want := range map[error]fsm.Transport{
		&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}: fsm.Refused,
		&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}:      fsm.Reset,
		fmt.Errorf("write: %w", syscall.EPIPE):                                             fsm.Reset,
		fmt.Errorf("body: %w", io.ErrUnexpectedEOF):                                        fsm.EOF,
		context.DeadlineExceeded:                                                           fsm.Timeout,
		&fsm.DecodeError{Err: errors.New("invalid character")}:                             fsm.Decode,
		errors.New("connection reset by peer (only the text)"):                             fsm.OtherTransport,
	} {
		require.Equal(t, want, transport.Classify(err), "%v", err)
	}
	require.Equal(t, fsm.NoTransportError, transport.Classify(nil))
}

func TestFromErrorKeepsTheStatus(t *testing.T) {
	f := transport.FromError(fmt.Errorf("list: %w", apierrors.NewTooManyRequests("slow down", 3)))
	require.EqualValues(t, 429, f.Code)
	require.EqualValues(t, 3, f.Status.Details.RetryAfterSeconds)
	require.Equal(t, "slow down", f.Message)
	f = transport.FromError(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})
	require.Nil(t, f.Status)
	require.Equal(t, fsm.Refused, f.Transport)
}

// A failure without a response keeps the error the transport got: the error a watch-error
// handler receives unwraps to it, so errors.Is and errors.As work as on the original.
func TestFailureErrUnwrapsToTheTransportError(t *testing.T) {
	urlErr := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/configmaps", Err: context.DeadlineExceeded}
	err := transport.Failure(urlErr).Err()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var got *url.Error
	require.ErrorAs(t, err, &got)
	require.Equal(t, urlErr.URL, got.URL)
	var te *fsm.TransportError
	require.ErrorAs(t, err, &te)
	require.Equal(t, fsm.Timeout, te.Transport)

	refused := transport.FromError(fmt.Errorf("list: %w", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})).Err()
	require.ErrorIs(t, refused, syscall.ECONNREFUSED)

	// A failure read back from a journal has no original error; it still reads as one.
	require.EqualError(t, (&fsm.Failure{Transport: fsm.Reset, Message: "read tcp"}).Err(), "reset: read tcp")
}
