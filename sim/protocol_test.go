package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

const cmPath = "/api/v1/configmaps"

func seed(t *testing.T, s *Server, n int) {
	t.Helper()
	for i := range n {
		_, err := s.CreateWithLabels(ConfigMaps, "default", fmt.Sprintf("cm-%d", i),
			map[string]string{"parity": []string{"even", "odd"}[i%2]}, map[string]string{"i": fmt.Sprint(i)})
		require.NoError(t, err)
	}
}

func names(l rawList) []string {
	var out []string
	for _, it := range l.Items {
		out = append(out, it.GetName())
	}
	return out
}

// etcd3/cacher pagination: pages of `limit` at one RV, remainingItemCount
// while nothing filters, and later pages reading the snapshot at that RV.
func TestPaginationIsConsistentAcrossPages(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 7)
	var got []string
	var remaining []int64
	q := url.Values{"limit": {"2"}}
	first := decodeList(t, get(t, u, cmPath, q, ""))
	require.Equal(t, "ConfigMapList", first.Kind)
	require.Equal(t, "v1", first.APIVersion)
	listRV := first.Metadata.ResourceVersion
	// writes between pages must not show up in later pages
	_, err := s.Update(ConfigMaps, "default", "cm-5", map[string]string{"i": "new"})
	require.NoError(t, err)
	_, err = s.Create(ConfigMaps, "default", "cm-99", nil)
	require.NoError(t, err)
	for page := first; ; {
		got = append(got, names(page)...)
		require.Equal(t, listRV, page.Metadata.ResourceVersion)
		if page.Metadata.Continue == "" {
			require.Nil(t, page.Metadata.RemainingItemCount)
			break
		}
		remaining = append(remaining, *page.Metadata.RemainingItemCount)
		page = decodeList(t, get(t, u, cmPath, url.Values{"limit": {"2"}, "continue": {page.Metadata.Continue}}, ""))
		for _, it := range page.Items {
			if it.GetName() == "cm-5" {
				require.NotEqual(t, s.Snapshot(ConfigMaps)["default/cm-5"], it.GetResourceVersion())
			}
		}
	}
	require.Equal(t, []string{"cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-5", "cm-6"}, got)
	require.Equal(t, []int64{5, 3, 1}, remaining)
}

// cacher computeListLimit: "the limit is ignored for requests that set
// RV == 0".
func TestLimitIgnoredForResourceVersionZero(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 7)
	l := decodeList(t, get(t, u, cmPath, url.Values{"limit": {"2"}, "resourceVersion": {"0"}}, ""))
	require.Len(t, l.Items, 7)
	require.Empty(t, l.Metadata.Continue)
}

// etcd3 store interpretListError/handleCompactedErrorForPaging and the
// watch cache's "too old resource version" after compaction.
func TestCompactionExpiresContinueListAndWatch(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 5)
	oldRV := s.CurrentRV()
	first := decodeList(t, get(t, u, cmPath, url.Values{"limit": {"2"}}, ""))
	_, err := s.Create(ConfigMaps, "default", "cm-late", nil)
	require.NoError(t, err)
	s.Compact()

	r := get(t, u, cmPath, url.Values{"limit": {"2"}, "continue": {first.Metadata.Continue}}, "")
	require.Equal(t, http.StatusGone, r.code)
	st := decodeStatus(t, r.body)
	require.Equal(t, metav1.StatusReasonExpired, st.Reason)
	require.Contains(t, st.Message, "The provided continue parameter is too old")
	require.NotEmpty(t, st.Continue, "a token to resume inconsistently at the latest RV")
	rest := decodeList(t, get(t, u, cmPath, url.Values{"continue": {st.Continue}}, ""))
	require.Equal(t, []string{"cm-2", "cm-3", "cm-4", "cm-late"}, names(rest))
	require.Equal(t, s.CurrentRV(), rest.Metadata.ResourceVersion)

	r = get(t, u, cmPath, url.Values{"resourceVersion": {oldRV}, "resourceVersionMatch": {"Exact"}}, "")
	require.Equal(t, http.StatusGone, r.code)
	require.Equal(t, "The resourceVersion for the provided list is too old.", decodeStatus(t, r.body).Message)

	// The cacher answers a too-old watch with 200 and an ERROR event.
	w := openWatch(t, u, cmPath, url.Values{"resourceVersion": {oldRV}})
	e, ok := w.next()
	require.True(t, ok)
	require.Equal(t, string(watch.Error), e.Type)
	var est metav1.Status
	require.NoError(t, json.Unmarshal(e.Object, &est))
	require.EqualValues(t, http.StatusGone, est.Code)
	require.Equal(t, metav1.StatusReasonExpired, est.Reason)
	require.Equal(t, fmt.Sprintf("too old resource version: %s (%s)", oldRV, s.CurrentRV()), est.Message)
	_, ok = w.next()
	require.False(t, ok, "stream ends after the ERROR event")

	// client-go sees the same thing as an error event it can classify.
	cw, err := dynamicClient(t, u).Resource(ConfigMaps).Watch(context.Background(), metav1.ListOptions{ResourceVersion: oldRV})
	require.NoError(t, err)
	defer cw.Stop()
	ev := <-cw.ResultChan()
	require.Equal(t, watch.Error, ev.Type)
	require.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)))
}

func TestWatchCacheWindowExpiresOldRVs(t *testing.T) {
	s, u, _ := startSim(t, Options{HistoryWindow: 3})
	start := s.CurrentRV()
	seed(t, s, 5)
	w := openWatch(t, u, cmPath, url.Values{"resourceVersion": {start}})
	e, _ := w.next()
	require.Equal(t, string(watch.Error), e.Type)
	// the last 3 events are still in the window
	w = openWatch(t, u, cmPath, url.Values{"resourceVersion": {fmt.Sprint(mustAtoi(t, s.CurrentRV()) - 3)}})
	for range 3 {
		e, _ := w.mustNext()
		require.Equal(t, string(watch.Added), e.Type)
	}
}

func TestWatchListEndsInitialEventsWithAnnotatedBookmark(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 3)
	w := openWatch(t, u, cmPath, url.Values{"sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"},
		"allowWatchBookmarks": {"true"}, "resourceVersion": {""}})
	for range 3 {
		e, _ := w.mustNext()
		require.Equal(t, string(watch.Added), e.Type)
	}
	e, obj := w.mustNext()
	require.Equal(t, string(watch.Bookmark), e.Type)
	require.Equal(t, "true", obj.GetAnnotations()[metav1.InitialEventsAnnotationKey])
	require.Equal(t, s.CurrentRV(), obj.GetResourceVersion())
	require.Equal(t, "ConfigMap", obj.GetKind())

	rv, err := s.Update(ConfigMaps, "default", "cm-1", nil)
	require.NoError(t, err)
	e, obj = w.mustNext()
	require.Equal(t, string(watch.Modified), e.Type)
	require.Equal(t, rv, obj.GetResourceVersion())
}

// apimachinery ValidateListOptions does not require allowWatchBookmarks for
// sendInitialEvents; the cacher then sends the initial events but no
// initial-events-end bookmark (setInitialEventsEndBookmarkIfRequested).
func TestWatchListWithoutBookmarksHasNoEndMarker(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 2)
	w := openWatch(t, u, cmPath, url.Values{"sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"}})
	for range 2 {
		e, _ := w.mustNext()
		require.Equal(t, string(watch.Added), e.Type)
	}
	_, err := s.Create(ConfigMaps, "default", "x", nil)
	require.NoError(t, err)
	e, _ := w.mustNext()
	require.Equal(t, string(watch.Added), e.Type, "no bookmark in between")
}

func TestInvalidWatchListOptionsAre422(t *testing.T) {
	_, u, _ := startSim(t, Options{})
	r := get(t, u, cmPath, url.Values{"watch": {"true"}, "sendInitialEvents": {"true"}}, "")
	require.Equal(t, http.StatusUnprocessableEntity, r.code)
	st := decodeStatus(t, r.body)
	require.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	require.Contains(t, st.Message, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
	r = get(t, u, cmPath, url.Values{"sendInitialEvents": {"true"}}, "")
	require.Equal(t, http.StatusUnprocessableEntity, r.code)
}

func TestBookmarksFollowTheGlobalRV(t *testing.T) {
	s, u, _ := startSim(t, Options{BookmarkInterval: 10e6, Resources: []GVR{ConfigMaps, Widgets}})
	start := s.CurrentRV()
	w := openWatch(t, u, cmPath, url.Values{"resourceVersion": {start}, "allowWatchBookmarks": {"true"}})
	// a write to another resource moves the global RV; the configmap
	// watch learns it only from a bookmark.
	rv, err := s.Create(Widgets, "default", "w", nil)
	require.NoError(t, err)
	e, obj := w.mustNext()
	require.Equal(t, string(watch.Bookmark), e.Type)
	require.Equal(t, rv, obj.GetResourceVersion())
	require.Empty(t, obj.GetName())
}

func TestWatchEndsAtTimeout(t *testing.T) {
	_, u, _ := startSim(t, Options{})
	w := openWatch(t, u, cmPath, url.Values{"timeoutSeconds": {"1"}})
	_, ok := w.next()
	require.False(t, ok)
}

func TestTooLargeResourceVersion(t *testing.T) {
	s, u, _ := startSim(t, Options{TooLargeWait: 10e6})
	future := fmt.Sprint(mustAtoi(t, s.CurrentRV()) + 100)
	for _, match := range []string{"", "NotOlderThan", "Exact"} {
		r := get(t, u, cmPath, url.Values{"resourceVersion": {future}, "resourceVersionMatch": {match}}, "")
		require.Equal(t, http.StatusGatewayTimeout, r.code)
		st := decodeStatus(t, r.body)
		require.Equal(t, metav1.StatusReasonTimeout, st.Reason)
		require.Equal(t, metav1.CauseTypeResourceVersionTooLarge, st.Details.Causes[0].Type)
		require.Equal(t, "Too large resource version", st.Details.Causes[0].Message)
	}
	_, err := dynamicClient(t, u).Resource(ConfigMaps).List(context.Background(), metav1.ListOptions{ResourceVersion: future})
	// what client-go reflector.go isTooLargeResourceVersionError checks
	require.True(t, apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge), "%v", err)

	// a WatchList at a future RV fails inside the stream
	w := openWatch(t, u, cmPath, url.Values{"sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"},
		"allowWatchBookmarks": {"true"}, "resourceVersion": {future}})
	e, ok := w.next()
	require.True(t, ok)
	require.Equal(t, string(watch.Error), e.Type)
}

func TestSelectors(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 6)
	l := decodeList(t, get(t, u, cmPath, url.Values{"labelSelector": {"parity=odd"}}, ""))
	require.Equal(t, []string{"cm-1", "cm-3", "cm-5"}, names(l))
	l = decodeList(t, get(t, u, "/api/v1/namespaces/default/configmaps", url.Values{"fieldSelector": {"metadata.name=cm-2"}}, ""))
	require.Equal(t, []string{"cm-2"}, names(l))
	l = decodeList(t, get(t, u, "/api/v1/namespaces/other/configmaps", nil, ""))
	require.Empty(t, l.Items)
	l = decodeList(t, get(t, u, cmPath, url.Values{"labelSelector": {"parity=odd"}, "limit": {"2"}}, ""))
	require.Equal(t, []string{"cm-1", "cm-3"}, names(l))
	require.Nil(t, l.Metadata.RemainingItemCount, "not countable under a selector")

	r := get(t, u, cmPath, url.Values{"fieldSelector": {"data.x=1"}}, "")
	require.Equal(t, http.StatusBadRequest, r.code)

	// leaving the selector is a DELETED, entering it an ADDED
	w := openWatch(t, u, cmPath, url.Values{"resourceVersion": {s.CurrentRV()}, "labelSelector": {"parity=odd"}})
	_, err := s.UpdateWithLabels(ConfigMaps, "default", "cm-1", map[string]string{"parity": "even"}, nil)
	require.NoError(t, err)
	_, err = s.UpdateWithLabels(ConfigMaps, "default", "cm-0", map[string]string{"parity": "odd"}, nil)
	require.NoError(t, err)
	e, obj := w.mustNext()
	require.Equal(t, string(watch.Deleted), e.Type)
	require.Equal(t, "cm-1", obj.GetName())
	e, obj = w.mustNext()
	require.Equal(t, string(watch.Added), e.Type)
	require.Equal(t, "cm-0", obj.GetName())
}

func TestErrorShapes(t *testing.T) {
	s, u, _ := startSim(t, Options{})
	seed(t, s, 3)
	r := get(t, u, "/api/v1/pods", nil, "")
	require.Equal(t, http.StatusNotFound, r.code)
	st := decodeStatus(t, r.body)
	require.Equal(t, metav1.StatusReasonNotFound, st.Reason)
	require.Equal(t, "the server could not find the requested resource", st.Message)

	require.Equal(t, http.StatusNotAcceptable, get(t, u, cmPath, nil, "application/json;as=Table;g=meta.k8s.io;v=v1").code)
	r = get(t, u, cmPath, nil, "application/vnd.kubernetes.protobuf, application/json")
	require.Equal(t, http.StatusOK, r.code)
	require.True(t, bytes.HasPrefix(r.body, []byte("k8s\x00")), "a built-in kind is served in protobuf when asked first")

	first := decodeList(t, get(t, u, cmPath, url.Values{"limit": {"1"}}, ""))
	r = get(t, u, cmPath, url.Values{"continue": {first.Metadata.Continue}, "resourceVersion": {"5"}}, "")
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "specifying resource version is not allowed when using continue", decodeStatus(t, r.body).Message)
	r = get(t, u, cmPath, url.Values{"continue": {"garbage"}}, "")
	require.Equal(t, http.StatusBadRequest, r.code)

	resp, err := http.Post(u+cmPath, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	for _, p := range []string{"/readyz", "/healthz"} {
		require.Equal(t, "ok", string(get(t, u, p, nil, "").body))
	}
}

// A watcher that cannot keep up is closed instead of blocking writers.
func TestSlowWatcherIsClosedNotBlocking(t *testing.T) {
	s := New(Options{WatcherBuffer: 2})
	defer s.Close()
	res := s.resources[ConfigMaps]
	w := &watcher{res: res, pred: predicate{label: everything(), field: everythingFields()},
		ch: make(chan frame, 2), done: make(chan struct{})}
	s.mu.Lock()
	res.watchers[w] = struct{}{}
	s.mu.Unlock()
	for i := range 5 {
		_, err := s.Create(ConfigMaps, "default", fmt.Sprint(i), nil)
		require.NoError(t, err)
	}
	select {
	case <-w.done:
	default:
		t.Fatal("overflowing watcher still open")
	}
	require.Len(t, w.ch, 2)
}

// The simulator serves a built-in kind in protobuf as kube-apiserver does, so that client-go's
// protobuf clientset lists, watches and reads errors from it; a custom resource it serves in
// JSON only, and protobuf alone for one is 406.
func TestProtobuf(t *testing.T) {
	s, u, _ := startSim(t, Options{Resources: []GVR{ConfigMaps, Widgets}})
	seed(t, s, 3)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: u, ContentConfig: rest.ContentConfig{
		ContentType: runtime.ContentTypeProtobuf, AcceptContentTypes: runtime.ContentTypeProtobuf}})
	require.NoError(t, err)
	l, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, l.Items, 2)
	require.NotEmpty(t, l.Continue)
	require.Equal(t, "cm-0", l.Items[0].Name)

	w, err := cs.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: l.ResourceVersion, AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer w.Stop()
	_, err = s.Update(ConfigMaps, "default", "cm-1", map[string]string{"i": "new"})
	require.NoError(t, err)
	e := <-w.ResultChan()
	require.Equal(t, watch.Modified, e.Type)
	cm := e.Object.(*corev1.ConfigMap)
	require.Equal(t, "cm-1", cm.Name)
	require.Equal(t, map[string]string{"i": "new"}, cm.Data)

	s.Compact()
	w2, err := cs.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	require.NoError(t, err)
	defer w2.Stop()
	e = <-w2.ResultChan()
	require.Equal(t, watch.Error, e.Type)
	require.Equal(t, metav1.StatusReasonExpired, e.Object.(*metav1.Status).Reason, "an ERROR event's Status in protobuf")

	_, err = cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{Continue: "garbage"})
	require.True(t, apierrors.IsBadRequest(err), "a Status body in protobuf: %v", err)

	require.Equal(t, http.StatusNotAcceptable, get(t, u, "/apis/demo.rewatch.dev/v1/namespaces/default/widgets", nil, runtime.ContentTypeProtobuf).code)
	r := get(t, u, "/apis/demo.rewatch.dev/v1/namespaces/default/widgets", nil, "application/vnd.kubernetes.protobuf, application/json")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, byte('{'), r.body[0], "a custom resource in JSON")

	// Metadata only, in protobuf, for the custom resource too, as client-go's metadata client
	// asks for it.
	_, err = s.Create(Widgets, "default", "w-1", nil)
	require.NoError(t, err)
	mc, err := metadata.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)
	ml, err := mc.Resource(Widgets).Namespace("default").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, ml.Items, 1)
	require.Equal(t, "w-1", ml.Items[0].Name)
	mw, err := mc.Resource(Widgets).Namespace("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: ml.ResourceVersion})
	require.NoError(t, err)
	defer mw.Stop()
	_, err = s.Update(Widgets, "default", "w-1", map[string]string{"x": "y"})
	require.NoError(t, err)
	e = <-mw.ResultChan()
	require.Equal(t, watch.Modified, e.Type)
	require.Equal(t, "w-1", e.Object.(*metav1.PartialObjectMetadata).Name)
	r = get(t, u, "/apis/demo.rewatch.dev/v1/namespaces/default/widgets", nil,
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	require.Equal(t, http.StatusOK, r.code)
	require.True(t, bytes.HasPrefix(r.body, []byte("k8s\x00")), "metadata of a custom resource in protobuf")
}
