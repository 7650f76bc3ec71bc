package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// counting wraps the handler to count LIST and WATCH requests, so tests can
// tell a re-watch from a relist.
type counting struct {
	lists, watches atomic.Int32
}

func startSim(t *testing.T, opts Options) (*Server, string, *counting) {
	t.Helper()
	s := New(opts)
	c := &counting{}
	s.handlerWrap = func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			c.watches.Add(1)
		} else {
			c.lists.Add(1)
		}
		s.serve(w, r)
	}
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s, u, c
}

func dynamicClient(t *testing.T, u string) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)
	return dc
}

type rawResponse struct {
	code int
	body []byte
}

func get(t *testing.T, base, path string, q url.Values, accept string) rawResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawResponse{resp.StatusCode, b}
}

func decodeStatus(t *testing.T, b []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	require.NoError(t, json.Unmarshal(b, &st))
	require.Equal(t, "Status", st.Kind)
	require.Equal(t, "v1", st.APIVersion)
	return st
}

// listItem reads typed list items, which carry no kind/apiVersion.
type listItem struct {
	metav1.ObjectMeta `json:"metadata"`
	Data              map[string]string `json:"data"`
}

type rawList struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []listItem `json:"items"`
}

func decodeList(t *testing.T, r rawResponse) rawList {
	t.Helper()
	require.Equal(t, http.StatusOK, r.code, string(r.body))
	var l rawList
	require.NoError(t, json.Unmarshal(r.body, &l))
	return l
}

// rawEvent is one line of a watch stream, kept raw to check the framing.
type rawEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

type stream struct {
	t      *testing.T
	resp   *http.Response
	lines  *bufio.Scanner
	cancel context.CancelFunc
}

func openWatch(t *testing.T, base, path string, q url.Values) *stream {
	t.Helper()
	q.Set("watch", "true")
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	st := &stream{t: t, resp: resp, lines: sc, cancel: cancel}
	t.Cleanup(st.close)
	return st
}

func (s *stream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next returns the next event, or ok=false when the server ended the stream.
func (s *stream) next() (rawEvent, bool) {
	s.t.Helper()
	if !s.lines.Scan() {
		return rawEvent{}, false
	}
	var e rawEvent
	require.NoError(s.t, json.Unmarshal(s.lines.Bytes(), &e), s.lines.Text())
	return e, true
}

func (s *stream) mustNext() (rawEvent, *unstructured.Unstructured) {
	s.t.Helper()
	e, ok := s.next()
	require.True(s.t, ok, "watch stream ended early")
	u := &unstructured.Unstructured{}
	require.NoError(s.t, u.UnmarshalJSON(e.Object))
	return e, u
}

// eventually polls cond in short steps; the bound only guards a broken run.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out: " + msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func storeSnapshot(store cache.Store) map[string]string {
	out := map[string]string{}
	for _, o := range store.List() {
		u := o.(*unstructured.Unstructured)
		out[u.GetNamespace()+"/"+u.GetName()] = u.GetResourceVersion()
	}
	return out
}

type GVR = schema.GroupVersionResource

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

func everything() labels.Selector       { return labels.Everything() }
func everythingFields() fields.Selector { return fields.Everything() }
