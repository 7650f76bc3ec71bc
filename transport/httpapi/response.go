package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/retry"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/cborwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/pbwire"
)

// maxErrorBody bounds how much of a non-2xx body is read: a Status is small, an HTML error
// page need not be read to the end.
const maxErrorBody = 64 << 10

// failureFromResponse translates a non-2xx response: its Status body if it has one, its code,
// and its Retry-After header (delta-seconds or HTTP-date, via retry.FromResponse).
func failureFromResponse(resp *http.Response, now time.Time) *fsm.Failure {
	f := &fsm.Failure{Code: resp.StatusCode}
	if d, ok := retry.FromResponse(resp, now); ok {
		f.RetryAfter, f.HasRetryAfter = d, true
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if st, ok := decodeStatus(bodyMedia(resp.Header.Get("Content-Type")), body); ok {
		f.Status = st
		f.Message = st.Message
		if f.Message == "" {
			f.Message = fmt.Sprintf("HTTP %d: Status %s without a message", resp.StatusCode, st.Reason)
		}
		return f
	}
	f.Message = fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if snippet := printable(body, 120); snippet != "" {
		f.Message += ": body is not a Status: " + snippet
	}
	if err != nil {
		f.Message += " (reading body: " + err.Error() + ")"
	}
	return f
}

// decodeStatus accepts a body only if it really is a metav1.Status, in JSON or in protobuf (the
// server writes its errors in the format it negotiated for the request), or in CBOR.
func decodeStatus(media string, b []byte) (*metav1.Status, bool) {
	var st metav1.Status
	if len(b) == 0 {
		return nil, false
	}
	switch {
	case media == MediaProtobuf || bytes.HasPrefix(b, pbwire.Magic):
		if pbwire.Decode(b, &st) != nil {
			return nil, false
		}
		return &st, true
	case media == MediaCBOR || bytes.HasPrefix(b, cborwire.Magic):
		if cborwire.Decode(b, &st) != nil || st.Kind != "Status" {
			return nil, false
		}
		return &st, true
	}
	if json.Unmarshal(b, &st) != nil || st.Kind != "Status" {
		return nil, false
	}
	return &st, true
}

// asDecodeError marks errors that mean "the bytes were wrong" rather than "the connection
// broke", so the machine treats them like an InternalError and not like a stream end.
func asDecodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var marked *fsm.DecodeError
	if errors.As(err, &marked) {
		return err
	}
	if errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, streaming.ErrObjectTooLarge) ||
		errors.Is(err, ErrFrameTooLarge) {
		return &fsm.DecodeError{Err: err}
	}
	return err
}

// printable returns at most n runes of b for a log line, valid UTF-8, one line.
func printable(b []byte, n int) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}
