package fsm

import (
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Failure is what a failed request or a broken stream told the driver, translated but not
// judged: classifying it is the machine's job.
type Failure struct {
	// Status is the API's own answer: the body of a non-2xx response or the object of an ERROR frame.
	Status *metav1.Status `json:"status,omitempty"`
	// Code is the HTTP status code when there was a response.
	Code int `json:"code,omitempty"`
	// RetryAfter is the response's Retry-After header, already parsed and validated by the driver
	// (delta-seconds or HTTP-date; negative and unparsable values never get here).
	// Details.retryAfterSeconds of Status is read by the machine itself.
	RetryAfter    time.Duration `json:"retryAfter,omitempty"`
	HasRetryAfter bool          `json:"hasRetryAfter,omitempty"`
	// Transport is the kind of connection-level failure, when there was one.
	Transport Transport `json:"transport,omitempty"`
	// Message is a human-readable description for logs. Never a decision input.
	Message string `json:"message,omitempty"`
	// Cause is the error the transport got, when it got one and no Status: kept so that Err
	// unwraps to it (errors.Is(err, context.DeadlineExceeded), errors.As to *url.Error). Never
	// a decision input, and not journaled: a replayed failure has only its Transport and
	// Message.
	Cause error `json:"-"`
}

// Err is the failure as an error that apimachinery's predicates read the way client-go's
// callers expect: a *apierrors.StatusError when the server answered (so apierrors.IsNotFound,
// IsTooManyRequests, SuggestsClientDelay work), a *TransportError otherwise.
func (f *Failure) Err() error {
	switch {
	case f.Status != nil:
		st := *f.Status
		if st.Code == 0 {
			st.Code = int32(f.Code)
		}
		return &apierrors.StatusError{ErrStatus: st}
	case f.Code != 0:
		retry := 0
		if f.HasRetryAfter {
			retry = int(f.RetryAfter.Seconds())
		}
		return apierrors.NewGenericServerResponse(f.Code, "", schema.GroupResource{}, "", f.Message, retry, false)
	}
	return &TransportError{Transport: f.Transport, Message: f.Message, Err: f.Cause}
}

// WatchCacheTooOld reads the 410 a kube-apiserver's watch cache gives a watch from a
// resourceVersion older than its oldest event: Status message "too old resource version:
// ASKED (OLDEST)". ok is false for any other answer, etcd's own 410 after a compaction
// included.
func (f *Failure) WatchCacheTooOld() (asked, oldest uint64, ok bool) {
	if f == nil || f.Status == nil {
		return 0, 0, false
	}
	rest, found := strings.CutPrefix(f.Status.Message, watchCacheTooOld)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, " (")
	b, closed := strings.CutSuffix(b, ")")
	if !found || !closed {
		return 0, 0, false
	}
	asked, err1 := strconv.ParseUint(a, 10, 64)
	oldest, err2 := strconv.ParseUint(b, 10, 64)
	return asked, oldest, err1 == nil && err2 == nil
}

// watchCacheTooOld begins the message of kube-apiserver's watch cache for a resourceVersion
// older than its oldest event (k8s.io/apiserver's cacher).
const watchCacheTooOld = "too old resource version: "

// TooOldMessage is the message WatchCacheTooOld reads, for tests and simulators.
func TooOldMessage(asked, oldest string) string {
	return watchCacheTooOld + asked + " (" + oldest + ")"
}

// TransportError is a failure that got no response from the server. It unwraps to the error
// the transport got, when there was one.
type TransportError struct {
	Transport Transport
	Message   string
	Err       error
}

func (e *TransportError) Unwrap() error { return e.Err }

func (e *TransportError) Error() string {
	if e.Transport == NoTransportError {
		return e.Message
	}
	return e.Transport.String() + ": " + e.Message
}

// Transport names a connection-level failure.
type Transport uint8

const (
	NoTransportError Transport = iota
	// Refused: nothing listens (ECONNREFUSED).
	Refused
	// Reset: the peer reset or dropped the connection.
	Reset
	// EOF: the connection closed where more bytes were due (includes a truncated frame).
	EOF
	// Timeout: a dial or read deadline passed.
	Timeout
	// Decode: bytes arrived but did not form a valid frame or object.
	Decode
	// OtherTransport: any other client-side failure (TLS, DNS, proxy).
	OtherTransport
	// TooLarge: the response was larger than the client takes (a LIST body past MaxListBytes).
	TooLarge
	// Stalled: the response stopped coming — its headers, or the rest of its body — for longer
	// than the client's progress bound, with the connection held open.
	Stalled
)

var transportNames = enumNames[Transport]{typ: "Transport", kind: "transport",
	names: []string{"", "refused", "reset", "eof", "timeout", "decode", "other", "too-large", "stalled"}}

func (t Transport) String() string                { return transportNames.String(t) }
func (t Transport) MarshalText() ([]byte, error)  { return transportNames.MarshalText(t) }
func (t *Transport) UnmarshalText(b []byte) error { return transportNames.UnmarshalText(t, b) }

// DecodeError marks an error as a frame or object that would not decode, so the driver can
// tell it apart from a broken connection.
type DecodeError struct{ Err error }

func (e *DecodeError) Error() string { return "decode: " + e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }
