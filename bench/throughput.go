package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
)

// WatchStream is a pre-built watch body of n ADDED/MODIFIED events of ~1 KiB configmaps:
// the first `names` events add objects, the rest modify them in turn, resourceVersions
// increasing from 2.
func WatchStream(n, names int) []byte {
	var b bytes.Buffer
	pad := strings.Repeat("y", 850)
	for i := range n {
		typ := "MODIFIED"
		if i < names {
			typ = "ADDED"
		}
		fmt.Fprintf(&b, `{"type":%q,"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%05d","namespace":"bench","uid":"00000000-0000-0000-0000-%012d","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench"}},"data":{"payload":%q,"seq":"%d"}}}`+"\n",
			typ, i%names, i%names, i+2, pad, i)
	}
	return b.Bytes()
}

// StreamServer serves an empty LIST at resourceVersion 1 and, on every watch request, the
// given stream, then holds the connection open until the client goes away.
func StreamServer(stream []byte) (*httptest.Server, *atomic.Int64) {
	var watches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		if q.Get("watch") != "1" && q.Get("watch") != "true" {
			_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
			return
		}
		watches.Add(1)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(stream)
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	return srv, &watches
}

// CountingStore counts Add/Update/Delete calls and closes Done when Target is reached.
type CountingStore struct {
	InnerStore
	Target int64
	Done   chan struct{}
	n      atomic.Int64
}

func (s *CountingStore) tick() {
	if s.n.Add(1) == s.Target {
		close(s.Done)
	}
}

func (s *CountingStore) Add(obj any) error    { err := s.InnerStore.Add(obj); s.tick(); return err }
func (s *CountingStore) Update(obj any) error { err := s.InnerStore.Update(obj); s.tick(); return err }
func (s *CountingStore) Delete(obj any) error { err := s.InnerStore.Delete(obj); s.tick(); return err }

// Resync is client-go's ReflectorStore method.
func (s *CountingStore) Resync() error { return nil }
