package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableServer is the simulated server with kube-apiserver's server-side printing of
// ConfigMaps in front of it: a request whose Accept asks for a meta.k8s.io Table gets the
// LIST as one Table and each watch event as a Table of one row (the columns on the first
// only), each row carrying its object when includeObject=Object asks for it, as
// kube-apiserver answers kubectl. Everything else passes through unchanged.
type tableServer struct {
	next http.Handler
	now  func() time.Time
}

var configMapColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
	{Name: "Data", Type: "integer", Description: "Data contains the configuration data."},
	{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
}

func (s tableServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
		s.next.ServeHTTP(w, r)
		return
	}
	includeObject := r.URL.Query().Get("includeObject") == "Object"
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/json")
	q := r.URL.Query()
	q.Del("includeObject")
	r.URL.RawQuery = q.Encode()
	if w2 := r.URL.Query().Get("watch"); w2 == "true" || w2 == "1" {
		s.watch(w, r, includeObject)
		return
	}
	rec := httptest.NewRecorder()
	s.next.ServeHTTP(rec, r)
	var list struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &list) != nil || list.Kind == "Status" {
		copyResponse(w, rec)
		return
	}
	t := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ListMeta: list.Metadata,
		ColumnDefinitions: configMapColumns, Rows: []metav1.TableRow{}}
	for _, item := range list.Items {
		t.Rows = append(t.Rows, s.row(item, includeObject))
	}
	w.Header().Set("Content-Type", "application/json;as=Table;v=v1;g=meta.k8s.io")
	_ = json.NewEncoder(w).Encode(t)
}

// watch converts the watch stream event by event.
func (s tableServer) watch(w http.ResponseWriter, r *http.Request, includeObject bool) {
	pr, pw := io.Pipe()
	inner := &pipeWriter{header: http.Header{}, w: pw, status: make(chan int, 1)}
	go func() {
		s.next.ServeHTTP(inner, r)
		inner.writeHeader(http.StatusOK)
		pw.Close()
	}()
	defer pr.Close()
	status := <-inner.status
	if status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.Copy(w, pr)
		return
	}
	w.Header().Set("Content-Type", "application/json;as=Table;v=v1;g=meta.k8s.io")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	dec := json.NewDecoder(bufio.NewReader(pr))
	first := true
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if dec.Decode(&ev) != nil {
			return
		}
		out := any(ev)
		if ev.Type != "ERROR" {
			t := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
				Rows: []metav1.TableRow{s.row(ev.Object, includeObject)}}
			if first {
				t.ColumnDefinitions, first = configMapColumns, false
			}
			out = map[string]any{"type": ev.Type, "object": t}
		}
		if json.NewEncoder(w).Encode(out) != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

// row is a ConfigMap's row as kube-apiserver prints it: NAME, DATA, AGE.
func (s tableServer) row(raw json.RawMessage, includeObject bool) metav1.TableRow {
	var cm struct {
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Data       map[string]any    `json:"data"`
		BinaryData map[string]any    `json:"binaryData"`
	}
	_ = json.Unmarshal(raw, &cm)
	age := "<unknown>"
	if !cm.Metadata.CreationTimestamp.IsZero() {
		age = duration.HumanDuration(s.now().Sub(cm.Metadata.CreationTimestamp.Time))
	}
	row := metav1.TableRow{Cells: []any{cm.Metadata.Name, int64(len(cm.Data) + len(cm.BinaryData)), age}}
	if includeObject {
		// kube-apiserver's row objects name their kind, as list items do not.
		var obj map[string]any
		_ = json.Unmarshal(raw, &obj)
		obj["kind"], obj["apiVersion"] = "ConfigMap", "v1"
		row.Object.Raw, _ = json.Marshal(obj)
	} else {
		b, _ := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": cm.Metadata})
		row.Object.Raw = b
	}
	return row
}

func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// pipeWriter is a streaming ResponseWriter whose body goes into a pipe.
type pipeWriter struct {
	header http.Header
	w      *io.PipeWriter
	status chan int
	sent   bool
}

func (p *pipeWriter) Header() http.Header { return p.header }

func (p *pipeWriter) writeHeader(code int) {
	if !p.sent {
		p.sent = true
		p.status <- code
	}
}

func (p *pipeWriter) WriteHeader(code int) { p.writeHeader(code) }

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.writeHeader(http.StatusOK)
	return p.w.Write(bytes.Clone(b))
}

func (p *pipeWriter) Flush() {}
