package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rewatch/rewatch/transport/httpapi"
)

// Server-side printing (docs/cli.md, "Objects"): the table outputs ask the server for its own
// columns of each object, as kubectl get does, with the media types kubectl asks for — a
// meta.k8s.io Table, v1 then v1beta1, then the plain object from a server that prints none —
// on the LIST and on the WATCH. Unlike kubectl, which needs only the rows' metadata, every
// row carries its whole object (includeObject=Object): the reflector's store holds the
// objects as it would without the table, so a relist compares them and --cache-dir keeps
// them.
var tableMediaTypes = []string{
	"application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io",
	httpapi.MediaJSON,
}

// serverRow is one object as the store holds it for a table output: the object, and the
// cells the server printed for it with the columns they belong to. A server that printed
// no table gives rows without cells, which are printed as kubectl prints plain objects.
type serverRow struct {
	*unstructured.Unstructured
	cells   []any
	columns *tableColumns
	// restored: the row comes from a --cache-dir snapshot, its cells from an earlier run.
	restored bool
}

// tableColumns are the column definitions in force, shared by every row decoded under them
// (a watch carries them on its first event only).
type tableColumns struct {
	defs []metav1.TableColumnDefinition
}

// tableDecoder reads the server's Tables (and plain objects, from a server that printed
// none) into serverRows. It keeps the columns of the last Table that named them.
type tableDecoder struct {
	mu      sync.Mutex
	columns *tableColumns
}

var (
	_ httpapi.ListStreamDecoder = (*tableDecoder)(nil)
	_ httpapi.QueryDecoder      = (*tableDecoder)(nil)
	_ httpapi.ObjectEncoder     = (*tableDecoder)(nil)
)

func newTableDecoder() *tableDecoder { return &tableDecoder{} }

func (*tableDecoder) MediaTypes() []string { return tableMediaTypes }

func (*tableDecoder) Query() url.Values {
	return url.Values{"includeObject": {string(metav1.IncludeObject)}}
}

// current is the columns in force, replaced when defs differ from them.
func (d *tableDecoder) current(defs []metav1.TableColumnDefinition) *tableColumns {
	d.mu.Lock()
	defer d.mu.Unlock()
	if defs != nil && (d.columns == nil || !equalColumns(d.columns.defs, defs)) {
		d.columns = &tableColumns{defs: defs}
	}
	return d.columns
}

func equalColumns(a, b []metav1.TableColumnDefinition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wireRow is a row of a Table as the server writes it.
type wireRow struct {
	Cells  json.RawMessage `json:"cells"`
	Object json.RawMessage `json:"object"`
}

// row decodes one row: its object must be there (includeObject=Object); the cells are read
// as kubectl reads them, numbers as int64 where they are integers.
func (d *tableDecoder) row(r wireRow, cols *tableColumns) (*serverRow, error) {
	if len(r.Object) == 0 || bytes.Equal(r.Object, []byte("null")) {
		return nil, errors.New("table row without its object (the server ignored includeObject=Object)")
	}
	u, err := decodeObject(r.Object, "", "")
	if err != nil {
		return nil, fmt.Errorf("table row object: %w", err)
	}
	var cells []any
	if err := utiljson.Unmarshal(r.Cells, &cells); err != nil {
		return nil, fmt.Errorf("table row cells: %w", err)
	}
	return &serverRow{Unstructured: u, cells: cells, columns: cols}, nil
}

// isTable reports whether a JSON object's kind and apiVersion say it is a meta.k8s.io Table.
func isTable(kind, apiVersion string) bool {
	return kind == "Table" && (apiVersion == "meta.k8s.io/v1" || apiVersion == "meta.k8s.io/v1beta1")
}

// DecodeListStream reads a LIST body: a Table, whose rows are the items, or, from a server
// that printed none, a plain list. Each item is handed on as it is decoded.
func (d *tableDecoder) DecodeListStream(mediaType string, body io.Reader, item func(any) error) (string, string, error) {
	if mediaType != httpapi.MediaJSON {
		return "", "", fmt.Errorf("the server answered %s, which the table decoder does not read", mediaType)
	}
	dec := json.NewDecoder(body)
	if err := expectDelim(dec, '{'); err != nil {
		return "", "", err
	}
	var (
		kind, apiVersion string
		listMeta         metav1.ListMeta
		cols             = &tableColumns{}
		// held are rows or items read before kind said which they are (kube-apiserver writes
		// kind first; another server might not).
		held []json.RawMessage
		rows bool
	)
	emit := func(raw json.RawMessage, asRow bool) error {
		if asRow {
			var r wireRow
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			sr, err := d.row(r, cols)
			if err != nil {
				return err
			}
			return item(sr)
		}
		u, err := decodeObject(raw, apiVersion, strings.TrimSuffix(kind, "List"))
		if err != nil {
			return err
		}
		return item(&serverRow{Unstructured: u})
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", "", err
		}
		key, _ := tok.(string)
		switch key {
		case "kind":
			err = dec.Decode(&kind)
		case "apiVersion":
			err = dec.Decode(&apiVersion)
		case "metadata":
			err = dec.Decode(&listMeta)
		case "columnDefinitions":
			var defs []metav1.TableColumnDefinition
			if err = dec.Decode(&defs); err == nil {
				*cols = *d.current(defs)
			}
		case "rows", "items":
			rows = key == "rows"
			if err := expectDelim(dec, '['); err != nil {
				return "", "", err
			}
			for dec.More() {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return "", "", err
				}
				if kind == "" {
					held = append(held, raw)
					continue
				}
				if err := emit(raw, rows); err != nil {
					return "", "", err
				}
			}
			if _, err := dec.Token(); err != nil {
				return "", "", err
			}
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", key, err)
		}
	}
	if rows && !isTable(kind, apiVersion) {
		return "", "", fmt.Errorf("a list with rows is a %s %s, not a meta.k8s.io Table", apiVersion, kind)
	}
	for _, raw := range held {
		if err := emit(raw, rows); err != nil {
			return "", "", err
		}
	}
	return listMeta.ResourceVersion, listMeta.Continue, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

func (d *tableDecoder) DecodeList(mediaType string, body []byte) ([]any, string, string, error) {
	var items []any
	rv, cont, err := d.DecodeListStream(mediaType, bytes.NewReader(body), func(obj any) error {
		items = append(items, obj)
		return nil
	})
	return items, rv, cont, err
}

// DecodeObject reads a watch event's object: a Table of one row (the first event of a watch
// names the columns, the others reuse them), or a plain object from a server that printed
// none; or a row of a --cache-dir snapshot.
func (d *tableDecoder) DecodeObject(mediaType string, raw []byte) (any, error) {
	if mediaType == snapshotMediaType {
		return d.decodeSnapshotRow(raw)
	}
	if mediaType != httpapi.MediaJSON {
		return nil, fmt.Errorf("the server answered %s, which the table decoder does not read", mediaType)
	}
	var head struct {
		Kind       string                         `json:"kind"`
		APIVersion string                         `json:"apiVersion"`
		Columns    []metav1.TableColumnDefinition `json:"columnDefinitions"`
		Rows       []wireRow                      `json:"rows"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if !isTable(head.Kind, head.APIVersion) {
		u, err := decodeObject(raw, "", "")
		if err != nil {
			return nil, err
		}
		return &serverRow{Unstructured: u}, nil
	}
	if len(head.Rows) != 1 {
		return nil, fmt.Errorf("a watch event's Table has %d rows, not 1", len(head.Rows))
	}
	return d.row(head.Rows[0], d.current(head.Columns))
}

// decodeObject decodes a JSON object as apimachinery's unstructured decoding does (integers
// as int64), taking apiVersion and kind, when it names none, from its list: the items of a
// list of a built-in type do not repeat them.
func decodeObject(raw []byte, apiVersion, kind string) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null object")
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" && apiVersion != "" {
		u.SetAPIVersion(apiVersion)
	}
	if u.GetKind() == "" && kind != "" {
		u.SetKind(kind)
	}
	return u, nil
}

// snapshotRow is a serverRow as a --cache-dir snapshot keeps it.
type snapshotRow struct {
	Object  json.RawMessage                `json:"object"`
	Cells   json.RawMessage                `json:"cells,omitempty"`
	Columns []metav1.TableColumnDefinition `json:"columns,omitempty"`
}

// snapshotMediaType is what EncodeObject writes: JSON of a snapshotRow.
const snapshotMediaType = "application/vnd.rewatch.table-row+json"

func (*tableDecoder) SnapshotMediaType() string { return snapshotMediaType }

// EncodeObject writes a row with its columns, so that a restored row prints as it did.
func (*tableDecoder) EncodeObject(obj any) ([]byte, error) {
	sr, ok := obj.(*serverRow)
	if !ok {
		return nil, fmt.Errorf("a %T is not a table row", obj)
	}
	o, err := sr.MarshalJSON()
	if err != nil {
		return nil, err
	}
	s := snapshotRow{Object: o}
	if sr.cells != nil {
		if s.Cells, err = json.Marshal(sr.cells); err != nil {
			return nil, err
		}
		if sr.columns != nil {
			s.Columns = sr.columns.defs
		}
	}
	return json.Marshal(s)
}

// decodeSnapshotRow is DecodeObject for the snapshot's media type.
func (d *tableDecoder) decodeSnapshotRow(raw []byte) (any, error) {
	var s snapshotRow
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	u, err := decodeObject(s.Object, "", "")
	if err != nil {
		return nil, err
	}
	sr := &serverRow{Unstructured: u, restored: true}
	if len(s.Cells) > 0 {
		if err := utiljson.Unmarshal(s.Cells, &sr.cells); err != nil {
			return nil, err
		}
		sr.columns = d.current(s.Columns)
	}
	return sr, nil
}
