package transitions

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
)

var configmaps = schema.GroupResource{Resource: "configmaps"}

// The shapes in which a failure reaches the machine. transport/httpapi reads the response
// itself: the code always, the Status when the body is one (JSON, protobuf or CBOR), nothing
// else when it is not (an HTML page from a proxy, an empty body). transport/listwatch gets
// what client-go's REST client returned and hands it to transport.FromError: a Status with its
// code — the server's own when it sent one, otherwise the one client-go made up with
// apierrors.NewGenericServerResponse, whose reason is client-go's guess from the code.

// httpBare is httpapi's failure for a response whose body is not a Status.
func httpBare(code int) *fsm.Failure {
	return &fsm.Failure{Code: code, Message: fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))}
}

// httpStatus is httpapi's failure for a response whose body is the Status st.
func httpStatus(code int, st metav1.Status) *fsm.Failure {
	st.Status = metav1.StatusFailure
	return &fsm.Failure{Code: code, Status: &st, Message: st.Message}
}

// clientGoGeneric is listwatch's failure for a response client-go could not read a Status
// from (isUnexpectedResponse: the body was something else).
func clientGoGeneric(code int) *fsm.Failure {
	return transport.FromError(apierrors.NewGenericServerResponse(code, "list", configmaps, "", "<html>bad gateway</html>", 0, true))
}

// clientGoStatus is listwatch's failure for an error client-go decoded from the server's Status.
func clientGoStatus(err *apierrors.StatusError) *fsm.Failure { return transport.FromError(err) }

func tooLargeRVStatus() metav1.Status {
	return metav1.Status{Code: 504, Reason: metav1.StatusReasonTimeout, Message: "Too large resource version: 500, current: 100",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}
}

type classifyCase struct {
	name    string
	failure *fsm.Failure
	want    fsm.Class
}

func classifyCases() []classifyCase {
	gone := apierrors.NewResourceExpired("too old resource version: 1 (100)")
	return []classifyCase{
		// The server asks to come back later.
		{"bare 429", httpBare(429), fsm.ClassBusy},
		{"429 TooManyRequests Status", httpStatus(429, metav1.Status{Code: 429, Reason: metav1.StatusReasonTooManyRequests, Details: &metav1.StatusDetails{RetryAfterSeconds: 1}}), fsm.ClassBusy},
		{"client-go 429 (generic)", clientGoGeneric(429), fsm.ClassBusy},
		{"client-go 429 Status", clientGoStatus(apierrors.NewTooManyRequests("slow down", 2)), fsm.ClassBusy},
		{"bare 503", httpBare(503), fsm.ClassBusy},
		{"503 ServiceUnavailable Status", httpStatus(503, metav1.Status{Code: 503, Reason: metav1.StatusReasonServiceUnavailable}), fsm.ClassBusy},
		{"client-go 503 (generic)", clientGoGeneric(503), fsm.ClassBusy},
		{"bare 504", httpBare(504), fsm.ClassBusy},
		{"504 Timeout Status", httpStatus(504, metav1.Status{Code: 504, Reason: metav1.StatusReasonTimeout}), fsm.ClassBusy},
		{"client-go 504 (generic)", clientGoGeneric(504), fsm.ClassBusy},
		{"500 ServerTimeout Status", httpStatus(500, metav1.Status{Code: 500, Reason: metav1.StatusReasonServerTimeout}), fsm.ClassBusy},
		{"client-go ServerTimeout", clientGoStatus(apierrors.NewServerTimeout(configmaps, "list", 2)), fsm.ClassBusy},

		// The server is in trouble: bounded like an InternalError.
		{"bare 500", httpBare(500), fsm.ClassInternal},
		{"500 InternalError Status", httpStatus(500, metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError}), fsm.ClassInternal},
		{"client-go 500 (generic)", clientGoGeneric(500), fsm.ClassInternal},
		{"client-go InternalError", clientGoStatus(apierrors.NewInternalError(errors.New("etcdserver: request timed out"))), fsm.ClassInternal},
		{"bare 502", httpBare(502), fsm.ClassInternal},
		{"client-go 502 (generic)", clientGoGeneric(502), fsm.ClassInternal},
		{"bare 599", httpBare(599), fsm.ClassInternal},
		{"bare 302", httpBare(302), fsm.ClassInternal},
		{"Status without code or reason", &fsm.Failure{Status: &metav1.Status{Status: metav1.StatusFailure, Message: "?"}}, fsm.ClassInternal},
		{"undecodable frame", &fsm.Failure{Transport: fsm.Decode, Message: "decode: bad frame"}, fsm.ClassInternal},
		{"no failure at all", nil, fsm.ClassInternal},

		// The resourceVersion is too old.
		{"bare 410", httpBare(410), fsm.ClassExpired},
		{"410 Expired Status", httpStatus(410, metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired}), fsm.ClassExpired},
		{"410 Gone Status", httpStatus(410, metav1.Status{Code: 410, Reason: metav1.StatusReasonGone}), fsm.ClassExpired},
		{"ERROR frame 410 Expired (code only in the Status)", &fsm.Failure{Status: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}}, fsm.ClassExpired},
		{"client-go 410 (generic)", clientGoGeneric(410), fsm.ClassExpired},
		{"client-go ResourceExpired", clientGoStatus(gone), fsm.ClassExpired},

		// The resourceVersion is ahead of the server.
		{"504 with cause ResourceVersionTooLarge", httpStatus(504, tooLargeRVStatus()), fsm.ClassTooLargeRV},
		{"504 Timeout with the old message only", httpStatus(504, metav1.Status{Code: 504, Reason: metav1.StatusReasonTimeout, Message: "Too large resource version: 5, current: 1"}), fsm.ClassTooLargeRV},
		{"504 Timeout, kube-apiserver 1.17.0–1.18.5: the wording only in a cause's message", httpStatus(504, metav1.Status{Code: 504, Reason: metav1.StatusReasonTimeout, Message: "Timeout: too large resource version",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: "Too large resource version"}}}}), fsm.ClassTooLargeRV},
		{"504 Timeout with another cause's message", httpStatus(504, metav1.Status{Code: 504, Reason: metav1.StatusReasonTimeout, Message: "Timeout: request did not complete",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: "etcd is slow"}}}}), fsm.ClassBusy},
		{"client-go too large RV Status, 1.17.0–1.18.5 form", clientGoStatus(func() *apierrors.StatusError {
			err := apierrors.NewTimeoutError("too large resource version", 1)
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
			return err
		}()), fsm.ClassTooLargeRV},
		{"client-go too large RV Status", clientGoStatus(&apierrors.StatusError{ErrStatus: tooLargeRVStatus()}), fsm.ClassTooLargeRV},

		// No response at all.
		{"connection refused", transport.Failure(&dialError{syscall.ECONNREFUSED}), fsm.ClassTransport},
		{"connection reset", &fsm.Failure{Transport: fsm.Reset, Message: "read: connection reset by peer"}, fsm.ClassTransport},
		{"EOF before the response", transport.Failure(io.ErrUnexpectedEOF), fsm.ClassTransport},
		{"client-side timeout", &fsm.Failure{Transport: fsm.Timeout, Message: "i/o timeout"}, fsm.ClassTransport},

		// The request itself is refused.
		{"bare 401", httpBare(401), fsm.ClassRejected},
		{"bare 403", httpBare(403), fsm.ClassRejected},
		{"bare 404", httpBare(404), fsm.ClassRejected},
		{"403 Forbidden Status", httpStatus(403, metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden}), fsm.ClassRejected},
		{"400 BadRequest Status (an invalid continue token)", httpStatus(400, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest}), fsm.ClassRejected},
		{"422 Invalid Status (watch-list unsupported)", httpStatus(422, metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid}), fsm.ClassRejected},
		{"client-go 401 (generic)", clientGoGeneric(401), fsm.ClassRejected},
		{"client-go 404 (generic)", clientGoGeneric(404), fsm.ClassRejected},
		{"client-go Forbidden", clientGoStatus(apierrors.NewForbidden(configmaps, "", errors.New("RBAC: no"))), fsm.ClassRejected},
		{"client-go 400 (generic)", clientGoGeneric(400), fsm.ClassRejected},
	}
}

// dialError is a dial failure as net returns it, without a network to dial.
type dialError struct{ errno syscall.Errno }

func (e *dialError) Error() string { return "dial tcp 127.0.0.1:1: connect: " + e.errno.Error() }
func (e *dialError) Unwrap() error { return e.errno }

// Every shape of every answer is read as its class, whichever transport carried it.
func TestClassify(t *testing.T) {
	for _, c := range classifyCases() {
		assert.Equal(t, c.want, classify(c.failure), "%s: %+v", c.name, c.failure)
	}
}

// The classes of one answer must not depend on the transport: the bare response httpapi sees
// and the error client-go makes of it read alike.
func TestClassifyAgreesAcrossTransports(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 405, 409, 410, 422, 429, 500, 501, 502, 503, 504, 599} {
		assert.Equal(t, classify(httpBare(code)), classify(clientGoGeneric(code)), "HTTP %d", code)
	}
}

// What each class leads to, in the state that reads it: a cause whose rule reads the event, on
// the request in flight, in that class — the class, not the shape a transport gave the
// failure, decides which rules may take it.
func TestClassifiedFailuresTakeTheirCause(t *testing.T) {
	m := MustNew(Config{})
	w := watching(t, m)
	listing, _ := m.Next(m.Initial(), fsm.Event{Kind: fsm.EvStart, Now: benchT0})
	for _, c := range classifyCases() {
		we := fsm.Event{Kind: fsm.EvWatchOpenFailed, Now: benchT0, Request: w.Request, Failure: c.failure}
		got := m.Classify(&w, &we)
		assert.True(t, readsAs(got, answersWatch, we.Kind, c.want), "%s opening a watch: %s does not read a watch's %s", c.name, got, c.want)
		assert.True(t, Table.Facts(got).Classes.Has(c.want), "%s: cause %s does not declare class %s", c.name, got, c.want)

		le := fsm.Event{Kind: fsm.EvListFailed, Now: benchT0, Request: listing.Request, Failure: c.failure}
		got = m.Classify(&listing, &le)
		assert.True(t, readsAs(got, answersList, le.Kind, c.want), "%s answering the first LIST: %s does not read a LIST's %s", c.name, got, c.want)
		assert.True(t, Table.Facts(got).Classes.Has(c.want), "%s: cause %s does not declare class %s", c.name, got, c.want)
	}
}

// readsAs reports whether cause's rule reads an event of kind, answering on, in class.
func readsAs(cause fsm.Cause, on answers, kind fsm.EventKind, class fsm.Class) bool {
	r := ruleOf[cause]
	if r == nil {
		return false
	}
	for _, rd := range r.reads {
		if rd.on == on && slices.Contains(rd.kinds, kind) && rd.admits(class) {
			return true
		}
	}
	return false
}

func TestClassifyCoversEveryClass(t *testing.T) {
	seen := map[fsm.Class]bool{}
	for _, c := range classifyCases() {
		seen[c.want] = true
	}
	for cl := fsm.ClassBusy; cl <= fsm.ClassRejected; cl++ {
		require.True(t, seen[cl], "no case of class %s", cl)
	}
}
