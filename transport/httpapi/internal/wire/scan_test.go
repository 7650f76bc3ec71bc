package wire_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/cborwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/jsonwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/pbwire"
)

// metaOf is what a scan found, as strings, for comparing.
func metaOf(m wire.Meta, ok bool) []string {
	if !ok {
		return nil
	}
	got := []string{string(m.Namespace), string(m.Name), string(m.ResourceVersion)}
	if len(m.UID) > 0 {
		got = append(got, "uid="+string(m.UID))
	}
	return got
}

// The JSON scanner reads an object's top-level metadata only — fields in any order, escapes
// decoded, "metadata" keys nested in data ignored — and vouches for nothing unusual: metadata
// missing, repeated, null or not an object, a name or resourceVersion missing or not a
// string, a key differing in case (which the case-sensitive decode would not read).
func TestScanJSONMeta(t *testing.T) {
	for name, c := range map[string]struct {
		raw  string
		want []string
	}{
		"server order":  {`{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5","uid":"u"},"data":{"k":"v"}}`, []string{"ns", "a", "5", "uid=u"}},
		"any order":     {`{"data":{"k":"v"},"kind":"ConfigMap","metadata":{"resourceVersion":"5","labels":{"name":"x"},"namespace":"ns","name":"a"}}`, []string{"ns", "a", "5"}},
		"white space":   {" {\n \"metadata\" : { \"name\" : \"a\" ,\t\"resourceVersion\":\"5\" } } ", []string{"", "a", "5"}},
		"cluster scope": {`{"metadata":{"name":"node-1","resourceVersion":"7"}}`, []string{"", "node-1", "7"}},
		"escaped strings": {`{"metadata":{"name":"a\u002db","namespace":"n\"s","resourceVersion":"5\/"}}`,
			[]string{`n"s`, "a-b", "5/"}},
		"escaped key": {`{"met\u0061data":{"n\u0061me":"a","resourceVersion":"5"}}`, []string{"", "a", "5"}},
		"nested metadata keys": {`{"data":{"metadata":{"name":"wrong","resourceVersion":"1"}},"spec":[{"metadata":{"name":"w"}},"}{\"metadata\""],` +
			`"metadata":{"annotations":{"metadata":"{\"name\":\"x\"}","name":"n"},"name":"a","resourceVersion":"5"}}`, []string{"", "a", "5"}},
		"numbers and literals": {`{"a":-1.5e3,"b":true,"c":null,"d":[1,[2,{}]],"metadata":{"generation":3,"name":"a","resourceVersion":"5","x":false}}`, []string{"", "a", "5"}},

		"no metadata":              {`{"data":{"metadata":{"name":"a","resourceVersion":"5"}}}`, nil},
		"metadata twice":           {`{"metadata":{"name":"a","resourceVersion":"5"},"metadata":{"name":"a","resourceVersion":"6"}}`, nil},
		"metadata null":            {`{"metadata":null}`, nil},
		"metadata not an object":   {`{"metadata":"a"}`, nil},
		"no name":                  {`{"metadata":{"resourceVersion":"5"}}`, nil},
		"no resourceVersion":       {`{"metadata":{"name":"a"}}`, nil},
		"name twice":               {`{"metadata":{"name":"a","name":"b","resourceVersion":"5"}}`, nil},
		"namespace twice":          {`{"metadata":{"name":"a","namespace":"x","namespace":"y","resourceVersion":"5"}}`, nil},
		"name null":                {`{"metadata":{"name":null,"resourceVersion":"5"}}`, nil},
		"resourceVersion a number": {`{"metadata":{"name":"a","resourceVersion":5}}`, nil},
		"uid twice":                {`{"metadata":{"name":"a","resourceVersion":"5","uid":"u","uid":"v"}}`, nil},
		"uid a number":             {`{"metadata":{"name":"a","resourceVersion":"5","uid":7}}`, nil},
		"key in another case":      {`{"Metadata":{"name":"a","resourceVersion":"5"}}`, nil},
		"bad escape":               {`{"metadata":{"name":"a\x","resourceVersion":"5"}}`, nil},
		"not an object":            {`["metadata"]`, nil},
		"cut":                      {`{"metadata":{"name":"a","resourceVersion":"5"`, nil},
		"trailing data":            {`{"metadata":{"name":"a","resourceVersion":"5"}}x`, nil},
		"empty":                    {``, nil},
	} {
		require.Equal(t, c.want, metaOf(jsonwire.ScanMeta([]byte(c.raw))), name)
	}
}

// A JSON watch frame's type and object are found in any order; anything repeated is not
// vouched for.
var (
	jsonAddedMeta     = jsonwire.Frames.AddedMeta
	protobufAddedMeta = pbwire.Frames.AddedMeta
)

func TestJSONAddedMeta(t *testing.T) {
	obj := `{"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}`
	for frame, want := range map[string][]string{
		`{"type":"ADDED","object":` + obj + `}`:                      {"ns", "a", "5"},
		`{"object":` + obj + `,"type":"ADDED"}`:                      {"ns", "a", "5"},
		`{"type":"MODIFIED","object":` + obj + `}`:                   nil,
		`{"type":"ADDED","type":"ADDED","object":` + obj + `}`:       nil,
		`{"type":"ADDED","object":` + obj + `,"object":` + obj + `}`: nil,
		`{"type":"ADDED"}`:           nil,
		`{"type":"ADDED","object":{`: nil,
	} {
		require.Equal(t, want, metaOf(jsonAddedMeta([]byte(frame))), frame)
	}
}

func encodeProtobufMessage(t *testing.T, m interface{ Marshal() ([]byte, error) }) []byte {
	b, err := m.Marshal()
	require.NoError(t, err)
	return b
}

// protoField appends field num as a length-delimited field holding v.
func protoField(b []byte, num int, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2 /* length-delimited */)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// The protobuf scanner reads the ObjectMeta of a real object whatever else it holds, and
// vouches for nothing unusual: metadata missing, repeated or of another wire type, a name or
// resourceVersion missing or repeated, broken framing anywhere in the message.
func TestScanProtobufMeta(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5", UID: "u",
			Labels: map[string]string{"name": "x"}, Annotations: map[string]string{"k": string([]byte{10, 1, 'z'})}},
		Data: map[string]string{"metadata": string(protoField(nil, 1, []byte("wrong")))},
	}
	raw := encodeProtobufMessage(t, cm)
	metaField := pbwire.ObjectMetaField(reflect.TypeOf(corev1.ConfigMap{}))
	require.Equal(t, pbwire.FieldNumber(1), metaField)
	require.Equal(t, []string{"ns", "a", "5", "uid=u"}, metaOf(pbwire.ScanMeta(raw, metaField)))

	node := encodeProtobufMessage(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "9"}})
	require.Equal(t, []string{"", "n1", "9"}, metaOf(pbwire.ScanMeta(node, 1)))

	// Fields in any order: data before metadata, metadata's fields reversed.
	meta := protoField(protoField(protoField(nil, 6, []byte("5")), 3, []byte("ns")), 1, []byte("a"))
	reordered := protoField(protoField(nil, 2, []byte("data")), 1, meta)
	require.Equal(t, []string{"ns", "a", "5"}, metaOf(pbwire.ScanMeta(reordered, 1)))

	for name, b := range map[string][]byte{
		"no metadata":        protoField(nil, 2, []byte("x")),
		"metadata twice":     append(append([]byte{}, raw...), protoField(nil, 1, meta)...),
		"metadata a varint":  append(binary.AppendUvarint(nil, 1<<3|0 /* varint */), 5),
		"no name":            protoField(nil, 1, protoField(nil, 6, []byte("5"))),
		"no resourceVersion": protoField(nil, 1, protoField(nil, 1, []byte("a"))),
		"name twice":         protoField(nil, 1, append(protoField(nil, 1, []byte("b")), meta...)),
		"uid twice":          protoField(nil, 1, append(protoField(protoField(nil, 5, []byte("u")), 5, []byte("v")), meta...)),
		"uid a varint":       protoField(nil, 1, append(binary.AppendUvarint(nil, 5<<3|0 /* varint */), append([]byte{7}, meta...)...)),
		"cut":                raw[:len(raw)-1],
		"cut metadata":       protoField(nil, 1, meta[:len(meta)-1]),
		"group wire type":    append(append([]byte{}, raw...), 3<<3|3),
		"field zero":         append([]byte{0}, raw...),
		"empty":              {},
	} {
		require.Nil(t, metaOf(pbwire.ScanMeta(b, 1)), name)
	}
	require.Nil(t, metaOf(pbwire.ScanMeta(raw, 0)), "no metadata field number")
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = pbwire.ScanMeta(raw, metaField) }))
}

// A protobuf watch frame is read down to its object's metadata inside the raw envelope; an
// encoded object, a repeated field or a missing magic number is not vouched for.
func TestProtobufAddedMeta(t *testing.T) {
	obj := encodeProtobufMessage(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5"}})
	envelope := func(u *runtime.Unknown) []byte {
		return append(append([]byte{}, pbwire.Magic...), encodeProtobufMessage(t, u)...)
	}
	frame := func(typ string, raw []byte) []byte {
		return encodeProtobufMessage(t, &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}})
	}
	good := envelope(&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Raw: obj})
	require.Equal(t, []string{"ns", "a", "5"}, metaOf(protobufAddedMeta(frame("ADDED", good))))
	for name, f := range map[string][]byte{
		"modified":    frame("MODIFIED", good),
		"encoded":     frame("ADDED", envelope(&runtime.Unknown{Raw: obj, ContentEncoding: "gzip"})),
		"no magic":    frame("ADDED", good[len(pbwire.Magic):]),
		"type twice":  append(frame("ADDED", good), protoField(nil, 1, []byte("ADDED"))...),
		"cut":         frame("ADDED", good)[:len(frame("ADDED", good))-2],
		"no object":   frame("ADDED", nil),
		"empty frame": {},
	} {
		require.Nil(t, metaOf(protobufAddedMeta(f)), name)
	}
}

// The one allocation of an unchanged item is its key; a held resourceVersion that differs, an
// empty one, or a key the store does not hold is no match.
func TestUnchanged(t *testing.T) {
	held := func(namespace, name string) (rv, uid string, ok bool) {
		if namespace == "ns" && name == "a" {
			return "5", "uid-a", true
		}
		return "", "", false
	}
	m := wire.Meta{Namespace: []byte("ns"), Name: []byte("a"), ResourceVersion: []byte("5"), UID: []byte("uid-a")}
	key, rv, ok := wire.Unchanged(held, m)
	require.True(t, ok)
	require.Equal(t, "ns/a", key)
	require.Equal(t, "5", rv)
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, _, _ = wire.Unchanged(held, m) }))
	for _, m := range []wire.Meta{
		{Namespace: []byte("ns"), Name: []byte("a"), ResourceVersion: []byte("6"), UID: []byte("uid-a")},
		{Namespace: []byte("ns"), Name: []byte("b"), ResourceVersion: []byte("5"), UID: []byte("uid-a")},
		{Namespace: []byte("ns"), Name: []byte("a"), UID: []byte("uid-a")},
		{Name: []byte("a"), ResourceVersion: []byte("5"), UID: []byte("uid-a")},
		// The same name at the same resourceVersion in another history: another object.
		{Namespace: []byte("ns"), Name: []byte("a"), ResourceVersion: []byte("5"), UID: []byte("uid-other")},
		{Namespace: []byte("ns"), Name: []byte("a"), ResourceVersion: []byte("5")},
	} {
		_, _, ok := wire.Unchanged(held, m)
		require.False(t, ok, "%q", metaOf(m, true))
	}
	raw := []byte(`{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5","labels":{"x":"y"}},"data":{"k":"v"}}`)
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = jsonwire.ScanMeta(raw) }))
}

// The CBOR scanner reads what apimachinery writes (byte-string keys and values, the
// self-described tag) and text strings alike, skips every other data item however nested or
// of indefinite length, and vouches for nothing unusual.
func TestScanCBORMeta(t *testing.T) {
	bs := func(s string) []byte { return append([]byte{0x40 | byte(len(s))}, s...) } // short byte string
	ts := func(s string) []byte { return append([]byte{0x60 | byte(len(s))}, s...) } // short text string
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	meta3 := cat([]byte{0xa3}, bs("name"), bs("a"), bs("namespace"), bs("ns"), bs("resourceVersion"), bs("5"))
	data := cat(bs("data"), []byte{0xa1}, bs("metadata"), []byte{0xa2}, bs("name"), bs("wrong"), bs("resourceVersion"), bs("1"))
	for name, c := range map[string]struct {
		raw  []byte
		want []string
	}{
		"byte strings":          {cat([]byte{0xa1}, bs("metadata"), meta3), []string{"ns", "a", "5"}},
		"text strings":          {cat([]byte{0xa1}, ts("metadata"), []byte{0xa2}, ts("name"), ts("a"), ts("resourceVersion"), ts("5")), []string{"", "a", "5"}},
		"self-described":        {cat(cborwire.Magic, []byte{0xa1}, bs("metadata"), meta3), []string{"ns", "a", "5"}},
		"nested metadata first": {cat([]byte{0xa2}, data, bs("metadata"), meta3), []string{"ns", "a", "5"}},
		"other items": {cat([]byte{0xa2}, bs("spec"), []byte{0x9f, 0x01, 0x3a, 0, 1, 0, 0, 0xf9, 0x3c, 0, 0xc1, 0x1a, 0, 0, 0, 1, 0x5f, 0x41, 'x', 0xff, 0xbf, 0x01, 0xf5, 0xff, 0xf6, 0xff},
			bs("metadata"), meta3), []string{"ns", "a", "5"}},

		"no metadata":          {cat([]byte{0xa1}, data), nil},
		"metadata twice":       {cat([]byte{0xa2}, bs("metadata"), meta3, bs("metadata"), meta3), nil},
		"name twice":           {cat([]byte{0xa1}, bs("metadata"), []byte{0xa3}, bs("name"), bs("a"), bs("name"), bs("b"), bs("resourceVersion"), bs("5")), nil},
		"name not a string":    {cat([]byte{0xa1}, bs("metadata"), []byte{0xa2}, bs("name"), []byte{0x05}, bs("resourceVersion"), bs("5")), nil},
		"no resourceVersion":   {cat([]byte{0xa1}, bs("metadata"), []byte{0xa1}, bs("name"), bs("a")), nil},
		"indefinite top map":   {cat([]byte{0xbf}, bs("metadata"), meta3, []byte{0xff}), nil},
		"metadata null":        {cat([]byte{0xa1}, bs("metadata"), []byte{0xf6}), nil},
		"cut":                  {cat([]byte{0xa1}, bs("metadata"), meta3)[:20], nil},
		"trailing data":        {cat([]byte{0xa1}, bs("metadata"), meta3, []byte{0x00}), nil},
		"bad chunk":            {cat([]byte{0xa2}, bs("x"), []byte{0x5f, 0x61, 'x', 0xff}, bs("metadata"), meta3), nil},
		"reserved information": {cat([]byte{0xa2}, bs("x"), []byte{0x1c}, bs("metadata"), meta3), nil},
		"huge length":          {cat([]byte{0xa2}, bs("x"), []byte{0x5b, 0x7f, 0, 0, 0, 0, 0, 0, 0}, bs("metadata"), meta3), nil},
		"not a map":            {[]byte{0x80}, nil},
		"empty":                {nil, nil},
	} {
		require.Equal(t, c.want, metaOf(cborwire.ScanMeta(c.raw)), name)
	}
	deep := append(bytes.Repeat([]byte{0x81}, 100), 0x00)
	require.Nil(t, metaOf(cborwire.ScanMeta(cat([]byte{0xa2}, bs("x"), deep, bs("metadata"), meta3))), "nesting past the bound")
}
