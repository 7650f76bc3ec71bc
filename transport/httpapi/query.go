package httpapi

import (
	"fmt"
	"net/url"
	"sort"
)

// QueryDecoder is a Decoder whose media types need query parameters of their own on every
// LIST and WATCH request. A decoder of the server's printed tables is one: it asks for
// `application/json;as=Table;v=v1;g=meta.k8s.io` (MediaTypes) and for includeObject=Object,
// so that each row carries its whole object and the store stays what it would be without
// the table (docs/design.md, "Layers": transport).
type QueryDecoder interface {
	Decoder
	// Query is added to every request's query. It must not name a parameter the transport
	// sets itself (transportParams): the machine's requests stay the machine's.
	Query() url.Values
}

// transportParams are the query parameters the transport sets from the resource and the
// machine's commands (Resource.query).
var transportParams = map[string]bool{
	"labelSelector": true, "fieldSelector": true, "resourceVersion": true, "resourceVersionMatch": true,
	"limit": true, "continue": true, "watch": true, "allowWatchBookmarks": true, "timeoutSeconds": true,
	"sendInitialEvents": true,
}

// validateQuery refuses a QueryDecoder's parameters that would override the transport's.
func validateQuery(d Decoder) error {
	qd, ok := d.(QueryDecoder)
	if !ok {
		return nil
	}
	var taken []string
	for k := range qd.Query() {
		if transportParams[k] {
			taken = append(taken, k)
		}
	}
	if len(taken) == 0 {
		return nil
	}
	sort.Strings(taken)
	return fmt.Errorf("the decoder's query sets %v, which the transport sets from the resource and the machine's requests", taken)
}

// decoderQuery adds the decoder's own parameters to q.
func decoderQuery(d Decoder, q url.Values) {
	qd, ok := d.(QueryDecoder)
	if !ok {
		return
	}
	for k, vs := range qd.Query() {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
}
