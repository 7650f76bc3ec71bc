package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/rewatch/rewatch/clockx"
)

// Config says where the server is and what to list and watch. Client, Server and Resource
// are required; the rest have defaults.
type Config struct {
	// Client performs every request; it carries TLS and authentication (see rest.HTTPClientFor).
	// It must not have a Timeout: that would cut every watch stream.
	Client *http.Client
	// Server is the API server's base URL, e.g. https://127.0.0.1:6443.
	Server   string
	Resource Resource

	// Decoder turns bodies into objects. Default: Unstructured(), or Metadata() with MetadataOnly.
	Decoder Decoder
	// Format forces a wire format (FormatJSON to debug); the default, FormatAuto, asks for the
	// decoder's formats, best first, and reads whichever the server answers.
	Format Format
	// MetadataOnly asks the server for metadata only (PartialObjectMetadata, as client-go's
	// metadata informers do): a fraction of the bytes and memory for controllers that read no
	// spec or data.
	MetadataOnly bool
	// MaxFrameBytes bounds one watch frame. Default 16 MiB, apimachinery's own decoder limit.
	MaxFrameBytes int64
	// MaxListBytes bounds one LIST response body. Default 2 GiB. A body past it fails as
	// fsm.TooLarge, and the machine pages from then on.
	MaxListBytes int64
	// UserAgent is sent with every request. Default "rewatch", unless ClientUserAgent.
	UserAgent string
	// ClientUserAgent leaves the User-Agent header to Client: client-go's HTTP client from a
	// rest.Config sets its UserAgent on every request that has none (a clientset's defaults to
	// client-go's DefaultKubernetesUserAgent), so requests say what the clientset's say.
	ClientUserAgent bool
	// RateLimiter, when set, is waited on before each LIST request is sent, as client-go's REST
	// client waits on its rate limiter (rest.Config's QPS and Burst, or its RateLimiter) before
	// every request but a watch; watches are not limited, as client-go's are not. Sharing one
	// limiter shares one budget. client-go's flowcontrol.RateLimiter is one.
	RateLimiter RateLimiter
	// RequestTimeout, when positive, bounds each LIST request from the moment it is sent to the
	// end of its body, as rest.Config.Timeout bounds client-go's requests; a LIST past it fails
	// as a timeout. Watches are not bounded by it: they have their own timeoutSeconds and
	// silence bounds (docs/semantics.md, "Requests").
	RequestTimeout time.Duration
	// ListHeadersTimeout bounds how long a LIST waits for its response headers, and
	// ListProgressTimeout how long it waits for more of its body once it has begun: a response
	// that stops coming with the connection held open (a balancer or a node hanging mid
	// response) is cancelled and the LIST fails as fsm.Stalled, retried as a failed LIST
	// (docs/semantics.md, "A response that stops halfway"). Only time spent waiting on the
	// server counts: a body read slowly because the store is slow is not stalled. Defaults
	// DefaultListHeadersTimeout and DefaultListProgressTimeout; negative: no bound.
	ListHeadersTimeout, ListProgressTimeout time.Duration
	// WarningHandler, when set, is given each Warning header of every response (code, agent and
	// text, as apimachinery parses them), as client-go's REST client gives them to its
	// rest.WarningHandlerWithContext, which is one.
	WarningHandler WarningHandler
	// Clock turns a Retry-After HTTP-date into a wait. Default: the wall clock.
	Clock clockx.Clock

	// progressClock measures ListHeadersTimeout and ListProgressTimeout: the wall clock, for a
	// stall is the network's time; tests set another (export_test.go).
	progressClock clockx.Clock
}

// RateLimiter is what a LIST request waits on before it is sent (client-go's
// flowcontrol.RateLimiter is one).
type RateLimiter interface {
	Wait(ctx context.Context) error
}

// WarningHandler is given each Warning header of a response (client-go's
// rest.WarningHandlerWithContext is one).
type WarningHandler interface {
	HandleWarningHeaderWithContext(ctx context.Context, code int, agent string, text string)
}

// Defaults for Config.
const (
	DefaultMaxFrameBytes = 16 << 20
	DefaultMaxListBytes  = 2 << 30
	DefaultUserAgent     = "rewatch"
	// DefaultListHeadersTimeout is kube-apiserver's --request-timeout (60 s by default), within
	// which it answers every non-watch request — a 504 if it could not build the answer — and a
	// margin for the round trip: a LIST with no headers past it has no server behind it.
	DefaultListHeadersTimeout = 70 * time.Second
	// DefaultListProgressTimeout is half that request timeout. kube-apiserver writes a LIST's
	// body from memory once it has begun (its watch cache, or the etcd range it has read), as
	// fast as the connection takes it, and ends the request within its request timeout: a body
	// that has not moved for half of it is not being written, and waiting the whole timeout
	// would leave nothing of it for the LIST asked again.
	DefaultListProgressTimeout = 30 * time.Second
)

// Validate reports everything wrong with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("Client is nil"))
	} else if c.Client.Timeout != 0 {
		errs = append(errs, fmt.Errorf("Client has a Timeout (%v), which would cut every watch stream", c.Client.Timeout))
	}
	if u, err := url.Parse(c.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("Server %q is not an http(s) URL", c.Server))
	} else if u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("Server %q has a query or fragment", c.Server))
	}
	if err := c.Resource.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Format.validate(c.effectiveDecoder()); err != nil {
		errs = append(errs, err)
	}
	if err := validateQuery(c.effectiveDecoder()); err != nil {
		errs = append(errs, err)
	}
	if c.ClientUserAgent && c.UserAgent != "" {
		errs = append(errs, fmt.Errorf("UserAgent %q and ClientUserAgent both set", c.UserAgent))
	}
	for _, f := range []struct {
		name string
		n    int64
	}{{"MaxFrameBytes", c.MaxFrameBytes}, {"MaxListBytes", c.MaxListBytes}, {"RequestTimeout", int64(c.RequestTimeout)}} {
		if f.n < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", f.name, f.n))
		}
	}
	return errors.Join(errs...)
}

// effectiveDecoder is Decoder, or the default for MetadataOnly.
func (c Config) effectiveDecoder() Decoder {
	switch {
	case c.Decoder != nil:
		return c.Decoder
	case c.MetadataOnly:
		return Metadata()
	}
	return Unstructured()
}

func (c Config) withDefaults() Config {
	c.Decoder = c.effectiveDecoder()
	if u, ok := c.Decoder.(unstructuredDecoder); ok {
		u.apiVersion = c.Resource.groupVersion()
		c.Decoder = u
	}
	if _, ok := c.Decoder.(metadataDecoder); ok {
		// Asking for PartialObjectMetadata costs nothing and is what makes protobuf possible
		// for every resource: a full custom resource is never served in protobuf.
		c.MetadataOnly = true
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.MaxListBytes == 0 {
		c.MaxListBytes = DefaultMaxListBytes
	}
	if c.UserAgent == "" && !c.ClientUserAgent {
		c.UserAgent = DefaultUserAgent
	}
	if c.ListHeadersTimeout == 0 {
		c.ListHeadersTimeout = DefaultListHeadersTimeout
	}
	if c.ListProgressTimeout == 0 {
		c.ListProgressTimeout = DefaultListProgressTimeout
	}
	if c.Clock == nil {
		c.Clock = clockx.Real()
	}
	if c.progressClock == nil {
		c.progressClock = clockx.Real()
	}
	return c
}

// Transport performs the driver's requests over HTTP. It is safe for the one request at a
// time the driver makes.
type Transport struct {
	cfg   Config
	path  string
	media []string // what Accept asks for, best first

	answeredMu sync.Mutex
	lastMedia  string // the media type of the last successful response
}

// New validates cfg and fills in its defaults.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi: invalid config: %w", err)
	}
	cfg = cfg.withDefaults()
	return &Transport{cfg: cfg, path: trimSlash(cfg.Server) + cfg.Resource.Path(), media: cfg.Format.mediaTypes(cfg.Decoder)}, nil
}

// WireFormat says what the transport asks the server for: "json", "protobuf", "cbor", or
// "auto (protobuf, json)" with the formats auto asks for, best first.
func (t *Transport) WireFormat() string { return t.cfg.Format.describe(t.cfg.Decoder) }

// AnsweredFormat is the format of the server's last successful response ("" before the first):
// with FormatAuto, what the server chose.
func (t *Transport) AnsweredFormat() string {
	t.answeredMu.Lock()
	defer t.answeredMu.Unlock()
	if t.lastMedia == "" {
		return ""
	}
	return formatName(t.lastMedia)
}

// answered is the media type of a successful response's body, remembered for AnsweredFormat.
func (t *Transport) answered(resp *http.Response) string {
	media := bodyMedia(resp.Header.Get("Content-Type"))
	t.answeredMu.Lock()
	t.lastMedia = media
	t.answeredMu.Unlock()
	return media
}

// String names the resource, for logs.
func (t *Transport) String() string { return t.cfg.Resource.String() }

// Config is the transport's effective configuration.
func (t *Transport) Config() Config { return t.cfg }

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
