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
// kind/name line, or one JSON or YAML document each; with events, each table row and document
// says its watch event type (kubectl's --output-watch-events; its name output ignores it). It
// writes through the printer, so that rows and trace lines never interleave within a line and
// the status line is redrawn below them. A table's rows wait for the end of their batch (a full
// state, a watch event), which is aligned as one.
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
	// as a terminal shows them one batch at a time (kubectl's tabwriter remembers widths too).
	widths []int
	// batch is the table rows of the batch being told, header first when it is due.
	batch [][]string
	docs  int
}

// Table layout of kubectl's printers: columns at least 6 wide, 3 spaces apart.
const (
	tableMinWidth = 6
	tablePadding  = 3
)

// row is the store's: called on the reflector's goroutine after the store took the change.
func (rp *rowPrinter) row(event string, obj any) {
	if rp.kind == "" {
		rp.kind = kindOf(obj)
	}
	switch rp.format {
	case "name":
		rp.p.out(rp.name(obj))
	case "json", "yaml":
		rp.p.out(rp.document(event, obj))
	default:
		rp.tableRow(event, obj)
	}
}

// flush prints the table rows of the batch that ended, aligned with each other and with the
// rows before them.
func (rp *rowPrinter) flush() {
	if len(rp.batch) == 0 {
		return
	}
	for _, cells := range rp.batch {
		for i, c := range cells[:len(cells)-1] {
			if i == len(rp.widths) {
				rp.widths = append(rp.widths, tableMinWidth)
			}
			rp.widths[i] = max(rp.widths[i], len(c)+tablePadding)
		}
	}
	var b strings.Builder
	for _, cells := range rp.batch {
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", rp.widths[i]-len(c)))
			}
		}
		b.WriteByte('\n')
	}
	rp.batch = rp.batch[:0]
	rp.p.out(b.String())
}

// name is kubectl's name output, which has no event type even with --output-watch-events.
func (rp *rowPrinter) name(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	return lowerKind(rp.kind, rp.gvr.Group) + "/" + m.GetName() + "\n"
}

// document is one JSON or YAML document: the object, or with events the watch event
// {"type", "object"} kubectl prints (JSON on one line, managedFields kept, as kubectl's). YAML
// documents are separated by "---", as kubectl's.
func (rp *rowPrinter) document(event string, obj any) string {
	gv := schema.GroupVersion{Group: rp.gvr.Group, Version: rp.gvr.Version}
	o, err := objectJSON(obj, gv.String(), rp.kind, rp.events)
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
	switch {
	case rp.format == "json" && rp.events:
		b, err = json.Marshal(v)
		b = append(b, '\n')
	case rp.format == "json":
		b, err = json.MarshalIndent(v, "", "    ")
		b = append(b, '\n')
	default:
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

// tableRow adds obj's row to the batch, with the header before the first row.
func (rp *rowPrinter) tableRow(event string, obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		rp.p.out(fmt.Sprintf("error: %v\n", err))
		return
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
	if !rp.header {
		rp.header = true
		rp.batch = append(rp.batch, rp.headers())
		if rp.events {
			// kubectl's EVENT column is as wide as its widest value from the start.
			rp.widths = append(rp.widths, len(rowModified)+tablePadding)
		}
	}
	rp.batch = append(rp.batch, cells)
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
