package sim

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// encoding is the wire format of one response: JSON for everything, protobuf for a built-in
// kind that client-go's scheme knows, as kube-apiserver serves protobuf for built-in types and
// never for a custom resource's own objects. With metadata, objects are sent as
// PartialObjectMetadata (a metadata client's as=PartialObjectMetadata;g=meta.k8s.io;v=v1),
// which the server serves in protobuf for every resource.
type encoding struct {
	protobuf bool
	metadata bool
	gvk      schema.GroupVersionKind
}

var jsonEncoding = encoding{}

// negotiate picks the first media type of accept that the server can serve for res on a LIST
// or a watch: JSON for any resource, protobuf for a built-in kind, either of them converted to
// PartialObjectMetadata (List for a LIST) when asked with as/g/v. ok is false when none is
// acceptable (406).
func negotiate(accept string, res *resource, isWatch bool) (encoding, bool) {
	if strings.TrimSpace(accept) == "" {
		return jsonEncoding, true
	}
	wantAs := "PartialObjectMetadataList"
	if isWatch {
		wantAs = "PartialObjectMetadata"
	}
	for _, part := range strings.Split(accept, ",") {
		params := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(params[0]))
		as := map[string]string{}
		other := false
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch k {
			case "q", "charset":
			case "as", "g", "v":
				as[k] = v
			default:
				other = true
			}
		}
		metadata := len(as) > 0
		if other || (metadata && (as["as"] != wantAs || as["g"] != "meta.k8s.io" || as["v"] != "v1")) {
			continue
		}
		switch {
		case mt == "application/json" || mt == "*/*" || mt == "application/*":
			return encoding{metadata: metadata}, true
		case mt == mediaProtobuf && (metadata || (res != nil && res.servesProtobuf())):
			return encoding{protobuf: true, metadata: metadata, gvk: res.gvr.GroupVersion().WithKind(res.kind)}, true
		}
	}
	return encoding{}, false
}

func (k kindInfo) servesProtobuf() bool {
	return !k.custom && scheme.Scheme.Recognizes(k.gvr.GroupVersion().WithKind(k.kind))
}

func (e encoding) contentType() string {
	if e.protobuf {
		return mediaProtobuf
	}
	return "application/json"
}

var protobufSerializer = func() runtime.Serializer {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaProtobuf)
	if !ok {
		panic("sim: client-go's scheme has no protobuf serializer")
	}
	return info.Serializer
}()

// typed turns the JSON shape of an object into the Go type of gvk, as the server holds it
// before encoding.
func typed(gvk schema.GroupVersionKind, v any) (runtime.Object, error) {
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, obj); err != nil {
		return nil, fmt.Errorf("%s from its JSON shape: %w", gvk.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// typedList is l as the Go list type of gvk's kind, each item converted once.
func typedList(gvk schema.GroupVersionKind, l wireList) (runtime.Object, error) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	list, err := scheme.Scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	list.GetObjectKind().SetGroupVersionKind(listGVK)
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(l.ResourceVersion)
	lm.SetContinue(l.Continue)
	lm.SetRemainingItemCount(l.RemainingItemCount)
	items := make([]runtime.Object, len(l.Items))
	for i := range l.Items {
		if items[i], err = typed(gvk, l.Items[i]); err != nil {
			return nil, err
		}
	}
	return list, meta.SetList(list, items)
}

var metaScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return s
}()

var metaProtobuf runtime.Serializer = protobuf.NewSerializer(metaScheme, metaScheme)

// asMetadata is v with only its metadata, as the server converts it for a metadata client.
func asMetadata(v any) any {
	tm := func(kind string) metav1.TypeMeta { return metav1.TypeMeta{Kind: kind, APIVersion: "meta.k8s.io/v1"} }
	switch x := v.(type) {
	case wireObject:
		return &metav1.PartialObjectMetadata{TypeMeta: tm("PartialObjectMetadata"), ObjectMeta: x.ObjectMeta}
	case wireList:
		l := &metav1.PartialObjectMetadataList{TypeMeta: tm("PartialObjectMetadataList"), ListMeta: x.ListMeta,
			Items: make([]metav1.PartialObjectMetadata, len(x.Items))}
		for i, item := range x.Items {
			l.Items[i] = metav1.PartialObjectMetadata{TypeMeta: tm("PartialObjectMetadata"), ObjectMeta: item.ObjectMeta}
		}
		return l
	case customBookmark:
		return &metav1.PartialObjectMetadata{TypeMeta: tm("PartialObjectMetadata"),
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: x.Metadata.ResourceVersion, Annotations: x.Metadata.Annotations}}
	}
	return v // a Status
}

// body encodes v (an object, a list, a Status) for a response body or a watch event's object.
func (e encoding) body(v any) ([]byte, error) {
	if st, ok := v.(metav1.Status); ok {
		v = &st // statusOf has set its kind, so it encodes as it is in every format
	}
	if e.metadata {
		v = asMetadata(v)
	}
	if !e.protobuf {
		return json.Marshal(v)
	}
	var obj runtime.Object
	var err error
	switch x := v.(type) {
	case runtime.Object: // a Status, PartialObjectMetadata(List)
		obj = x
	case wireList:
		obj, err = typedList(e.gvk, x)
	default:
		obj, err = typed(e.gvk, v)
	}
	if err != nil {
		return nil, err
	}
	serializer := protobufSerializer
	if e.metadata {
		serializer = metaProtobuf
	}
	var b bytes.Buffer
	if err := serializer.Encode(obj, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeBody writes a whole response.
func (e encoding) writeBody(w http.ResponseWriter, code int, v any) {
	b, err := e.body(v)
	if err != nil {
		b, _ = json.Marshal(statusOf(err))
		e, code = jsonEncoding, http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", e.contentType())
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (e encoding) writeStatus(w http.ResponseWriter, err error) {
	st := statusOf(err)
	e.writeBody(w, int(st.Code), st)
}

// streamContentType is the Content-Type of a watch response.
func (e encoding) streamContentType() string {
	if e.protobuf {
		return mediaProtobuf + ";stream=watch"
	}
	return "application/json"
}

// writeFrame writes one event in the watch framing kube-apiserver uses: one
// {"type":…,"object":…} document per line in JSON; in protobuf a 4-byte big-endian length,
// then a metav1.WatchEvent whose object is a protobuf body of its own.
func (e encoding) writeFrame(rw http.ResponseWriter, typ watch.EventType, obj []byte) error {
	var b []byte
	var err error
	if e.protobuf {
		b, err = (&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: obj}}).Marshal()
		b = append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	} else {
		b, err = json.Marshal(wireEvent{Type: string(typ), Object: obj})
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	_, err = rw.Write(b)
	return err
}
