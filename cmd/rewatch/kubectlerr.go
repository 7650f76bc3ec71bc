package main

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/clientcmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// kubectlMessage is err as kubectl prints an error before it exits (its cmdutil.CheckErr),
// ending in a newline: "Error from server (Forbidden): …" for the server's refusals,
// "error: You must be logged in to the server (…)" for a 401, "error: …" for the rest.
// kubectl's own function exits the process; this one only words the message.
func kubectlMessage(err error) string {
	if agg, ok := err.(utilerrors.Aggregate); ok && len(agg.Errors()) == 1 {
		err = agg.Errors()[0]
	}
	var msg string
	var status apierrors.APIStatus
	var noMatch *meta.NoResourceMatchError
	var agg utilerrors.Aggregate
	switch {
	case errors.As(err, &status) && status.Status().Reason == metav1.StatusReasonInvalid:
		msg = invalidMessage(status.Status())
	case clientcmd.IsConfigurationInvalid(err):
		msg = cmdutil.MultilineError("Error in configuration: ", err)
	case errors.As(err, &noMatch):
		msg = noMatchMessage(noMatch)
	case errors.As(err, &agg):
		msg = cmdutil.MultipleErrors("", agg.Errors())
	default:
		if status != nil {
			// The server's refusal itself, not the error that carried it.
			err = status.(error)
		}
		var ok bool
		if msg, ok = cmdutil.StandardErrorMessage(err); !ok {
			msg = err.Error()
			if !strings.HasPrefix(msg, "error: ") {
				msg = "error: " + msg
			}
		}
	}
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg
}

// invalidMessage is kubectl's wording of a 422 Invalid.
func invalidMessage(st metav1.Status) string {
	s := "The request is invalid"
	d := st.Details
	switch {
	case d == nil:
		if st.Message != "" {
			s += ": " + st.Message
		}
		return s
	case d.Kind != "" || d.Name != "":
		s = fmt.Sprintf("The %s %q is invalid", d.Kind, d.Name)
	case st.Message != "" && len(d.Causes) == 0:
		s += ": " + st.Message
	}
	if len(d.Causes) == 0 {
		return s
	}
	var errs []error
	seen := map[string]bool{}
	for _, c := range d.Causes {
		m := fmt.Sprintf("%s: %s", c.Field, c.Message)
		if !seen[m] {
			seen[m] = true
			errs = append(errs, errors.New(m))
		}
	}
	return cmdutil.MultilineError(s+": ", utilerrors.NewAggregate(errs))
}

func noMatchMessage(e *meta.NoResourceMatchError) string {
	r := e.PartialResource
	switch {
	case r.Group != "" && r.Version != "":
		return fmt.Sprintf("error: the server doesn't have a resource type %q in group %q and version %q", r.Resource, r.Group, r.Version)
	case r.Group != "":
		return fmt.Sprintf("error: the server doesn't have a resource type %q in group %q", r.Resource, r.Group)
	case r.Version != "":
		return fmt.Sprintf("error: the server doesn't have a resource type %q in version %q", r.Resource, r.Version)
	}
	return fmt.Sprintf("error: the server doesn't have a resource type %q", r.Resource)
}
