package transitions

import (
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// classify reads a failure as its fsm.Class, as the classes' docs say. Statuses are judged with
// apimachinery's own predicates so that rewatch and client-go agree on what each Status means.
func classify(f *fsm.Failure) fsm.Class {
	if f == nil {
		return fsm.ClassInternal
	}
	if f.Status == nil && f.Code == 0 {
		if f.Transport == fsm.Decode {
			return fsm.ClassInternal
		}
		return fsm.ClassTransport
	}
	err := statusError(f)
	switch {
	case isTooLargeResourceVersion(err):
		return fsm.ClassTooLargeRV
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return fsm.ClassExpired
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return fsm.ClassBusy
	case apierrors.IsInternalError(err):
		return fsm.ClassInternal
	}
	code := int(err.ErrStatus.Code)
	if code >= 500 || code < 400 {
		// An unknown 5xx, or a Status whose code says nothing: the server is in trouble, not
		// our request. Bounded like an InternalError.
		return fsm.ClassInternal
	}
	return fsm.ClassRejected
}

// statusError wraps the failure's Status (or a Status synthesised from the bare HTTP code) for
// apimachinery's predicates.
func statusError(f *fsm.Failure) *apierrors.StatusError {
	if f.Status != nil {
		st := *f.Status
		if st.Code == 0 {
			st.Code = int32(f.Code)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   int32(f.Code),
		Reason: reasonForCode(f.Code),
	}}
}

// reasonForCode gives a bare HTTP error the reason the API server would have put in its Status,
// as client-go does for responses without a Status body.
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	}
	return metav1.StatusReasonUnknown
}

// retryAfter is the server's hint: the header if present, else the Status's
// details.retryAfterSeconds (read with apimachinery's SuggestsClientDelay).
func retryAfter(f *fsm.Failure) (time.Duration, bool) {
	if f == nil {
		return 0, false
	}
	if f.HasRetryAfter && f.RetryAfter >= 0 {
		return f.RetryAfter, true
	}
	if f.Status == nil {
		return 0, false
	}
	if secs, ok := apierrors.SuggestsClientDelay(&apierrors.StatusError{ErrStatus: *f.Status}); ok && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	return 0, false
}

// isTooLargeResourceVersion recognises the API server's answer to a resourceVersion ahead of its
// own: a Timeout Status with cause ResourceVersionTooLarge. apimachinery has no predicate for it
// (the server's lives in k8s.io/apiserver/pkg/storage). Older servers said it otherwise, and
// client-go's reflector reads them too: kube-apiserver 1.17.0–1.18.5 put the wording only in a
// cause's message, with no cause type and a Status message of its own ("Timeout: too large
// resource version"), and servers before 1.17 only in the Status message.
func isTooLargeResourceVersion(err *apierrors.StatusError) bool {
	st := err.ErrStatus
	timeout := st.Code == http.StatusGatewayTimeout || st.Reason == metav1.StatusReasonTimeout
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type == metav1.CauseTypeResourceVersionTooLarge || timeout && c.Message == tooLargeRVWording {
				return true
			}
		}
	}
	return timeout && strings.Contains(st.Message, tooLargeRVWording)
}

// tooLargeRVWording is how kube-apiserver words "too large resource version", in the cause's
// message since 1.17 and in the Status's message before.
const tooLargeRVWording = "Too large resource version"
