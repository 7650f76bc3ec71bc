package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/driver"
)

// Initial-sync benchmarks on the client side: one op is a whole LIST of syncObjects ~1 KiB
// configmaps answered in one page, as the real kube-apiserver answers resourceVersion=0 from
// its watch cache, into the reflector's default store. B/op is what the sync allocates, the
// driver of its peak heap:
//
//	go test -run '^$' -bench InitialSync -benchmem -count 6 ./bench/
const syncObjects = 10000

// ListBody is a LIST response of n ~1 KiB configmaps at resourceVersion n+1.
func ListBody(n int) []byte {
	var b bytes.Buffer
	pad := strings.Repeat("y", 850)
	fmt.Fprintf(&b, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[`, n+1)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"cm-%05d","namespace":"bench","uid":"00000000-0000-0000-0000-%012d","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench"}},"data":{"payload":%q}}`,
			i, i, i+1, pad)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// serveWatch answers a watch request with stream (which may be empty) as contentType, held
// open until the client goes away; it reports whether r was a watch.
func serveWatch(w http.ResponseWriter, r *http.Request, contentType string, stream []byte) bool {
	if q := r.URL.Query().Get("watch"); q != "1" && q != "true" {
		return false
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(stream)
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
	return true
}

// replaceStore closes done on the first Replace: the end of the initial sync.
type replaceStore struct {
	InnerStore
	done chan struct{}
}

func (s *replaceStore) Replace(list []any, rv string) error {
	err := s.InnerStore.Replace(list, rv)
	close(s.done)
	return err
}

func (s *replaceStore) Resync() error { return nil }

func benchSync(b *testing.B, run func(ctx context.Context, url string, store *replaceStore) error, newInner func() InnerStore) {
	body := ListBody(syncObjects)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if serveWatch(w, r, "application/json", nil) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		store := &replaceStore{InnerStore: newInner(), done: make(chan struct{})}
		runUntil(b, func(ctx context.Context) error { return run(ctx, srv.URL, store) }, store.done,
			time.Minute, "no sync within a minute")
	}
}

func BenchmarkInitialSyncRewatch(b *testing.B) {
	benchSync(b, func(ctx context.Context, url string, store *replaceStore) error { return runRewatch(ctx, url, store) },
		func() InnerStore { return driver.NewMemStore() })
}

func BenchmarkInitialSyncClientGoList(b *testing.B) {
	benchSync(b, func(ctx context.Context, url string, store *replaceStore) error {
		return runClientGoList(ctx, url, store)
	},
		func() InnerStore { return cache.NewStore(cache.MetaNamespaceKeyFunc) })
}
