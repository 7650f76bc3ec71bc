package httpapi

import (
	"fmt"
	"mime"
	"slices"
	"strings"
)

// Media types of the API server's wire formats.
const (
	MediaJSON     = "application/json"
	MediaProtobuf = "application/vnd.kubernetes.protobuf"
	MediaCBOR     = "application/cbor"
)

// mediaCBORSequence is the Content-Type of a CBOR watch stream (RFC 8742).
const mediaCBORSequence = "application/cbor-seq"

// Format is the wire format a transport asks the server for.
type Format string

const (
	// FormatAuto asks for the decoder's formats, best first (protobuf for built-in types with a
	// Typed or Metadata decoder, JSON otherwise), and reads whichever one the server answers:
	// a server or aggregated API that serves only JSON works unchanged.
	FormatAuto Format = ""
	// FormatJSON asks for JSON only: for debugging, or to read the stream with a human's eyes.
	FormatJSON Format = "json"
	// FormatProtobuf asks for protobuf only (built-in types; custom resources are not served in
	// protobuf, and a server answers 406 for them).
	FormatProtobuf Format = "protobuf"
	// FormatCBOR asks for CBOR only, for decoders that read it (kube-apiserver serves CBOR behind
	// the CBORServingAndStorage feature gate).
	FormatCBOR Format = "cbor"
)

var formatMedia = map[Format]string{FormatJSON: MediaJSON, FormatProtobuf: MediaProtobuf, FormatCBOR: MediaCBOR}

func (f Format) validate(d Decoder) error {
	if f == FormatAuto {
		return nil
	}
	media, ok := formatMedia[f]
	if !ok {
		return fmt.Errorf("Format %q is not one of json, protobuf, cbor (or empty for the decoder's choice)", string(f))
	}
	if d != nil && !slices.Contains(d.MediaTypes(), media) {
		return fmt.Errorf("Format %q: the decoder reads only %s", string(f), strings.Join(d.MediaTypes(), ", "))
	}
	return nil
}

// mediaTypes is what the transport asks for, best first.
func (f Format) mediaTypes(d Decoder) []string {
	if f == FormatAuto {
		return d.MediaTypes()
	}
	return []string{formatMedia[f]}
}

// describe is the format as a journal header and the CLI show it: "protobuf" when forced, or
// "auto (protobuf, json)" with what auto asks for.
func (f Format) describe(d Decoder) string {
	if f != FormatAuto {
		return string(f)
	}
	names := make([]string, 0, 3)
	for _, m := range d.MediaTypes() {
		names = append(names, formatName(m))
	}
	return "auto (" + strings.Join(names, ", ") + ")"
}

func formatName(media string) string {
	for f, m := range formatMedia {
		if m == media {
			return string(f)
		}
	}
	return media
}

// acceptHeader lists media, best first, each qualified with as/g/v when the server is asked for
// a meta.k8s.io kind (PartialObjectMetadata) instead of the resource's own. Plain JSON ends a
// qualified list, so that a server that cannot convert answers with the object as it is, which
// the metadata decoder reads as well.
func acceptHeader(media []string, as string) string {
	parts := make([]string, 0, len(media)+1)
	for _, m := range media {
		if as != "" {
			m += ";as=" + as + ";g=meta.k8s.io;v=v1"
		}
		parts = append(parts, m)
	}
	if as != "" && slices.Contains(media, MediaJSON) {
		parts = append(parts, MediaJSON)
	}
	return strings.Join(parts, ", ")
}

// bodyMedia is the media type of a response, from its Content-Type: protobuf or CBOR when it
// says so, JSON for anything else (a missing header included), which the JSON decoders then
// accept or reject as bytes.
func bodyMedia(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
	case mt == MediaProtobuf:
		return MediaProtobuf
	case mt == MediaCBOR || mt == mediaCBORSequence:
		return MediaCBOR
	}
	return MediaJSON
}
