package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A snapshot holds objects as this build's Go types decoded them: an upgrade whose type gained
// a field (a k8s.io/api or CRD types bump) would load the old objects without it and serve them
// as synced until each changes — on a quiet resource, never. So a snapshot names the shape of
// the type it holds, and one of another shape is refused (docs/semantics.md, "Persisted
// cache", "Identity").

// typeShape is a fingerprint of t's shape: its name, and for a struct each field's name, json
// and protobuf tags and the shape of its type, recursively; two builds whose types would decode
// the same bytes into different objects have different shapes. A type met again deeper down
// (a recursive type) is named, not walked again.
func typeShape(t reflect.Type) string {
	var b strings.Builder
	writeShape(&b, t, map[reflect.Type]bool{})
	sum := sha256.Sum256([]byte(b.String()))
	return t.String() + "@" + hex.EncodeToString(sum[:8])
}

func writeShape(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		b.WriteString(t.Kind().String())
		if t.Kind() == reflect.Array {
			b.WriteString(strconv.Itoa(t.Len()))
		}
		b.WriteByte('(')
		writeShape(b, t.Elem(), seen)
		b.WriteByte(')')
	case reflect.Map:
		b.WriteString("map(")
		writeShape(b, t.Key(), seen)
		b.WriteByte(',')
		writeShape(b, t.Elem(), seen)
		b.WriteByte(')')
	case reflect.Struct:
		b.WriteString(t.PkgPath() + "." + t.Name())
		if seen[t] {
			return
		}
		seen[t] = true
		b.WriteByte('{')
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			b.WriteString(f.Name)
			b.WriteByte(' ')
			b.WriteString(strconv.Quote(f.Tag.Get("json")))
			b.WriteString(strconv.Quote(f.Tag.Get("protobuf")))
			b.WriteByte(' ')
			writeShape(b, f.Type, seen)
			b.WriteByte(';')
		}
		b.WriteByte('}')
	default:
		// A named basic type (a string enum, resource.Quantity's fields) is its name and kind.
		b.WriteString(t.PkgPath() + "." + t.Name() + ":" + t.Kind().String())
	}
}

// typedShape is the shape of what a typed decoder makes of the transport's resource: the
// scheme's type whose kind names the resource (configmaps → ConfigMap), as kubectl's
// resource guessing reads it; without one, every type the scheme has in the group and version,
// so that a change to any of them refuses the snapshot.
func typedShape(scheme *runtime.Scheme, r Resource) string {
	gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
	var all []string
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.GroupVersion() != gv {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == r.Resource {
			return typeShape(t)
		}
		all = append(all, typeShape(t))
	}
	slices.Sort(all)
	sum := sha256.Sum256([]byte(strings.Join(all, "\n")))
	return gv.String() + "@" + hex.EncodeToString(sum[:8])
}

// metadataShape is the shape of a metadata-only object.
var metadataShape = typeShape(reflect.TypeFor[metav1.PartialObjectMetadata]())
