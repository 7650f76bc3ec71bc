package faultproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
)

// encoding is one of the API server's wire formats, as the proxy reads and writes it: the
// frames of a watch stream, a Status body, and an ERROR event carrying one.
type encoding struct {
	contentType string
	// readFrames calls frame with each whole frame of r (its bytes as they travel, framing
	// included) until r ends or frame returns false.
	readFrames func(r io.Reader, frame func([]byte) bool)
	status     func(st metav1.Status) []byte
	// frameOf wraps an encoded WatchEvent for the stream.
	frameOf func(event []byte) []byte
	// eventOf encodes a WatchEvent.
	eventOf   func(we *metav1.WatchEvent) ([]byte, error)
	halfFrame []byte
}

const mediaProtobuf = "application/vnd.kubernetes.protobuf"

var jsonEncoding = encoding{
	contentType: "application/json",
	// The API server writes one event object per line; decoding JSON values gives exactly the
	// frame boundaries.
	readFrames: func(r io.Reader, frame func([]byte) bool) {
		dec := json.NewDecoder(r)
		for {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil || !frame(append(raw, '\n')) {
				return
			}
		}
	},
	status:  encodeStatus,
	frameOf: func(event []byte) []byte { return append(event, '\n') },
	eventOf: func(we *metav1.WatchEvent) ([]byte, error) { return json.Marshal(we) },
	// The start of an event that never ends, so the client's decoder fails mid-object.
	halfFrame: []byte(`{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trunc`),
}

// statusScheme knows the Status kind, for encoding it in protobuf with its envelope.
var statusScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

var protobufEncoding = encoding{
	contentType: mediaProtobuf,
	// Length-delimited frames: a 4-byte big-endian length, then that many bytes of a
	// metav1.WatchEvent, as apimachinery's framer writes them.
	readFrames: func(r io.Reader, frame func([]byte) bool) {
		br := bufio.NewReader(r)
		for {
			var head [4]byte
			if _, err := io.ReadFull(br, head[:]); err != nil {
				return
			}
			b := make([]byte, 4+binary.BigEndian.Uint32(head[:]))
			copy(b, head[:])
			if _, err := io.ReadFull(br, b[4:]); err != nil || !frame(b) {
				return
			}
		}
	},
	status: func(st metav1.Status) []byte {
		var b bytes.Buffer
		if err := protobuf.NewSerializer(statusScheme, statusScheme).Encode(&st, &b); err != nil {
			panic(fmt.Sprintf("faultproxy: encode Status in protobuf: %v", err))
		}
		return b.Bytes()
	},
	frameOf: func(event []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(event))), event...)
	},
	eventOf: func(we *metav1.WatchEvent) ([]byte, error) { return we.Marshal() },
	// A frame that announces 64 bytes and carries 8.
	halfFrame: append(binary.BigEndian.AppendUint32(nil, 64), "\x0a\x08MODIFIE"...),
}

var cborSerializers = cbor.NewSerializerInfo(statusScheme, statusScheme)

// selfDescribedCBOR is the tag (55799) that marks a CBOR item as CBOR.
var selfDescribedCBOR = []byte{0xd9, 0xd9, 0xf7}

var cborEncoding = encoding{
	contentType: "application/cbor",
	// A CBOR sequence (RFC 8742): apimachinery's CBOR framer finds where each item ends. It
	// drops the self-described CBOR tag apimachinery's encoder starts every item with, so the
	// tag is put back: the client sees the bytes the server sent.
	readFrames: func(r io.Reader, frame func([]byte) bool) {
		fr := cbor.NewFramer().NewFrameReader(io.NopCloser(r))
		buf := make([]byte, 64<<10)
		var item []byte
		for {
			n, err := fr.Read(buf)
			item = append(item, buf[:n]...)
			switch {
			case errors.Is(err, io.ErrShortBuffer):
				continue // the rest of this item follows
			case err != nil:
				return
			}
			if !bytes.HasPrefix(item, selfDescribedCBOR) {
				item = append(append([]byte(nil), selfDescribedCBOR...), item...)
			}
			if !frame(item) {
				return
			}
			item = nil
		}
	},
	status: func(st metav1.Status) []byte {
		var b bytes.Buffer
		if err := cborSerializers.Serializer.Encode(&st, &b); err != nil {
			panic(fmt.Sprintf("faultproxy: encode Status in CBOR: %v", err))
		}
		return b.Bytes()
	},
	frameOf: func(event []byte) []byte { return event },
	eventOf: func(we *metav1.WatchEvent) ([]byte, error) {
		var b bytes.Buffer
		err := cborSerializers.StreamSerializer.Serializer.Encode(we, &b)
		return b.Bytes(), err
	},
	// The head of a map that announces more entries than follow.
	halfFrame: []byte{0xa2, 0x64, 't', 'y', 'p', 'e'},
}

// encodingOf is the encoding of a response with this Content-Type; ok is false for a format
// the proxy cannot find frames in (YAML).
func encodingOf(contentType string) (encoding, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return encoding{}, false
	case mt == mediaProtobuf:
		return protobufEncoding, true
	case mt == "application/cbor" || mt == "application/cbor-seq":
		return cborEncoding, true
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return jsonEncoding, true
	}
	return encoding{}, false
}

// negotiated is the encoding the API server would answer a request with this Accept header in:
// protobuf or CBOR when the client lists it first, else JSON.
func negotiated(accept string) encoding {
	first, _, _ := strings.Cut(accept, ",")
	mt, _, err := mime.ParseMediaType(strings.TrimSpace(first))
	switch {
	case err != nil:
	case mt == mediaProtobuf:
		return protobufEncoding
	case mt == "application/cbor":
		return cborEncoding
	}
	return jsonEncoding
}

// errorEvent is one watch frame carrying st.
func (e encoding) errorEvent(st metav1.Status) []byte {
	b, err := e.eventOf(&metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: e.status(st)}})
	if err != nil {
		panic(fmt.Sprintf("faultproxy: marshal watch event: %v", err))
	}
	return e.frameOf(b)
}
