package transport

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// InitialEventsEnd is the annotation on the bookmark that ends a watch-list's initial state.
const InitialEventsEnd = "k8s.io/initial-events-end"

// SetObject fills e (an EvWatchEvent whose Type is set) from obj: its resourceVersion, and
// for a bookmark whether it ends the initial state; for any other event the object and its
// namespace/name key. An object without metadata is an error: the stream carrying it cannot be
// trusted. An object without a name is passed on, keyed "namespace/" (or ""), as client-go's
// reflector passes it to its store, whose key function decides (docs/semantics.md, "Stores").
func SetObject(e *fsm.Event, obj any) error {
	if obj == nil {
		return fmt.Errorf("%s event without an object", e.Type)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("%s object without metadata: %w", e.Type, err)
	}
	e.ResourceVersion = m.GetResourceVersion()
	if e.Type == fsm.Bookmark {
		e.InitialEventsEnd = m.GetAnnotations()[InitialEventsEnd] == "true"
		return nil
	}
	e.Object = obj
	e.Key = objectKey(m)
	return nil
}

// ItemKey is the namespace/name key and resourceVersion of one item of a full state (a LIST
// item). An item without metadata is an error, as for a watch event; one without a name is not.
func ItemKey(obj any) (key, resourceVersion string, err error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", fmt.Errorf("list item without metadata: %w", err)
	}
	return objectKey(m), m.GetResourceVersion(), nil
}

// objectKey is the namespace/name key of an object: "name" for a cluster-scoped one.
func objectKey(m metav1.Object) string {
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName()
	}
	return m.GetName()
}
