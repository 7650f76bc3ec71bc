package faultproxy

import (
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The helpers below build the Status errors a real kube-apiserver sends, so
// scripted faults are indistinguishable from real ones on the wire.

// TooManyRequests is a 429; retryAfterSeconds > 0 sets
// details.retryAfterSeconds (the Retry-After header is separate: see
// Fault.WithHeader).
func TooManyRequests(retryAfterSeconds int) *apierrors.StatusError {
	return apierrors.NewTooManyRequests("the server has received too many requests and has asked us to try again later", retryAfterSeconds)
}

// InternalError is a 500 with reason InternalError.
func InternalError() *apierrors.StatusError {
	return apierrors.NewInternalError(errors.New("injected by faultproxy"))
}

// Expired is a 410 with reason Expired, as kube-apiserver sends for a watch that reaches etcd
// at a compacted revision. (Its watch cache says "too old resource version: RV (OLDEST)"
// instead, which the reflector reads as a younger cache behind a load balancer and answers
// differently: docs/semantics.md, "behind a load balancer".)
func Expired() *apierrors.StatusError {
	return apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")
}

// Forbidden is a 403 for the given resource.
func Forbidden(gr schema.GroupResource) *apierrors.StatusError {
	return apierrors.NewForbidden(gr, "", errors.New("injected by faultproxy"))
}

// NotFound is a 404 for the given resource, as for a CRD that is not
// installed.
func NotFound(gr schema.GroupResource) *apierrors.StatusError {
	return apierrors.NewNotFound(gr, "")
}

// TooLargeResourceVersion is the 504 the API server sends when asked for a
// resourceVersion newer than it has; it mirrors
// k8s.io/apiserver/pkg/storage.NewTooLargeResourceVersionError without
// importing the apiserver.
func TooLargeResourceVersion(requested, current uint64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// statusOf turns an error into the Status object the server would send; an
// error that is not an APIStatus becomes an InternalError, as the server's own
// error conversion does.
func statusOf(err error) metav1.Status {
	var st metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.Kind = "Status"
	st.APIVersion = "v1"
	return st
}

func encodeStatus(st metav1.Status) []byte {
	b, err := json.Marshal(st)
	if err != nil {
		panic(fmt.Sprintf("faultproxy: marshal Status: %v", err))
	}
	return b
}
