// Package httpapi is the reflector's HTTP transport: it speaks to a Kubernetes API server
// directly, one GET per LIST page or watch, and reports what came back — pages, watch frames,
// Status bodies, Retry-After headers, connection failures — as typed fsm events. Like every
// transport it reports facts and decides nothing; what a failure means is package transitions'
// business (docs/semantics.md).
//
// Each wire format is a package of its own under internal/wire — jsonwire, pbwire, cborwire —
// with the same parts: its LIST stream (StreamList), its metadata scan (ScanMeta), its watch
// frames (a wire.Frames) and its decode. What they share is package wire. A new format is a
// new package with those parts and a case where the transport picks a format by media type
// (decodeStream and the decoders' decodeListStreamHeld).
package httpapi
