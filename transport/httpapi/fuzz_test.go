package httpapi_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// FuzzWatchStream feeds arbitrary bytes to the watch-frame decoder: it must never panic, must
// end every stream with exactly one terminal event, and every object event must carry a key.
func FuzzWatchStream(f *testing.F) {
	for _, seed := range []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}` + "\n",
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}`,
		`{"type":"ERROR","object":{"kind":"ConfigMap"}}`,
		`{"type":"DELETED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}{"type":"ADDED"`,
		`<html>502</html>`,
		`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"tr`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var events []fsm.Event
		httpapi.DecodeStreamForTest(io.NopCloser(bytes.NewReader(body)), 4096, func(e fsm.Event) bool {
			events = append(events, e)
			return true
		})
		if len(events) == 0 {
			t.Fatal("stream ended without a terminal event")
		}
		for i, e := range events {
			terminal := e.Kind == fsm.EvWatchEnded || e.Kind == fsm.EvWatchError
			if terminal != (i == len(events)-1) {
				t.Fatalf("event %d of %d: %s", i, len(events), e)
			}
			if e.Kind == fsm.EvWatchEvent && e.Type != fsm.Bookmark && (e.Object == nil || e.Key == "") {
				t.Fatalf("object event without object or key: %s", e)
			}
			if e.Failure != nil && e.Failure.Status == nil && e.Failure.Transport == fsm.NoTransportError {
				t.Fatalf("failure that says nothing: %s", e)
			}
		}
	})
}
