package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Object output formats of `rewatch watch -o`, as kubectl get names them; "" is the table.
var objectOutputs = []string{"", "wide", "name", "yaml", "json"}

// rowPrinter prints objects as kubectl get -w does: a table row each (a header first), a
// kind/name line, or one JSON or YAML document each; with events, each says its watch event
// type (kubectl's --output-watch-events). It writes through the printer, so that rows and
// trace lines never interleave within a line and the status line is redrawn below them.
type rowPrinter struct {
	p             *printer
	format        string
	events        bool
	allNamespaces bool
	gvr           schema.GroupVersionResource
	// kind is the resource's kind, from discovery; "" until an object says it (--resource).
	kind string
	now  func() time.Time

	header bool
	// widths are the table's column widths so far: they only grow, so that rows stay aligned
	// as a terminal shows them one at a time (kubectl's tabwriter remembers widths too).
	widths []int
	docs   int
}

// Table layout of kubectl's printers: columns at least 6 wide, 3 spaces apart.
const (
	tableMinWidth = 6
	tablePadding  = 3
)

// print is the store's emit: called on the reflector's goroutine after the store took it.
func (rp *rowPrinter) print(event string, obj any) {
	if rp.kind == "" {
		rp.kind = kindOf(obj)
	}
	var s string
	switch rp.format {
	case "name":
		s = rp.name(event, obj)
	case "json", "yaml":
		s = rp.document(event, obj)
	default:
		s = rp.row(event, obj)
	}
	rp.p.out(s)
}

func (rp *rowPrinter) name(event string, obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	s := lowerKind(rp.kind, rp.gvr.Group) + "/" + m.GetName() + "\n"
	if rp.events {
		s = event + "   " + s
	}
	return s
}

// document is one JSON or YAML document: the object, or with events the watch event
// {"type", "object"} kubectl prints. YAML documents are separated by "---", as kubectl's.
func (rp *rowPrinter) document(event string, obj any) string {
	gv := schema.GroupVersion{Group: rp.gvr.Group, Version: rp.gvr.Version}
	o, err := objectJSON(obj, gv.String(), rp.kind)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	var v any = o
	if rp.events {
		v = struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}{event, o}
	}
	var b []byte
	if rp.format == "json" {
		b, err = json.MarshalIndent(v, "", "    ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(v)
	}
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	rp.docs++
	if rp.format == "yaml" && rp.docs > 1 {
		return "---\n" + string(b)
	}
	return string(b)
}

// row is one table row, with the header before the first.
func (rp *rowPrinter) row(event string, obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	var cells []string
	if rp.events {
		cells = append(cells, event)
	}
	if rp.allNamespaces {
		cells = append(cells, m.GetNamespace())
	}
	cells = append(cells, m.GetName())
	cells = append(cells, rp.extraCells(obj)...)
	age := "<unknown>"
	if ts := m.GetCreationTimestamp(); !ts.IsZero() {
		age = duration.HumanDuration(rp.now().Sub(ts.Time))
	}
	cells = append(cells, age)
	var b strings.Builder
	if !rp.header {
		rp.header = true
		rp.line(&b, rp.headers())
	}
	rp.line(&b, cells)
	return b.String()
}

func (rp *rowPrinter) headers() []string {
	var h []string
	if rp.events {
		h = append(h, "EVENT")
	}
	if rp.allNamespaces {
		h = append(h, "NAMESPACE")
	}
	h = append(h, "NAME")
	h = append(h, rp.extraHeaders()...)
	return append(h, "AGE")
}

// line writes cells padded to the widths so far; the last cell is not padded.
func (rp *rowPrinter) line(b *strings.Builder, cells []string) {
	for i, c := range cells {
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		if i == len(rp.widths) {
			rp.widths = append(rp.widths, tableMinWidth)
		}
		rp.widths[i] = max(rp.widths[i], len(c)+tablePadding)
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", rp.widths[i]-len(c)))
	}
	b.WriteByte('\n')
}

// extraHeaders are kubectl's columns between NAME and AGE for the resources where they cost
// nothing to compute from the object: ConfigMaps' DATA, Secrets' TYPE and DATA. Every other
// resource gets NAME and AGE.
func (rp *rowPrinter) extraHeaders() []string {
	if rp.gvr.Group != "" {
		return nil
	}
	switch rp.gvr.Resource {
	case "configmaps":
		return []string{"DATA"}
	case "secrets":
		return []string{"TYPE", "DATA"}
	}
	return nil
}

func (rp *rowPrinter) extraCells(obj any) []string {
	if rp.gvr.Group != "" {
		return nil
	}
	switch rp.gvr.Resource {
	case "configmaps":
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			return []string{strconv.Itoa(len(o.Data) + len(o.BinaryData))}
		case *unstructured.Unstructured:
			return []string{strconv.Itoa(mapLen(o.Object, "data") + mapLen(o.Object, "binaryData"))}
		}
		return []string{"?"}
	case "secrets":
		switch o := obj.(type) {
		case *corev1.Secret:
			return []string{string(o.Type), strconv.Itoa(len(o.Data))}
		case *unstructured.Unstructured:
			t, _, _ := unstructured.NestedString(o.Object, "type")
			return []string{t, strconv.Itoa(mapLen(o.Object, "data"))}
		}
		return []string{"?", "?"}
	}
	return nil
}

func mapLen(obj map[string]any, field string) int {
	m, _ := obj[field].(map[string]any)
	return len(m)
}

// kindOf is the kind an object says it is: its own TypeMeta (unstructured objects keep it),
// else the Go type's kind in client-go's scheme (typed objects are decoded without it).
func kindOf(obj any) string {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return ""
	}
	if k := ro.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if gvks, _, err := scheme.Scheme.ObjectKinds(ro); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	return ""
}
