package httpapi_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/transport/httpapi"
)

// listPods is a protobuf PodList as the API server writes it: pods with maps, nested
// structs, quantities, owner references and managed fields, a resourceVersion and a continue
// token.
func listPods(t testing.TB, n int) []byte {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "4711", Continue: "token-2"}}
	yes := true
	for i := range n {
		l.Items = append(l.Items, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "web-" + string(rune('a'+i)), Namespace: "prod", ResourceVersion: "47" + string(rune('0'+i)),
				UID:             types.UID("uid-web-" + string(rune('a'+i))),
				Labels:          map[string]string{"app": "web", "i": string(rune('0' + i))},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "u1", Controller: &yes}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kcm", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "web", Image: "web:v1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
			}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
		})
	}
	return encodeProtobuf(t, l)
}

// encodeProtobuf encodes a core/v1 object as the API server does (newWire's encode, for
// fuzz targets as well as tests).
func encodeProtobuf(t testing.TB, obj runtime.Object) []byte {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	require.NoError(t, err)
	return b
}

// A protobuf LIST is decoded item by item (docs/semantics.md's initial state, with the peak
// heap of bench/RESULTS.md "Wire formats"): the result is exactly what decoding the whole list
// and copying its items out gives.
func TestProtobufListItemByItemEqualsWholeList(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		streamed, whole := httpapi.DecodeProtobufListBothWaysForTest(listPods(t, n))
		require.NoError(t, streamed.Err)
		require.NoError(t, whole.Err)
		require.Equal(t, whole, streamed)
		require.Equal(t, "4711", streamed.RV)
		require.Equal(t, "token-2", streamed.Continue)
		require.Len(t, streamed.Items, n)
		for i, it := range streamed.Items {
			pod, ok := it.(*corev1.Pod)
			require.True(t, ok, "%T", it)
			require.Equal(t, "web-"+string(rune('a'+i)), pod.Name)
			if i > 0 {
				require.NotSame(t, streamed.Items[i-1], it)
			}
		}
	}
}

// Every cut of a protobuf LIST body either fails with an error or, where decoding the whole
// list succeeds, gives the same result; nothing panics.
func TestProtobufListCutBodies(t *testing.T) {
	body := listPods(t, 3)
	for cut := range len(body) {
		streamed, whole := httpapi.DecodeProtobufListBothWaysForTest(body[:cut])
		if whole.Err == nil {
			require.NoError(t, streamed.Err, "cut at %d", cut)
			require.Equal(t, whole, streamed, "cut at %d", cut)
		}
	}
}

// A body that is not a list of the scheme (a Status, an unknown kind, JSON sent as protobuf)
// gets the whole-list decode's error.
func TestProtobufListNotAList(t *testing.T) {
	status := encodeProtobuf(t, &metav1.Status{Status: metav1.StatusFailure, Code: 500})
	unknownKind := bytes.Replace(listPods(t, 1), []byte("PodList"), []byte("PodLisx"), 1)
	for name, body := range map[string][]byte{"status": status, "unknown kind": unknownKind, "json": []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`)} {
		streamed, whole := httpapi.DecodeProtobufListBothWaysForTest(body)
		require.Error(t, whole.Err, name)
		require.Error(t, streamed.Err, name)
		require.Equal(t, whole.Err.Error(), streamed.Err.Error(), name)
	}
}

// Metadata-only lists (PartialObjectMetadataList in protobuf) are decoded item by item too.
func TestProtobufMetadataListItemByItem(t *testing.T) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	require.NoError(t, metav1.AddMetaToScheme(s))
	l := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items: []metav1.PartialObjectMetadata{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7", Labels: map[string]string{"x": "y"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "8"}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(s, s).Encode(l, &buf))
	items, rv, cont, err := httpapi.Metadata().DecodeList(httpapi.MediaProtobuf, buf.Bytes())
	require.NoError(t, err)
	require.Equal(t, "9", rv)
	require.Empty(t, cont)
	require.Len(t, items, 2)
	require.Equal(t, &l.Items[0], items[0])
	require.Equal(t, &l.Items[1], items[1])
}

// FuzzProtobufList holds the item-by-item decode of arbitrary protobuf LIST bodies to the
// whole-list decode: wherever the latter succeeds, the former gives the same result — or, for
// an envelope whose list message is not the only one or is followed by a typeMeta (which no
// server writes, and where the whole decode reads another list: the last list message, the
// merged kind), refuses it.
func FuzzProtobufList(f *testing.F) {
	body := listPods(f, 2)
	for _, seed := range [][]byte{body, body[:len(body)/2], body[:4], {}, doubledListMessage(f)} {
		f.Add(seed)
	}
	for _, seed := range bodiesGeneratedCodeReads(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		streamed, whole := httpapi.DecodeProtobufListBothWaysForTest(body)
		if whole.Err != nil {
			return
		}
		if ambiguousEnvelope(body) {
			require.Error(t, streamed.Err)
			return
		}
		require.NoError(t, streamed.Err)
		require.Equal(t, whole, streamed)
	})
}

// An envelope with a second, empty list message after a malformed one: the whole decode reads
// the last (an empty list), and the item-by-item decode refuses the body rather than hand over
// what it found in the first.
func TestProtobufListTwoListMessagesRefused(t *testing.T) {
	body := doubledListMessage(t)
	streamed, whole := httpapi.DecodeProtobufListBothWaysForTest(body)
	require.NoError(t, whole.Err)
	require.Error(t, streamed.Err)
	require.Empty(t, streamed.Items)

	// A typeMeta after the list message would change the kind the whole decode reads.
	body = protowire.AppendTag(listPods(t, 1), 1, protowire.BytesType)
	body = protowire.AppendBytes(body, protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "PodList"))
	streamed, whole = httpapi.DecodeProtobufListBothWaysForTest(body)
	require.NoError(t, whole.Err)
	require.ErrorContains(t, streamed.Err, "typeMeta follows its list message")

	// A second list message after a group whose end names another field: generated code
	// skips the group by balance, not by number, and reads the second list too.
	pods := listMessage(t, listPods(t, 1))
	body = protowire.AppendTag(envelope("PodList", pods), 9, protowire.StartGroupType)
	body = protowire.AppendTag(body, 10, protowire.EndGroupType)
	body = protowire.AppendBytes(protowire.AppendTag(body, 2, protowire.BytesType), pods)
	require.True(t, ambiguousEnvelope(body))
	streamed, whole = httpapi.DecodeProtobufListBothWaysForTest(body)
	require.NoError(t, whole.Err)
	require.ErrorContains(t, streamed.Err, "more than one list message")
}

// doubledListMessage is the fuzzer's find: a PodList envelope whose list message "00000" (not
// a PodList) is followed by an empty one.
func doubledListMessage(t testing.TB) []byte {
	return []byte("k8s\x00\n\r\n\x02v1\x12\aPodList\x12\x0500000\x12\x00")
}

// ambiguousEnvelope reports whether a protobuf body's envelope (after its 4-byte magic) holds
// its list message (field 2) more than once, or a typeMeta (field 1) after it. It reads the
// envelope as generated code does (gogoVarint, gogoSkip), not as protowire does, which refuses
// what generated code accepts.
func ambiguousEnvelope(body []byte) bool {
	if len(body) < 4 {
		return false
	}
	b, raws := body[4:], 0
	for len(b) > 0 {
		key, n := gogoVarint(b)
		if n < 0 {
			return false
		}
		num, typ := int32(key>>3), key&7
		if typ == uint64(protowire.BytesType) && (num == 2 || num == 1 && raws > 0) {
			raws++
		}
		n = gogoSkip(b)
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return raws > 1
}

// gogoVarint reads a varint as generated code does: up to ten bytes, the bits past the 64th
// dropped; n < 0 when b ends first or the varint is longer.
func gogoVarint(b []byte) (v uint64, n int) {
	for shift := uint(0); shift < 64; shift += 7 {
		if n >= len(b) {
			return 0, -1
		}
		c := b[n]
		n++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, n
		}
	}
	return 0, -1
}

// gogoSkip is the length of the field at the start of b, key included, as generated code
// skips it: a group ends at the end group that balances its start, whatever its number.
func gogoSkip(b []byte) int {
	i, depth := 0, 0
	for {
		key, n := gogoVarint(b[i:])
		if n < 0 {
			return -1
		}
		i += n
		switch protowire.Type(key & 7) {
		case protowire.VarintType:
			if _, n = gogoVarint(b[i:]); n < 0 {
				return -1
			}
			i += n
		case protowire.Fixed64Type:
			i += 8
		case protowire.Fixed32Type:
			i += 4
		case protowire.BytesType:
			l, n := gogoVarint(b[i:])
			if n < 0 || l > uint64(len(b)-i-n) {
				return -1
			}
			i += n + int(l)
		case protowire.StartGroupType:
			depth++
		case protowire.EndGroupType:
			if depth == 0 {
				return -1
			}
			depth--
		default:
			return -1
		}
		if i > len(b) {
			return -1
		}
		if depth == 0 {
			return i
		}
	}
}

// Generated Unmarshal code (which the whole-list decode runs) skips group fields, reads a
// varint of up to ten bytes dropping the bits past the 64th, and keeps a key's field number
// to its low 32 bits; the item-by-item decode reads the same bodies the same way (the CI
// fuzzer found a group in the list message decoded whole and refused item by item).
func TestProtobufListReadsTheWireAsGeneratedCodeDoes(t *testing.T) {
	for name, body := range bodiesGeneratedCodeReads(t) {
		streamed, whole := httpapi.DecodeProtobufListBothWaysForTest(body)
		require.NoError(t, whole.Err, name)
		require.NoError(t, streamed.Err, name)
		require.Equal(t, whole, streamed, name)
	}
}

// bodiesGeneratedCodeReads are PodList bodies only a reader as lenient as generated code
// decodes: groups, overlong varints, field numbers past 32 bits.
func bodiesGeneratedCodeReads(t testing.TB) map[string][]byte {
	group := func(num protowire.Number, inner ...[]byte) []byte {
		b := protowire.AppendTag(nil, num, protowire.StartGroupType)
		for _, in := range inner {
			b = append(b, in...)
		}
		return protowire.AppendTag(b, num, protowire.EndGroupType)
	}
	varintField := protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 5)
	// A varint of ten bytes whose last carries bits past the 64th, which generated code drops.
	overlong := func(v uint64) []byte {
		b := make([]byte, 0, 10)
		for range 9 {
			b = append(b, byte(v&0x7f)|0x80)
			v >>= 7
		}
		return append(b, byte(v&1)|0x7e)
	}
	pods := listMessage(t, listPods(t, 2))
	return map[string][]byte{
		"a group in the list message":                 envelope("PodList", append(append([]byte(nil), pods...), group(9, varintField)...)),
		"a nested group in the list message":          envelope("PodList", append(group(9, group(10, varintField), protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "x")), pods...)),
		"a group in the envelope after the list":      append(envelope("PodList", pods), group(9, varintField)...),
		"an overlong varint in the list message":      envelope("PodList", append(append([]byte(nil), pods...), append(protowire.AppendTag(nil, 7, protowire.VarintType), overlong(3)...)...)),
		"an overlong key for the list's metadata":     envelope("PodList", append(append(overlong(1<<3|uint64(protowire.BytesType)), protowire.AppendString(nil, "\x12\x0299")...), pods...)),
		"a key whose field number wraps to the items": envelope("PodList", append(append([]byte(nil), pods...), protowire.AppendBytes(protowire.AppendVarint(nil, (uint64(1)<<32|2)<<3|uint64(protowire.BytesType)), podBytes(t, "wrapped"))...)),
	}
}

// envelope wraps a list message in the API server's protobuf envelope for a core/v1 kind.
func envelope(kind string, list []byte) []byte {
	typeMeta := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "v1")
	typeMeta = protowire.AppendString(protowire.AppendTag(typeMeta, 2, protowire.BytesType), kind)
	b := protowire.AppendBytes(protowire.AppendTag([]byte("k8s\x00"), 1, protowire.BytesType), typeMeta)
	return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), list)
}

// listMessage is the list message of a body encodeProtobuf wrote.
func listMessage(t testing.TB, body []byte) []byte {
	b := body[4:]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.Positive(t, n)
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			require.Positive(t, n)
			return v
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		require.Positive(t, n)
		b = b[n:]
	}
	t.Fatal("no list message")
	return nil
}

// podBytes is a Pod's protobuf message.
func podBytes(t testing.TB, name string) []byte {
	b, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "5"}}).Marshal()
	require.NoError(t, err)
	return b
}
