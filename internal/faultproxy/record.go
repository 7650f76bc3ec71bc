package faultproxy

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Kind is how the proxy classifies a request. Tests assert on it ("no LIST
// happened"), so it follows what a reflector issues rather than REST verbs.
type Kind int

const (
	// Any matches every kind in a Rule; no Record ever has it.
	Any Kind = iota
	// List is a GET that is not a watch (a GET of one object counts too:
	// the proxy does not know the resource layout of the API).
	List
	// Watch is a GET with watch=1/true, or on a legacy /watch/ path.
	Watch
	// Other is every non-GET request.
	Other
)

func (k Kind) String() string {
	switch k {
	case Any:
		return "ANY"
	case List:
		return "LIST"
	case Watch:
		return "WATCH"
	case Other:
		return "OTHER"
	}
	return "Kind(?)"
}

// Record is what the proxy saw of one request and what it did with it.
type Record struct {
	Kind            Kind
	Method          string
	Path            string
	ResourceVersion string
	Query           url.Values
	Time            time.Time
	// Status is the HTTP status the client received; 0 when the connection
	// was closed before any response.
	Status int
	// Fault names the fault applied ("" when passed through untouched).
	Fault string
	// Events counts the watch frames relayed from upstream (injected frames
	// excluded).
	Events int
}

func classify(r *http.Request) Kind {
	if r.Method != http.MethodGet {
		return Other
	}
	switch strings.ToLower(r.URL.Query().Get("watch")) {
	case "1", "true":
		return Watch
	}
	if strings.Contains(r.URL.Path, "/watch/") {
		return Watch
	}
	return List
}
