package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Handler serves the API. Requests arriving after Close get 503.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			writeStatus(w, apierrors.NewServiceUnavailable("server is shutting down"))
			return
		}
		s.active.Add(1)
		s.mu.Unlock()
		defer s.active.Done()
		if s.handlerWrap != nil {
			s.handlerWrap(w, r)
			return
		}
		s.serve(w, r)
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/livez":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	}
	res, namespace, ok := s.route(r.URL.Path)
	if !ok {
		writeStatus(w, notFound())
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, apierrors.NewMethodNotSupported(res.gvr.GroupResource(), strings.ToLower(r.Method)))
		return
	}
	opts, err := parseListOptions(r)
	if err != nil {
		writeStatus(w, err)
		return
	}
	enc, ok := negotiate(r.Header.Get("Accept"), res, opts.Watch)
	if !ok {
		writeStatus(w, notAcceptable(res))
		return
	}
	p, err := newPredicate(namespace, opts)
	if err != nil {
		enc.writeStatus(w, err)
		return
	}
	if opts.Watch {
		s.serveWatch(w, r, res, enc, p, opts)
		return
	}
	s.serveList(w, r, res, enc, p, opts)
}

// route resolves a collection path. Resources are looked up by the
// snapshot taken at New, which is immutable, so no lock is needed.
func (s *Server) route(path string) (*resource, string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gv schema.GroupVersion
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		gv, parts = schema.GroupVersion{Version: "v1"}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return nil, "", false
	}
	namespace := ""
	if len(parts) == 3 && parts[0] == "namespaces" && parts[1] != "" {
		namespace, parts = parts[1], parts[2:]
	}
	if len(parts) != 1 {
		return nil, "", false
	}
	r := s.resources[gv.WithResource(parts[0])]
	return r, namespace, r != nil
}

// notFound is the body kube-apiserver sends for a path it does not serve.
func notFound() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: "the server could not find the requested resource",
		Reason:  metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{},
		Code:    http.StatusNotFound,
	}}
}

func notAcceptable(res *resource) *apierrors.StatusError {
	types := "application/json"
	if res.servesProtobuf() {
		types += ", " + mediaProtobuf
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: "only the following media types are accepted: " + types,
		Reason:  metav1.StatusReasonNotAcceptable,
		Code:    http.StatusNotAcceptable,
	}}
}

// writeStatus answers in JSON, before a format was negotiated.
func writeStatus(w http.ResponseWriter, err error) {
	st := statusOf(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

func statusOf(err error) metav1.Status {
	var st metav1.Status
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se.Status()
	} else {
		st = apierrors.NewInternalError(err).ErrStatus
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return st
}

// parseListOptions reads the query the way the apiserver's parameter codec
// does, then applies apimachinery's own ListOptions validation, which the
// apiserver runs before touching storage.
func parseListOptions(r *http.Request) (internalversion.ListOptions, error) {
	q := r.URL.Query()
	var o internalversion.ListOptions
	boolParam := func(name string, dst *bool) error {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("%s must be a boolean: %q", name, v))
			}
			*dst = b
		}
		return nil
	}
	if err := boolParam("watch", &o.Watch); err != nil {
		return o, err
	}
	if err := boolParam("allowWatchBookmarks", &o.AllowWatchBookmarks); err != nil {
		return o, err
	}
	if q.Has("sendInitialEvents") {
		var b bool
		if err := boolParam("sendInitialEvents", &b); err != nil {
			return o, err
		}
		o.SendInitialEvents = &b
	}
	o.ResourceVersion = q.Get("resourceVersion")
	o.ResourceVersionMatch = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	o.Continue = q.Get("continue")
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, apierrors.NewBadRequest(fmt.Sprintf("limit must be a non-negative integer: %q", v))
		}
		o.Limit = n
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds must be a non-negative integer: %q", v))
		}
		o.TimeoutSeconds = &n
	}
	var err error
	if o.LabelSelector, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if o.FieldSelector, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if o.ResourceVersion != "" {
		if _, err := strconv.ParseUint(o.ResourceVersion, 10, 64); err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", o.ResourceVersion))
		}
	}
	// The WatchList feature gate is on by default since 1.34.
	if errs := validation.ValidateListOptions(&o, true); len(errs) > 0 {
		return o, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return o, nil
}

// predicate selects objects for one request.
type predicate struct {
	namespace string
	label     labels.Selector
	field     fields.Selector
}

func newPredicate(namespace string, o internalversion.ListOptions) (predicate, error) {
	for _, req := range o.FieldSelector.Requirements() {
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			return predicate{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return predicate{namespace: namespace, label: o.LabelSelector, field: o.FieldSelector}, nil
}

func (p predicate) matches(o *object) bool {
	if p.namespace != "" && o.namespace != p.namespace {
		return false
	}
	return p.label.Matches(o.labelSet()) && p.field.Matches(o.fieldSet())
}

// empty reports whether only the path scopes the request, in which case a
// list can count the items it did not return (remainingItemCount).
func (p predicate) empty() bool { return p.label.Empty() && p.field.Empty() }
