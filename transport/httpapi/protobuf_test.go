package httpapi_test

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/transporttest"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// wire encodes what a kube-apiserver writes, with apimachinery's own serializers: protobuf
// bodies with their envelope, and watch streams of length-delimited metav1.WatchEvent frames.
type wire struct {
	media string
	info  runtime.SerializerInfo
}

func newWire(t *testing.T, media string) wire {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), media)
	require.True(t, ok, media)
	return wire{media: media, info: info}
}

func (w wire) encode(t *testing.T, obj runtime.Object) []byte {
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(w.info.Serializer, corev1.SchemeGroupVersion), obj)
	require.NoError(t, err)
	return b
}

func (w wire) writeBody(t *testing.T, rw http.ResponseWriter, code int, obj runtime.Object) {
	rw.Header().Set("Content-Type", w.media)
	rw.WriteHeader(code)
	_, err := rw.Write(w.encode(t, obj))
	require.NoError(t, err)
}

// stream writes one watch event per call, flushed, as the server's watch handler does.
type stream struct {
	t   *testing.T
	w   wire
	enc streaming.Encoder
	rw  http.ResponseWriter
}

func (w wire) openStream(t *testing.T, rw http.ResponseWriter) *stream {
	s := w.info.StreamSerializer
	rw.Header().Set("Content-Type", w.media+";stream=watch")
	rw.WriteHeader(http.StatusOK)
	return &stream{t: t, w: w, rw: rw, enc: streaming.NewEncoder(s.Framer.NewFrameWriter(rw), s.Serializer)}
}

func (s *stream) send(typ string, obj runtime.Object) {
	require.NoError(s.t, s.enc.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: s.w.encode(s.t, obj)}}))
	s.rw.(http.Flusher).Flush()
}

func configMap(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv}, Data: map[string]string{"k": name}}
}

// negotiating answers in protobuf when the request's Accept starts with it, else in JSON, as
// kube-apiserver does for a built-in type; it records the Accept headers it saw.
type negotiating struct {
	t       *testing.T
	mu      sync.Mutex
	accepts []string
	list    func(w wire, rw http.ResponseWriter)
	watch   func(w wire, s *stream)
}

func (n *negotiating) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	n.mu.Lock()
	n.accepts = append(n.accepts, accept)
	n.mu.Unlock()
	w := newWire(n.t, runtime.ContentTypeJSON)
	if strings.HasPrefix(accept, runtime.ContentTypeProtobuf) {
		w = newWire(n.t, runtime.ContentTypeProtobuf)
	}
	if r.URL.Query().Get("watch") == "" {
		n.list(w, rw)
		return
	}
	n.watch(w, w.openStream(n.t, rw))
}

func transportFor(t *testing.T, h http.Handler, mod func(*httpapi.Config)) *httpapi.Transport {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := httpapi.Config{Client: &http.Client{}, Server: srv.URL, Resource: configMaps, Decoder: httpapi.Typed(scheme.Scheme)}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := httpapi.New(cfg)
	require.NoError(t, err)
	return tr
}

func watchAll(t *testing.T, tr *httpapi.Transport) []fsm.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var events []fsm.Event
	tr.Watch(ctx, fsm.Command{Kind: fsm.CmdOpenWatch, Request: 2, ResourceVersion: "10"}, func(e fsm.Event) bool {
		events = append(events, e)
		return true
	})
	require.NoError(t, ctx.Err(), "the watch did not end")
	return events
}

// With a typed decoder the transport asks for protobuf and reads the server's protobuf LIST and
// watch stream into the same events JSON gives: items, resourceVersion, every event type, and
// an ERROR event whose protobuf Status classifies exactly as its JSON twin (a 429 with
// details.retryAfterSeconds).
func TestProtobufListAndWatch(t *testing.T) {
	for _, media := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		t.Run(media, func(t *testing.T) {
			h := &negotiating{t: t,
				list: func(w wire, rw http.ResponseWriter) {
					w.writeBody(t, rw, http.StatusOK, &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10", Continue: "next"},
						Items: []corev1.ConfigMap{*configMap("a", "9")}})
				},
				watch: func(w wire, s *stream) {
					s.send("ADDED", configMap("b", "11"))
					s.send("MODIFIED", configMap("a", "12"))
					s.send("BOOKMARK", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "13"}})
					s.send("DELETED", configMap("b", "14"))
					st := apierrors.NewTooManyRequests("slow down", 3).Status()
					s.send("ERROR", &st)
				}}
			format := httpapi.FormatAuto
			if media == runtime.ContentTypeJSON {
				format = httpapi.FormatJSON
			}
			tr := transportFor(t, h, func(c *httpapi.Config) { c.Format = format })

			e, ok := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 1})
			require.True(t, ok)
			require.Equal(t, fsm.EvListPage, e.Kind, "%+v", e.Failure)
			require.Equal(t, "10", e.ResourceVersion)
			require.Equal(t, "next", e.Continue)
			require.Len(t, e.Items, 1)
			require.Equal(t, "a", e.Items[0].(*corev1.ConfigMap).Name)
			require.Equal(t, map[string]string{"k": "a"}, e.Items[0].(*corev1.ConfigMap).Data)

			events := watchAll(t, tr)
			require.Len(t, events, 6)
			require.Equal(t, fsm.EvWatchOpened, events[0].Kind)
			for i, want := range []struct {
				typ  fsm.WatchEventType
				key  string
				rv   string
				name string
			}{{fsm.Added, "default/b", "11", "b"}, {fsm.Modified, "default/a", "12", "a"}, {fsm.Bookmark, "", "13", ""}, {fsm.Deleted, "default/b", "14", "b"}} {
				got := events[i+1]
				require.Equal(t, fsm.EvWatchEvent, got.Kind, "event %d: %+v", i, got.Failure)
				require.Equal(t, want.typ, got.Type)
				require.Equal(t, want.rv, got.ResourceVersion)
				if want.typ != fsm.Bookmark {
					require.Equal(t, want.key, got.Key)
					require.Equal(t, want.name, got.Object.(*corev1.ConfigMap).Name)
				}
			}
			last := events[5]
			require.Equal(t, fsm.EvWatchError, last.Kind)
			require.NotNil(t, last.Failure.Status)
			require.Equal(t, metav1.StatusReasonTooManyRequests, last.Failure.Status.Reason)
			require.Equal(t, int32(3), last.Failure.Status.Details.RetryAfterSeconds)
			require.Equal(t, "slow down", last.Failure.Message)

			h.mu.Lock()
			defer h.mu.Unlock()
			if format == httpapi.FormatJSON {
				require.Equal(t, []string{"application/json", "application/json"}, h.accepts)
				require.Equal(t, "json", tr.WireFormat())
			} else {
				require.Equal(t, []string{"application/vnd.kubernetes.protobuf, application/json", "application/vnd.kubernetes.protobuf, application/json"}, h.accepts)
				require.Equal(t, "auto (protobuf, json)", tr.WireFormat())
			}
			require.Equal(t, map[string]string{runtime.ContentTypeProtobuf: "protobuf", runtime.ContentTypeJSON: "json"}[media], tr.AnsweredFormat())
		})
	}
}

// A server that answers JSON to a request for protobuf (an aggregated API, a custom resource)
// works unchanged: the Content-Type decides.
func TestProtobufRequestAnsweredInJSON(t *testing.T) {
	h := &negotiating{t: t,
		list: func(_ wire, rw http.ResponseWriter) {
			newWire(t, runtime.ContentTypeJSON).writeBody(t, rw, http.StatusOK, &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"},
				Items: []corev1.ConfigMap{*configMap("a", "9")}})
		},
	}
	tr := transportFor(t, h, nil)
	e, _ := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 1})
	require.Equal(t, fsm.EvListPage, e.Kind, "%+v", e.Failure)
	require.Equal(t, "a", e.Items[0].(*corev1.ConfigMap).Name)
	require.Equal(t, "json", tr.AnsweredFormat())
}

// A non-2xx answer in protobuf carries its Status as its JSON twin would: code, reason,
// message and retryAfterSeconds reach the failure the machine classifies.
func TestProtobufStatusBodies(t *testing.T) {
	for _, err := range []*apierrors.StatusError{
		apierrors.NewTooManyRequests("too many", 7),
		apierrors.NewResourceExpired("too old resource version: 1 (2)"),
		apierrors.NewInternalError(context.DeadlineExceeded),
		apierrors.NewForbidden(corev1.Resource("configmaps"), "", context.Canceled),
	} {
		t.Run(string(err.ErrStatus.Reason), func(t *testing.T) {
			h := &negotiating{t: t, list: func(w wire, rw http.ResponseWriter) {
				st := err.Status()
				w.writeBody(t, rw, int(st.Code), &st)
			}}
			tr := transportFor(t, h, func(c *httpapi.Config) { c.Format = httpapi.FormatProtobuf })
			e, _ := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 1})
			require.Equal(t, fsm.EvListFailed, e.Kind)
			f := e.Failure
			require.NotNil(t, f.Status, f.Message)
			require.Equal(t, int(err.ErrStatus.Code), f.Code)
			require.Equal(t, err.ErrStatus.Reason, f.Status.Reason)
			require.Equal(t, err.ErrStatus.Message, f.Message)
			if err.ErrStatus.Details != nil {
				require.Equal(t, err.ErrStatus.Details.RetryAfterSeconds, f.Status.Details.RetryAfterSeconds)
			}
		})
	}
}

// Metadata-only asks for PartialObjectMetadata in protobuf first, and reads it.
func TestProtobufMetadataOnly(t *testing.T) {
	pm := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv}}
	}
	encode := func(obj runtime.Object) []byte {
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		var b strings.Builder
		require.NoError(t, info.Serializer.Encode(obj, &b))
		return []byte(b.String())
	}
	var accepts []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accepts = append(accepts, r.Header.Get("Accept"))
		mu.Unlock()
		rw.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		if r.URL.Query().Get("watch") == "" {
			l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
				ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []metav1.PartialObjectMetadata{*pm("a", "9")}}
			_, _ = rw.Write(encode(l))
			return
		}
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(rw), info.StreamSerializer.Serializer)
		require.NoError(t, enc.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encode(pm("b", "11"))}}))
	}))
	t.Cleanup(srv.Close)
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: srv.URL, Resource: configMaps, MetadataOnly: true})
	require.NoError(t, err)
	e, _ := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 1})
	require.Equal(t, fsm.EvListPage, e.Kind, "%+v", e.Failure)
	require.Equal(t, "a", e.Items[0].(*metav1.PartialObjectMetadata).Name)
	events := watchAll(t, tr)
	require.Len(t, events, 3)
	require.Equal(t, "b", events[1].Object.(*metav1.PartialObjectMetadata).Name)
	require.Equal(t, fsm.EvWatchEnded, events[2].Kind)
	require.Nil(t, events[2].Failure, "a clean end of stream")
	require.Equal(t, []string{
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json",
	}, accepts)
}

// A format the decoder cannot read is a configuration error, not a failure at run time.
func TestFormatValidation(t *testing.T) {
	base := httpapi.Config{Client: &http.Client{}, Server: "http://127.0.0.1:1", Resource: configMaps}
	for _, c := range []struct {
		mod  func(*httpapi.Config)
		want string
	}{
		{func(c *httpapi.Config) { c.Format = httpapi.FormatProtobuf }, `Format "protobuf": the decoder reads only application/cbor, application/json`},
		{func(c *httpapi.Config) { c.Format = "yaml" }, `Format "yaml" is not one of json, protobuf, cbor`},
	} {
		cfg := base
		c.mod(&cfg)
		_, err := httpapi.New(cfg)
		require.ErrorContains(t, err, c.want)
	}
	cfg := base
	cfg.Format, cfg.Decoder = httpapi.FormatProtobuf, httpapi.Typed(scheme.Scheme)
	_, err := httpapi.New(cfg)
	require.NoError(t, err)
}

// pbFrames writes a protobuf watch stream of the given frames, each behind its 4-byte
// big-endian length, as apimachinery's length-delimited framer writes them.
func pbFrames(frames ...[]byte) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		w.WriteHeader(http.StatusOK)
		for _, f := range frames {
			_, _ = w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(f))))
			_, _ = w.Write(f)
			w.(http.Flusher).Flush()
		}
	}
}

func pbEvent(t *testing.T, typ string, obj runtime.Object, raw []byte) []byte {
	if obj != nil {
		raw = newWire(t, runtime.ContentTypeProtobuf).encode(t, obj)
	}
	b, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}).Marshal()
	require.NoError(t, err)
	return b
}

// docs/semantics.md InternalError row, "(also a mid-stream decode failure)", in protobuf: a
// frame that is not a WatchEvent, an object that is not protobuf, an ERROR event without a
// Status, an unknown event type and an oversized frame each end the stream as an InternalError.
// A frame cut short by the connection is a stream end, as in JSON.
func TestHostileProtobufFrames(t *testing.T) {
	json := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"11"}}`)
	big := configMap("big", "11")
	big.Data["x"] = strings.Repeat("x", 64<<10)
	for name, c := range map[string]struct {
		watch func(http.ResponseWriter)
		cause fsm.Cause
	}{
		"frame that is not a WatchEvent":  {pbFrames([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}), fsm.CauseInternalErrorInWindow},
		"JSON object in a protobuf frame": {pbFrames(pbEvent(t, "ADDED", nil, json)), fsm.CauseInternalErrorInWindow},
		"ERROR with a ConfigMap":          {pbFrames(pbEvent(t, "ERROR", configMap("x", "11"), nil)), fsm.CauseInternalErrorInWindow},
		"unknown event type":              {pbFrames(pbEvent(t, "EXPLODED", configMap("x", "11"), nil)), fsm.CauseInternalErrorInWindow},
		"oversized frame":                 {pbFrames(pbEvent(t, "ADDED", big, nil)), fsm.CauseInternalErrorInWindow},
		"frame cut short": {func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(binary.BigEndian.AppendUint32(nil, 1000))
			_, _ = w.Write([]byte("short"))
		}, fsm.CauseStreamEnded},
	} {
		t.Run(name, func(t *testing.T) {
			r := runAgainst(t, &scripted{watch: []func(http.ResponseWriter){c.watch, hang}}, func(h *httpapi.Config) {
				h.MaxFrameBytes, h.Decoder = 16<<10, httpapi.Typed(scheme.Scheme)
			})
			tr := r.waitCause(t, c.cause)
			require.NotNil(t, tr.Event.Failure)
			require.NotEmpty(t, tr.Event.Failure.Message, "the log line must say what was wrong")
		})
	}
}

// The Metadata decoder asks for PartialObjectMetadata even without MetadataOnly: otherwise a
// server would answer a full object in protobuf, which it cannot decode.
func TestMetadataDecoderAsksForMetadata(t *testing.T) {
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		rw.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: srv.URL, Resource: configMaps, Decoder: httpapi.Metadata()})
	require.NoError(t, err)
	transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 1})
	require.True(t, strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"), accept)
}
