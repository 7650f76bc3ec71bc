package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
)

// CBOR throughput, for unstructured objects (what a custom resource is to a reflector): the
// same watch stream of ~1.1 KiB ConfigMaps as unstructured objects, in JSON and in CBOR (a
// CBOR sequence of WatchEvents, as kube-apiserver writes it with its CBORServingAndStorage
// gate on), read by rewatch's Unstructured decoder and by decoding alone (apimachinery's
// framer and serializer for the format, each object into an Unstructured). client-go is not a
// runner here: its dynamic client reads CBOR only behind client feature gates read once per
// process. One op is the whole stream of BENCH_EVENTS (default 100000) events. Run with:
//
//	go test -run '^$' -bench CBORThroughput -benchmem -benchtime 1x -count 6 ./bench/ | benchstat -col /runner -
func BenchmarkCBORThroughput(b *testing.B) {
	for _, media := range []string{runtime.ContentTypeJSON, runtime.ContentTypeCBOR} {
		name := map[string]string{runtime.ContentTypeJSON: "json", runtime.ContentTypeCBOR: "cbor"}[media]
		for _, runner := range []string{"decode-only", "rewatch-unstructured"} {
			b.Run(fmt.Sprintf("wire=%s/runner=%s", name, runner), func(b *testing.B) { benchCBOR(b, media, runner) })
		}
	}
}

// unstructuredCodec is a format's serializers for unstructured objects.
type unstructuredCodec struct {
	media, streamMedia string
	info               runtime.SerializerInfo
}

func unstructuredCodecFor(media string) unstructuredCodec {
	if media == runtime.ContentTypeCBOR {
		s := runtime.NewScheme()
		metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
		return unstructuredCodec{media: media, streamMedia: runtime.ContentTypeCBORSequence, info: cbor.NewSerializerInfo(s, s)}
	}
	c := codecFor(media)
	return unstructuredCodec{media: media, streamMedia: media + ";stream=watch", info: c.info}
}

func (c unstructuredCodec) encode(obj runtime.Object) []byte {
	var b bytes.Buffer
	if err := c.info.Serializer.Encode(obj, &b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// stream is n watch events of ConfigMaps as unstructured objects: names distinct objects
// added, then modified in turn (the payload of WatchStream).
func (c unstructuredCodec) stream(n, names int) []byte {
	var b bytes.Buffer
	enc := streaming.NewEncoder(c.info.StreamSerializer.Framer.NewFrameWriter(&b), c.info.StreamSerializer.Serializer)
	pad := strings.Repeat("y", 850)
	for i := range n {
		typ := watch.Modified
		if i < names {
			typ = watch.Added
		}
		cm := &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i%names), Namespace: "bench", UID: "00000000-0000-0000-0000-000000000001",
				ResourceVersion: fmt.Sprint(i + 2), CreationTimestamp: metav1.Unix(1767225600, 0), Labels: map[string]string{"app": "bench"}},
			Data: map[string]string{"payload": pad, "seq": fmt.Sprint(i)},
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
		if err != nil {
			panic(err)
		}
		raw := c.encode(&unstructured.Unstructured{Object: m})
		if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

// unstructuredServer answers in the format the request lists first: an empty LIST at
// resourceVersion 1, then the stream, held open until the client goes away.
func unstructuredServer(c unstructuredCodec, stream []byte) *httptest.Server {
	list := c.encode(&unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList",
		"metadata": map[string]any{"resourceVersion": "1"}}})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Accept"), c.media) {
			http.Error(w, "this server answers "+c.media+" first", http.StatusNotAcceptable)
			return
		}
		if !serveWatch(w, r, c.streamMedia, stream) {
			w.Header().Set("Content-Type", c.media)
			_, _ = w.Write(list)
		}
	}))
}

func benchCBOR(b *testing.B, media, runner string) {
	n := streamEvents()
	c := unstructuredCodecFor(media)
	stream := cached(fmt.Sprintf("unstructured %s %d", media, n), func() []byte { return c.stream(n, 1000) })
	srv := unstructuredServer(c, stream)
	defer srv.Close()
	format := map[string]rewatch.Format{runtime.ContentTypeJSON: rewatch.FormatJSON, runtime.ContentTypeCBOR: rewatch.FormatCBOR}[media]
	var run func(ctx context.Context, url string, store *CountingStore) error
	newInner := func() InnerStore { return nil }
	switch runner {
	case "decode-only":
		s := c.info.StreamSerializer
		run = func(ctx context.Context, url string, store *CountingStore) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/namespaces/bench/configmaps?watch=1", nil)
			req.Header.Set("Accept", c.media)
			return decodeWatchEvents(req, func(body io.ReadCloser) streaming.Decoder {
				return streaming.NewDecoder(s.Framer.NewFrameReader(body), s.Serializer)
			}, func(raw []byte) error {
				if media == runtime.ContentTypeJSON {
					// As the JSON throughput baseline decodes (BenchmarkThroughputDecodeOnly).
					return (&unstructured.Unstructured{}).UnmarshalJSON(raw)
				}
				_, _, err := c.info.Serializer.Decode(raw, nil, &unstructured.Unstructured{})
				return err
			}, store)
		}
	case "rewatch-unstructured":
		newInner = func() InnerStore { return driver.NewMemStore() }
		run = func(ctx context.Context, url string, store *CountingStore) error {
			r, err := rewatch.New(rewatch.Config{Store: store, Connection: rewatch.Connection{Client: &http.Client{}, Server: url, Format: format,
				Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "bench"}}})
			if err != nil {
				return err
			}
			return r.Run(ctx)
		}
	}
	runStream(b, srv.URL, n, int64(len(stream)), run, newInner)
}
