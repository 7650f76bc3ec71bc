package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/transporttest"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// cborServer serves a custom resource in CBOR as kube-apiserver does with its
// CBORServingAndStorage gate on: the LIST as one CBOR body, the watch as a CBOR sequence of
// WatchEvents (application/cbor-seq), each encoded by apimachinery's CBOR serializer.
func cborServer(t *testing.T, accepts *[]string, mu *sync.Mutex) *httptest.Server {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	info := cbor.NewSerializerInfo(s, s)
	encode := func(obj runtime.Object) []byte {
		var b bytes.Buffer
		require.NoError(t, info.Serializer.Encode(obj, &b))
		return b.Bytes()
	}
	widget := func(name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "demo.rewatch.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": rv}, "spec": map[string]any{"size": int64(3)}}}
		return u
	}
	return httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*accepts = append(*accepts, r.Header.Get("Accept"))
		mu.Unlock()
		if r.URL.Query().Get("watch") == "" {
			l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "demo.rewatch.dev/v1", "kind": "WidgetList",
				"metadata": map[string]any{"resourceVersion": "10"}}, Items: []unstructured.Unstructured{*widget("a", "9")}}
			rw.Header().Set("Content-Type", runtime.ContentTypeCBOR)
			_, _ = rw.Write(encode(l))
			return
		}
		rw.Header().Set("Content-Type", runtime.ContentTypeCBORSequence)
		rw.WriteHeader(http.StatusOK)
		enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(rw), info.StreamSerializer.Serializer)
		require.NoError(t, enc.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encode(widget("b", "11"))}}))
		st := apierrors.NewTooManyRequests("slow down", 4).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		require.NoError(t, enc.Encode(&metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: encode(&st)}}))
	}))
}

// Unstructured objects ask for CBOR first and read a CBOR LIST, a CBOR watch stream, and an
// ERROR event whose CBOR Status classifies as its JSON twin.
func TestCBORListAndWatch(t *testing.T) {
	var accepts []string
	var mu sync.Mutex
	srv := cborServer(t, &accepts, &mu)
	t.Cleanup(srv.Close)
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: srv.URL,
		Resource: httpapi.Resource{Group: "demo.rewatch.dev", Version: "v1", Resource: "widgets"}})
	require.NoError(t, err)
	require.Equal(t, "auto (cbor, json)", tr.WireFormat())

	e, _ := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 1})
	require.Equal(t, fsm.EvListPage, e.Kind, "%+v", e.Failure)
	require.Equal(t, "10", e.ResourceVersion)
	u := e.Items[0].(*unstructured.Unstructured)
	require.Equal(t, "a", u.GetName())
	size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
	require.Equal(t, int64(3), size)
	require.Equal(t, "cbor", tr.AnsweredFormat())

	events := watchAll(t, tr)
	require.Len(t, events, 3)
	require.Equal(t, fsm.EvWatchEvent, events[1].Kind, "%+v", events[1].Failure)
	require.Equal(t, "default/b", events[1].Key)
	require.Equal(t, fsm.EvWatchError, events[2].Kind)
	require.Equal(t, metav1.StatusReasonTooManyRequests, events[2].Failure.Status.Reason)
	require.Equal(t, int32(4), events[2].Failure.Status.Details.RetryAfterSeconds)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"application/cbor, application/json", "application/cbor, application/json"}, accepts)
}
