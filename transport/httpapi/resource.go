package httpapi

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/rewatch/rewatch/fsm"
)

// Resource says what to list and watch.
type Resource struct {
	// Group is "" for the core API (/api/v1), else the API group (/apis/<group>/<version>).
	Group    string
	Version  string
	Resource string
	// Namespace limits the reflector to one namespace; "" watches all namespaces.
	Namespace     string
	LabelSelector string
	FieldSelector string
}

func (r Resource) validate() error {
	var errs []error
	if r.Version == "" {
		errs = append(errs, errors.New("resource version is empty (e.g. v1)"))
	}
	if r.Resource == "" {
		errs = append(errs, errors.New("resource name is empty (e.g. configmaps)"))
	}
	for _, s := range []string{r.Group, r.Version, r.Resource, r.Namespace} {
		if s != path.Clean("/" + s)[1:] || strings.Contains(s, "/") || len(s) > 253 {
			errs = append(errs, fmt.Errorf("%q is not a valid path segment", s))
		}
	}
	return errors.Join(errs...)
}

// String is the resource as kubectl would name it, e.g. "configmaps.v1 in default".
func (r Resource) String() string {
	s := r.Resource + "." + r.Version
	if r.Group != "" {
		s += "." + r.Group
	}
	if r.Namespace != "" {
		s += " in " + r.Namespace
	}
	return s
}

// groupVersion is the apiVersion the server answers in: "v1", or "group/version".
func (r Resource) groupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Path is the collection's URL path.
func (r Resource) Path() string {
	p := "/api/" + r.Version
	if r.Group != "" {
		p = "/apis/" + r.Group + "/" + r.Version
	}
	if r.Namespace != "" {
		p += "/namespaces/" + r.Namespace
	}
	return p + "/" + r.Resource
}

// query renders a LIST or WATCH command as query parameters. Every parameter comes from the
// command; the driver adds only the selectors the caller configured.
func (r Resource) query(c *fsm.Command) url.Values {
	q := url.Values{}
	if r.LabelSelector != "" {
		q.Set("labelSelector", r.LabelSelector)
	}
	if r.FieldSelector != "" {
		q.Set("fieldSelector", r.FieldSelector)
	}
	if c.RVSet || c.ResourceVersion != "" {
		q.Set("resourceVersion", c.ResourceVersion)
	}
	if c.Match != "" {
		q.Set("resourceVersionMatch", c.Match)
	}
	switch c.Kind {
	case fsm.CmdListPage:
		if c.Limit > 0 {
			q.Set("limit", strconv.FormatInt(c.Limit, 10))
		}
		if c.Continue != "" {
			q.Set("continue", c.Continue)
		}
	case fsm.CmdOpenWatch:
		q.Set("watch", "true")
		if c.Bookmarks {
			q.Set("allowWatchBookmarks", "true")
		}
		if c.TimeoutSeconds > 0 {
			q.Set("timeoutSeconds", strconv.FormatInt(c.TimeoutSeconds, 10))
		}
		if c.SendInitialEvents {
			q.Set("sendInitialEvents", "true")
		}
	}
	return q
}
