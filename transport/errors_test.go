package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
