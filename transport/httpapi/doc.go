// Package httpapi is the reflector's HTTP transport: it speaks to a Kubernetes API server
// directly, one GET per LIST page or watch, and reports what came back — pages, watch frames,
// Status bodies, Retry-After headers, connection failures — as typed fsm events. Like every
// transport it reports facts and decides nothing; what a failure means is package transitions'
// business (docs/semantics.md).
//
// Each wire format is one file set behind one frameFormat (watch_frames.go): json_*.go,
// protobuf*.go, cbor*.go — its LIST stream, its metadata scan, its watch frames and its
// decode (wire.go says which file is which). A new format is a new set and its frameFormat.
package httpapi
