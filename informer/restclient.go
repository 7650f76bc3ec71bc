package informer

import (
	"context"
	"fmt"
	"mime"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rewatch/rewatch/transport/httpapi"
)

// What client-go's REST client does to each request besides sending it on its HTTP client —
// its rate limiter, the media types it asks for, its User-Agent, its timeout and its warning
// handler — the HTTP transport does too on the informer's paths from a clientset
// (ClientsetConfig) and from a rest.Config (ForRESTConfig), so that an informer's requests
// look like, and share a budget with, the program's other requests (docs/semantics.md,
// "Requests").

// restClientContent is rc's content configuration as a request of rc gets it, and whether its
// content type was left to the default (so that a typed client for a built-in type asks for
// protobuf). client-go keeps it in an unexported field; its provider's method is exported, and
// read by reflection. A client-go whose REST client changed shape fails here, loudly.
func restClientContent(rc *rest.RESTClient) (rest.ClientContentConfig, bool, error) {
	f := reflect.ValueOf(rc).Elem().FieldByName("content")
	if !f.IsValid() || !f.CanAddr() {
		return rest.ClientContentConfig{}, false, fmt.Errorf("informer: client-go's RESTClient has no content field: this client-go is not supported")
	}
	p, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Interface().(interface {
		GetClientContentConfig() (rest.ClientContentConfig, bool)
	})
	if !ok {
		return rest.ClientContentConfig{}, false, fmt.Errorf("informer: client-go's RESTClient content has no GetClientContentConfig: this client-go is not supported")
	}
	cc, defaulted := p.GetClientContentConfig()
	return cc, defaulted, nil
}

// restClientWarnings is rc's warning handler (rest.Config's WarningHandler or
// WarningHandlerWithContext), nil when it has none; client-go keeps it unexported.
func restClientWarnings(rc *rest.RESTClient) (rest.WarningHandlerWithContext, error) {
	f := reflect.ValueOf(rc).Elem().FieldByName("warningHandler")
	if !f.IsValid() || f.Type() != reflect.TypeFor[rest.WarningHandlerWithContext]() {
		return nil, fmt.Errorf("informer: client-go's RESTClient has no warningHandler field of type rest.WarningHandlerWithContext: this client-go is not supported")
	}
	h, _ := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(rest.WarningHandlerWithContext)
	return h, nil
}

// acceptOf is the Accept header client-go's typed client sends with content configuration cc:
// the AcceptContentTypes, else a content type set explicitly (with */*); a content type left to
// the default is protobuf with JSON, which client-go's generated clients ask for built-in
// types.
func acceptOf(cc rest.ClientContentConfig, defaulted bool) string {
	switch {
	case cc.AcceptContentTypes != "":
		return cc.AcceptContentTypes
	case defaulted:
		return httpapi.MediaProtobuf + "," + httpapi.MediaJSON
	}
	return cc.ContentType + ", */*"
}

// formatForAccept is the wire format that asks what an Accept header asks, best first, for a
// decoder d: JSON when JSON comes first (rest.Config's ContentType "application/json"), CBOR
// when CBOR does and d reads it, and otherwise the decoder's own order (protobuf first, with
// JSON for what the server has no protobuf for, as client-go's "protobuf, */*").
func formatForAccept(accept string, d httpapi.Decoder) httpapi.Format {
	first, _, _ := strings.Cut(accept, ",")
	mt, _, err := mime.ParseMediaType(strings.TrimSpace(first))
	if err != nil {
		return httpapi.FormatAuto
	}
	switch {
	case mt == httpapi.MediaJSON && slices.Contains(d.MediaTypes(), httpapi.MediaJSON):
		return httpapi.FormatJSON
	case mt == httpapi.MediaCBOR && slices.Contains(d.MediaTypes(), httpapi.MediaCBOR):
		return httpapi.FormatCBOR
	}
	return httpapi.FormatAuto
}

// rateLimiterFor is the rate limiter client-go's REST client made from cfg would wait on:
// cfg.RateLimiter when set (shared by everything made from cfg), else a token bucket of QPS and
// Burst, 5 and 10 when left at zero; none for a negative QPS.
func rateLimiterFor(cfg *rest.Config) httpapi.RateLimiter {
	if cfg.RateLimiter != nil {
		return cfg.RateLimiter
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	if qps <= 0 {
		return nil
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
}

// warningsTo is the handler a REST client with handler h gives response warnings to: h, or
// client-go's default, which logs warnings of code 299 through the context's logger. (A
// process-wide default set with rest.SetDefaultWarningHandler cannot be read back from
// client-go; set the rest.Config's WarningHandlerWithContext instead.)
func warningsTo(h rest.WarningHandlerWithContext) httpapi.WarningHandler {
	if h == nil {
		return rest.WarningLogger{}
	}
	return h
}

// warningHandlerFor is the handler of a REST client made from cfg (rest.Config's
// WarningHandlerWithContext, else its WarningHandler), as warningsTo gives warnings to it.
func warningHandlerFor(cfg *rest.Config) httpapi.WarningHandler {
	switch {
	case cfg.WarningHandlerWithContext != nil:
		return cfg.WarningHandlerWithContext
	case cfg.WarningHandler != nil:
		return legacyWarnings{cfg.WarningHandler}
	}
	return warningsTo(nil)
}

// legacyWarnings is a rest.WarningHandler without a context.
type legacyWarnings struct{ h rest.WarningHandler }

func (l legacyWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, agent, text string) {
	l.h.HandleWarningHeader(code, agent, text)
}
