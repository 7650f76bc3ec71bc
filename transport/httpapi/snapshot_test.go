package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// created is a server's timestamp: whole seconds, in the local zone, as metav1.Time decodes.
var created = metav1.NewTime(time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC).Local())

func objectMeta(name string, rv int) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "prod", UID: types.UID(fmt.Sprintf("0b1e4c3a-9d7f-4a52-8f0e-%012d", rv)),
		ResourceVersion: fmt.Sprint(rv), Generation: 3, CreationTimestamp: created,
		Labels:      map[string]string{"app": "web", "tier": "front"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1"}`},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
			UID: "6f1c2d3e-0000-4000-8000-000000000001", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		Finalizers: []string{"example.com/cleanup"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:key":{}}}`)}}},
	}
}

func ptr[T any](v T) *T { return &v }

func configMapList() *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, ListMeta: metav1.ListMeta{ResourceVersion: "500"}}
	for i := range 5 {
		l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: objectMeta(fmt.Sprintf("cm-%d", i), 100+i),
			Data:       map[string]string{"key": "value ü", "config.yaml": "a: 1\nb: [x, y]\n"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2, 255}}, Immutable: ptr(i%2 == 0)})
	}
	return l
}

func secretList() *corev1.SecretList {
	l := &corev1.SecretList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "SecretList"}, ListMeta: metav1.ListMeta{ResourceVersion: "600"}}
	for i := range 3 {
		l.Items = append(l.Items, corev1.Secret{ObjectMeta: objectMeta(fmt.Sprintf("s-%d", i), 200+i), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\n…"), "tls.key": {0x30, 0x82, 0x04, 0xa4}}})
	}
	return l
}

// serverBody encodes obj as kube-apiserver answers in media.
func serverBody(t *testing.T, media string, obj runtime.Object) []byte {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), media)
	require.True(t, ok, media)
	var b bytes.Buffer
	require.NoError(t, info.Serializer.Encode(obj, &b))
	return b.Bytes()
}

func transportWith(t testing.TB, d httpapi.Decoder, r httpapi.Resource) *httpapi.Transport {
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: "https://10.0.0.1:6443/prefix/", Resource: r, Decoder: d})
	require.NoError(t, err)
	return tr
}

// roundTrip encodes each object with the transport's snapshot codec and decodes it again.
func roundTrip(t *testing.T, tr *httpapi.Transport, objs []any) []any {
	codec, err := tr.SnapshotCodec()
	require.NoError(t, err)
	out := make([]any, len(objs))
	for i, o := range objs {
		raw, err := codec.Encode(o)
		require.NoError(t, err)
		out[i], err = codec.Decode(raw)
		require.NoError(t, err)
	}
	return out
}

// requireSame holds decoded objects to the originals, reflect.DeepEqual and semantically.
func requireSame(t *testing.T, want, got []any) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, apiequality.Semantic.DeepEqual(want[i], got[i]), "item %d:\nwant %#v\ngot  %#v", i, want[i], got[i])
		require.True(t, reflect.DeepEqual(want[i], got[i]), "item %d:\nwant %#v\ngot  %#v", i, want[i], got[i])
	}
}

var prodConfigMaps = httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "prod"}

func TestTypedSnapshotCodecRoundTrips(t *testing.T) {
	tr := transportWith(t, httpapi.Typed(scheme.Scheme), prodConfigMaps)
	for _, media := range []string{httpapi.MediaProtobuf, httpapi.MediaJSON} {
		for _, list := range []runtime.Object{configMapList(), secretList()} {
			t.Run(fmt.Sprintf("%T %s", list, media), func(t *testing.T) {
				items, _, _, err := httpapi.Typed(scheme.Scheme).DecodeList(media, serverBody(t, media, list))
				require.NoError(t, err)
				require.NotEmpty(t, items)
				requireSame(t, items, roundTrip(t, tr, items))
			})
		}
	}
}

func TestTypedSnapshotCodecWritesTheEnvelopeTheServerWrites(t *testing.T) {
	tr := transportWith(t, httpapi.Typed(scheme.Scheme), prodConfigMaps)
	codec, err := tr.SnapshotCodec()
	require.NoError(t, err)
	assert.Equal(t, httpapi.MediaProtobuf, codec.MediaType())
	cm := configMapList().Items[0]
	raw, err := codec.Encode(&cm)
	require.NoError(t, err)
	assert.Empty(t, cm.Kind, "the store's object is left as it was")
	// What the server writes for the object with its kind set, byte for byte.
	withKind := cm.DeepCopy()
	withKind.APIVersion, withKind.Kind = "v1", "ConfigMap"
	assert.Equal(t, serverBody(t, httpapi.MediaProtobuf, withKind), raw)
	// And the transport's own decoder reads it.
	obj, err := httpapi.Typed(scheme.Scheme).DecodeObject(httpapi.MediaProtobuf, raw)
	require.NoError(t, err)
	assert.Equal(t, withKind, obj)
}

func TestTypedSnapshotCodecDropsTheKindOfAProtobufObject(t *testing.T) {
	// A watch event's object comes with its kind; through the snapshot it comes back without,
	// as a LIST's items do.
	tr := transportWith(t, httpapi.Typed(scheme.Scheme), prodConfigMaps)
	cm := configMapList().Items[1]
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	got := roundTrip(t, tr, []any{&cm})[0].(*corev1.ConfigMap)
	want := cm.DeepCopy()
	want.TypeMeta = metav1.TypeMeta{}
	assert.Equal(t, want, got)
}

func TestTypedSnapshotCodecTakesTheTransportsGroupVersion(t *testing.T) {
	// A type the scheme knows in several group versions is named in the one the transport asks for.
	s := runtime.NewScheme()
	require.NoError(t, appsv1.AddToScheme(s))
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "apps", Version: "v1beta9", Kind: "Deployment"}, &appsv1.Deployment{})
	for _, v := range []string{"v1", "v1beta9"} {
		tr := transportWith(t, httpapi.Typed(s), httpapi.Resource{Group: "apps", Version: v, Resource: "deployments"})
		codec, err := tr.SnapshotCodec()
		require.NoError(t, err)
		d := &appsv1.Deployment{ObjectMeta: objectMeta("web", 7), Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3))}}
		raw, err := codec.Encode(d)
		require.NoError(t, err)
		assert.Contains(t, string(raw), "apps/"+v)
		back, err := codec.Decode(raw)
		require.NoError(t, err)
		assert.Equal(t, d, back)
	}
}

// Widget is a typed custom resource without protobuf code, as controller authors write them.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec"`
}

type WidgetSpec struct {
	Size  int64    `json:"size"`
	Ratio float64  `json:"ratio"`
	Tags  []string `json:"tags,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Tags = append([]string(nil), w.Spec.Tags...)
	return &c
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (w *WidgetList) DeepCopyObject() runtime.Object {
	c := *w
	c.Items = make([]Widget, len(w.Items))
	for i := range w.Items {
		c.Items[i] = *w.Items[i].DeepCopyObject().(*Widget)
	}
	return &c
}

func TestTypedSnapshotCodecKeepsATypeWithoutProtobufAsJSON(t *testing.T) {
	gv := schema.GroupVersion{Group: "demo.rewatch.dev", Version: "v1"}
	s := runtime.NewScheme()
	s.AddKnownTypes(gv, &Widget{}, &WidgetList{})
	body := []byte(`{"apiVersion":"demo.rewatch.dev/v1","kind":"WidgetList","metadata":{"resourceVersion":"9"},"items":[
		{"apiVersion":"demo.rewatch.dev/v1","kind":"Widget","metadata":{"name":"a","namespace":"prod","resourceVersion":"8","creationTimestamp":"2026-12-05T07:00:00Z"},"spec":{"size":3,"ratio":1.0,"tags":["x"]}},
		{"metadata":{"name":"b","resourceVersion":"9"},"spec":{"size":0,"ratio":0.25}}]}`)
	items, _, _, err := httpapi.Typed(s).DecodeList(httpapi.MediaJSON, body)
	require.NoError(t, err)
	require.Len(t, items, 2)
	tr := transportWith(t, httpapi.Typed(s), httpapi.Resource{Group: gv.Group, Version: gv.Version, Resource: "widgets"})
	requireSame(t, items, roundTrip(t, tr, items))
}

func pomList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "700"}}
	for i := range 4 {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: objectMeta(fmt.Sprintf("m-%d", i), 300+i)})
	}
	l.Items[1].TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
	return l
}

func TestMetadataSnapshotCodecRoundTrips(t *testing.T) {
	tr := transportWith(t, httpapi.Metadata(), prodConfigMaps)
	for _, media := range []string{httpapi.MediaProtobuf, httpapi.MediaJSON} {
		t.Run(media, func(t *testing.T) {
			items, _, _, err := httpapi.Metadata().DecodeList(media, serverBody(t, media, pomList()))
			require.NoError(t, err)
			require.Len(t, items, 4)
			requireSame(t, items, roundTrip(t, tr, items))
		})
	}
	// Each object's own kind, set or not, comes back as it was.
	objs := []any{}
	for i := range pomList().Items {
		objs = append(objs, &pomList().Items[i])
	}
	requireSame(t, objs, roundTrip(t, tr, objs))
	// A watch event's object, decoded by the transport, likewise.
	obj, err := httpapi.Metadata().DecodeObject(httpapi.MediaProtobuf, serverBody(t, httpapi.MediaProtobuf, &pomList().Items[1]))
	require.NoError(t, err)
	requireSame(t, []any{obj}, roundTrip(t, tr, []any{obj}))
}

func widgetJSON(i int) string {
	return fmt.Sprintf(`{"apiVersion":"demo.rewatch.dev/v1","kind":"Widget","metadata":{"name":"w-%d","namespace":"prod","resourceVersion":"%d",
		"labels":{"app":"web"},"creationTimestamp":"2026-12-05T07:00:00Z","managedFields":[{"manager":"kubectl","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
		"spec":{"size":%d,"ratio":1.0,"half":0.5,"big":12345678901234567890,"neg":-7,"on":true,"none":null,"tags":["a",1,{"x":2.0}],"text":"héllo\n\"q\""},
		"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-12-05T07:00:01Z"}]}}`, i, 100+i, i)
}

func TestUnstructuredSnapshotCodecRoundTrips(t *testing.T) {
	tr := transportWith(t, httpapi.Unstructured(), httpapi.Resource{Group: "demo.rewatch.dev", Version: "v1", Resource: "widgets"})
	body := []byte(`{"apiVersion":"demo.rewatch.dev/v1","kind":"WidgetList","metadata":{"resourceVersion":"900"},"items":[` + widgetJSON(0) + `,` + widgetJSON(1) + `]}`)
	items, _, _, err := httpapi.Unstructured().DecodeList(httpapi.MediaJSON, body)
	require.NoError(t, err)
	require.Len(t, items, 2)
	// The float 1.0 is what JSON would not give back (it would come back an int64 1).
	require.IsType(t, float64(0), items[0].(*unstructured.Unstructured).Object["spec"].(map[string]any)["ratio"])
	requireSame(t, items, roundTrip(t, tr, items))

	// A built-in type's list, whose items take the list's kind; and a CBOR list.
	cms, _, _, err := httpapi.Unstructured().DecodeList(httpapi.MediaJSON, serverBody(t, httpapi.MediaJSON, configMapList()))
	require.NoError(t, err)
	requireSame(t, cms, roundTrip(t, tr, cms))
	ws, _, _, err := httpapi.Unstructured().DecodeList(httpapi.MediaCBOR, cborWidgets(t, 3))
	require.NoError(t, err)
	require.Len(t, ws, 3)
	requireSame(t, ws, roundTrip(t, tr, ws))
}

func TestSnapshotCodecsRefuseWhatTheyDoNotHold(t *testing.T) {
	for _, d := range []httpapi.Decoder{httpapi.Typed(scheme.Scheme), httpapi.Metadata(), httpapi.Unstructured()} {
		codec, err := transportWith(t, d, prodConfigMaps).SnapshotCodec()
		require.NoError(t, err)
		_, err = codec.Encode("a string")
		require.Error(t, err, "%T", d)
		_, err = codec.Decode([]byte("not an object"))
		require.Error(t, err, "%T", d)
	}
}

// plainDecoder is a caller's own Decoder, without a snapshot encoding.
type plainDecoder struct{}

func (plainDecoder) MediaTypes() []string { return []string{httpapi.MediaJSON} }
func (plainDecoder) DecodeList(string, []byte) ([]any, string, string, error) {
	return nil, "", "", errors.New("unused")
}

func (plainDecoder) DecodeObject(_ string, raw []byte) (any, error) {
	var m map[string]string
	err := json.Unmarshal(raw, &m)
	return m, err
}

// encodingDecoder is one that is an ObjectEncoder too.
type encodingDecoder struct{ plainDecoder }

func (encodingDecoder) SnapshotMediaType() string            { return httpapi.MediaJSON }
func (encodingDecoder) EncodeObject(obj any) ([]byte, error) { return json.Marshal(obj) }

func TestACallersDecoderNeedsAnObjectEncoder(t *testing.T) {
	_, err := transportWith(t, plainDecoder{}, prodConfigMaps).SnapshotCodec()
	require.ErrorIs(t, err, httpapi.ErrNoSnapshotCodec)
	assert.Contains(t, err.Error(), "no snapshot codec")

	tr := transportWith(t, encodingDecoder{}, prodConfigMaps)
	codec, err := tr.SnapshotCodec()
	require.NoError(t, err)
	assert.Equal(t, httpapi.MediaJSON, codec.MediaType())
	objs := []any{map[string]string{"name": "a"}, map[string]string{}}
	requireSame(t, objs, roundTrip(t, tr, objs))
	assert.Equal(t, "httpapi_test.encodingDecoder application/json", tr.SnapshotIdentity().Decoder)
}

func TestSnapshotIdentityIsWhatTheTransportWatches(t *testing.T) {
	r := httpapi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "prod", LabelSelector: "app=web", FieldSelector: "metadata.name!=x"}
	id := transportWith(t, httpapi.Typed(scheme.Scheme), r).SnapshotIdentity()
	assert.Regexp(t, `^\*?v1\.Deployment@[0-9a-f]{16}$`, id.Shape, "the shape of the Go type deployments decode into")
	id.Shape = ""
	assert.Equal(t, persist.Identity{Server: "https://10.0.0.1:6443/prefix", Group: "apps", Version: "v1", Resource: "deployments",
		Namespace: "prod", LabelSelector: "app=web", FieldSelector: "metadata.name!=x", Decoder: "typed application/vnd.kubernetes.protobuf"}, id)
	assert.Equal(t, "unstructured", transportWith(t, httpapi.Unstructured(), r).SnapshotIdentity().Shape)
	assert.Regexp(t, `^v1\.PartialObjectMetadata@`, transportWith(t, httpapi.Metadata(), r).SnapshotIdentity().Shape)

	assert.Equal(t, "metadata application/vnd.kubernetes.protobuf", transportWith(t, httpapi.Metadata(), r).SnapshotIdentity().Decoder)
	assert.Equal(t, "unstructured application/cbor", transportWith(t, httpapi.Unstructured(), r).SnapshotIdentity().Decoder)
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: "https://10.0.0.1:6443", Resource: r, MetadataOnly: true, Decoder: httpapi.Unstructured()})
	require.NoError(t, err)
	assert.Equal(t, "unstructured application/cbor metadata-only", tr.SnapshotIdentity().Decoder)
	// The default decoder is Unstructured.
	tr, err = httpapi.New(httpapi.Config{Client: &http.Client{}, Server: "https://10.0.0.1:6443", Resource: r})
	require.NoError(t, err)
	assert.Equal(t, "unstructured application/cbor", tr.SnapshotIdentity().Decoder)
	assert.Equal(t, "https://10.0.0.1:6443", tr.SnapshotIdentity().Server)
}

// A snapshot written through a transport's codec loads through another transport's, for the
// same identity, with every object equal.
func TestASnapshotThroughTheTransportsCodecLoads(t *testing.T) {
	dir := persist.Dir(t.TempDir())
	items, _, _, err := httpapi.Typed(scheme.Scheme).DecodeList(httpapi.MediaProtobuf, serverBody(t, httpapi.MediaProtobuf, secretList()))
	require.NoError(t, err)
	r := prodConfigMaps
	r.Resource = "secrets"
	tr := transportWith(t, httpapi.Typed(scheme.Scheme), r)
	codec, err := tr.SnapshotCodec()
	require.NoError(t, err)
	_, err = persist.Save(t.Context(), dir, tr.SnapshotIdentity(), codec, "600", items, time.Now())
	require.NoError(t, err)

	again := transportWith(t, httpapi.Typed(scheme.Scheme), r)
	codec2, err := again.SnapshotCodec()
	require.NoError(t, err)
	snap, err := persist.Load(t.Context(), dir, again.SnapshotIdentity(), codec2)
	require.NoError(t, err)
	assert.Equal(t, "600", snap.ResourceVersion)
	requireSame(t, items, snap.Items)

	// The same resource through another decoder is another identity: nothing to load.
	other := transportWith(t, httpapi.Unstructured(), r)
	codec3, err := other.SnapshotCodec()
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), dir, other.SnapshotIdentity(), codec3)
	require.ErrorIs(t, err, persist.ErrNotFound)
}

// AppendEncode appends exactly what Encode returns, after what dst held.
func TestSnapshotCodecsAppend(t *testing.T) {
	cm := configMapList().Items[0]
	pom := pomList().Items[1]
	w, _, _, err := httpapi.Unstructured().DecodeList(httpapi.MediaJSON, []byte(`{"apiVersion":"demo.rewatch.dev/v1","kind":"WidgetList","items":[`+widgetJSON(0)+`]}`))
	require.NoError(t, err)
	for _, c := range []struct {
		d   httpapi.Decoder
		obj any
	}{{httpapi.Typed(scheme.Scheme), &cm}, {httpapi.Metadata(), &pom}, {httpapi.Unstructured(), w[0]}} {
		codec, err := transportWith(t, c.d, prodConfigMaps).SnapshotCodec()
		require.NoError(t, err)
		whole, err := codec.Encode(c.obj)
		require.NoError(t, err)
		ae, ok := codec.(persist.AppendEncoder)
		require.True(t, ok, "%T", codec)
		got, err := ae.AppendEncode([]byte("prefix"), c.obj)
		require.NoError(t, err)
		assert.Equal(t, append([]byte("prefix"), whole...), got, "%T", codec)
	}
}

// docs/semantics.md "Persisted cache", "Identity": a snapshot names the shape of the Go type it
// holds. A build whose type gained a field — every k8s.io/api or CRD types bump — has another
// shape, and refuses the snapshot the build before it wrote, naming the shape, rather than load
// objects without the field and serve them as synced until each changes.
func TestASnapshotOfAnotherShapeIsRefused(t *testing.T) {
	gv := schema.GroupVersion{Group: "demo.rewatch.dev", Version: "v1"}
	schemeOf := func(obj runtime.Object) *runtime.Scheme {
		s := runtime.NewScheme()
		s.AddKnownTypeWithName(gv.WithKind("Widget"), obj)
		return s
	}
	r := httpapi.Resource{Group: gv.Group, Version: gv.Version, Resource: "widgets"}
	before := transportWith(t, httpapi.Typed(schemeOf(&widgetV1{})), r).SnapshotIdentity()
	after := transportWith(t, httpapi.Typed(schemeOf(&widgetV2{})), r).SnapshotIdentity()
	require.NotEqual(t, before.Shape, after.Shape)
	again := transportWith(t, httpapi.Typed(schemeOf(&widgetV1{})), r).SnapshotIdentity()
	require.Equal(t, before, again, "one build, one shape")

	dir := persist.Dir(t.TempDir())
	_, err := persist.Save(t.Context(), dir, before, textCodecForTest{}, "7", []any{"a"}, time.Now())
	require.NoError(t, err)
	// The file is named after the whole identity, so the upgraded build finds nothing to load;
	// the old file read for the new identity is refused, naming the shape.
	_, err = persist.Load(t.Context(), dir, after, textCodecForTest{})
	require.ErrorIs(t, err, persist.ErrNotFound)
	st := renamedStore{Store: dir, from: after, to: before}
	_, err = persist.Load(t.Context(), st, after, textCodecForTest{})
	var refused *persist.Refused
	require.ErrorAs(t, err, &refused)
	require.Contains(t, refused.Reason, "another identity: shape")
}

// renamedStore opens the snapshot of to when asked for from's.
type renamedStore struct {
	persist.Store
	from, to persist.Identity
}

func (s renamedStore) Open(ctx context.Context, id persist.Identity) (io.ReadCloser, error) {
	if id == s.from {
		id = s.to
	}
	return s.Store.Open(ctx, id)
}

// textCodecForTest keeps strings.
type textCodecForTest struct{}

func (textCodecForTest) MediaType() string              { return "text/plain" }
func (textCodecForTest) Encode(obj any) ([]byte, error) { return []byte(obj.(string)), nil }
func (textCodecForTest) Decode(raw []byte) (any, error) { return string(raw), nil }

// widgetV1 and widgetV2 are one custom resource's Go type in two builds: the second gained a
// field.
type widgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Size              int `json:"size"`
}

type widgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Size              int    `json:"size"`
	Color             string `json:"color,omitempty"`
}

func (w *widgetV1) DeepCopyObject() runtime.Object { c := *w; return &c }
func (w *widgetV2) DeepCopyObject() runtime.Object { c := *w; return &c }
