package sim

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// object is one stored version. It is never mutated after it is stored, so
// history, lists and watch streams can share it without copying.
type object struct {
	namespace, name, uid string
	rv                   uint64
	created              time.Time
	labels               map[string]string
	data                 map[string]string
}

func (o *object) key() string { return o.namespace + "/" + o.name }

// withRV returns a copy carrying another resourceVersion: a DELETED event
// carries the deletion's RV, not the object's last one (cacher
// setCachingObjects / cache_watcher convertToWatchEvent).
func (o *object) withRV(rv uint64) *object {
	c := *o
	c.rv = rv
	return &c
}

func (o *object) labelSet() labels.Set { return labels.Set(o.labels) }

func (o *object) fieldSet() fields.Set {
	return fields.Set{"metadata.name": o.name, "metadata.namespace": o.namespace}
}

// kindInfo names a resource the way its REST storage does.
type kindInfo struct {
	gvr        schema.GroupVersionResource
	kind       string
	apiVersion string
	// custom resources are served as unstructured objects: list items carry
	// kind/apiVersion, and empty bookmark objects carry no creationTimestamp.
	custom bool
}

func newKindInfo(gvr schema.GroupVersionResource) kindInfo {
	return kindInfo{
		gvr:        gvr,
		kind:       kindOf(gvr.Resource),
		apiVersion: gvr.GroupVersion().String(),
		custom:     gvr.Group != "",
	}
}

// knownKinds holds kinds that naive singularization gets wrong.
var knownKinds = map[string]string{"configmaps": "ConfigMap"}

func kindOf(resource string) string {
	if k, ok := knownKinds[resource]; ok {
		return k
	}
	singular := resource
	switch {
	case strings.HasSuffix(resource, "ies"):
		singular = strings.TrimSuffix(resource, "ies") + "y"
	case strings.HasSuffix(resource, "s"):
		singular = strings.TrimSuffix(resource, "s")
	}
	if singular == "" {
		return resource
	}
	return strings.ToUpper(singular[:1]) + singular[1:]
}

// wireObject is the JSON shape of a ConfigMap (and of the CRD-like objects,
// which keep their payload under "data" too).
type wireObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Data              map[string]string `json:"data,omitempty"`
}

func (k kindInfo) wire(o *object, withType bool) wireObject {
	w := wireObject{
		ObjectMeta: metav1.ObjectMeta{
			Name:              o.name,
			Namespace:         o.namespace,
			UID:               typesUID(o.uid),
			ResourceVersion:   strconv.FormatUint(o.rv, 10),
			CreationTimestamp: metav1.NewTime(o.created),
			Labels:            o.labels,
		},
		Data: o.data,
	}
	if withType {
		w.TypeMeta = metav1.TypeMeta{Kind: k.kind, APIVersion: k.apiVersion}
	}
	return w
}

// bookmarkObject mirrors the cacher's bookmark: an empty object of the
// resource's type with only metadata.resourceVersion (and the
// initial-events-end annotation) set. A typed empty ConfigMap serializes
// creationTimestamp as null; an empty unstructured object has none.
func (k kindInfo) bookmarkObject(rv uint64, initialEnd bool) any {
	var ann map[string]string
	if initialEnd {
		ann = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	rvs := strconv.FormatUint(rv, 10)
	tm := metav1.TypeMeta{Kind: k.kind, APIVersion: k.apiVersion}
	if k.custom {
		return customBookmark{tm, bookmarkMeta{rvs, ann}}
	}
	return wireObject{TypeMeta: tm, ObjectMeta: metav1.ObjectMeta{ResourceVersion: rvs, Annotations: ann}}
}

// customBookmark is the bookmark of a custom resource: metadata with a resourceVersion and
// annotations only.
type customBookmark struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        bookmarkMeta `json:"metadata"`
}

type bookmarkMeta struct {
	ResourceVersion string            `json:"resourceVersion"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

type wireList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []wireObject `json:"items"`
}

type wireEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}
