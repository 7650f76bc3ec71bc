package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/liggitt/tabwriter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
)

// rowPrinter prints the store's changes as kubectl get -w prints them, with kubectl's own
// printers (cli-runtime's, chosen by kubectl's print flags): a table output gets each batch
// as a meta.k8s.io Table of the server's rows — the initial list as one, then each watch
// event — and every other output each object, wrapped in its watch event with
// --output-watch-events. Everything goes through one tabwriter that remembers its column
// widths, flushed after each batch, as kubectl's watch does. It writes through the command's
// printer, so that rows and trace lines never interleave within a line and the status line is
// redrawn below them.
type rowPrinter struct {
	p      *printer
	print  printers.ResourcePrinter
	table  bool // a table output: the store holds serverRows
	events bool // --output-watch-events

	// skipFirstState: --watch-only, until the first full state is complete.
	skipFirstState bool
	now            func() time.Time

	buf bytes.Buffer
	tw  *tabwriter.Writer
	// batch is what the current batch — a full state, a watch event — brought, in order.
	batch []pendingRow
	// err is the first error a printer returned (a template that does not apply, say): the
	// command ends with it, as kubectl's watch does.
	err error
	// fail is told the first error.
	fail func(error)
}

type pendingRow struct {
	event string
	obj   any
}

func newRowPrinter(p *printer, print printers.ResourcePrinter, table, events bool) *rowPrinter {
	rp := &rowPrinter{p: p, print: print, table: table, events: events, now: time.Now}
	rp.tw = printers.GetNewTabWriter(&rp.buf)
	return rp
}

// row is the store's: called on the reflector's goroutine after the store took the change.
func (rp *rowPrinter) row(event string, obj any) {
	rp.batch = append(rp.batch, pendingRow{event, obj})
}

// flush prints the batch that ended; fullState says it was a full state's (a list, a relist,
// a restore), not a watch event's.
func (rp *rowPrinter) flush(fullState, complete bool) {
	batch := rp.batch
	rp.batch = rp.batch[:0]
	if rp.skipFirstState {
		if fullState && complete {
			rp.skipFirstState = false
		}
		return
	}
	if len(batch) == 0 || rp.err != nil {
		return
	}
	var err error
	if rp.table {
		err = rp.printTables(batch)
	} else {
		for _, r := range batch {
			if err = rp.printObject(r.event, plainObject(r.obj)); err != nil {
				break
			}
		}
	}
	if ferr := rp.tw.Flush(); err == nil {
		err = ferr
	}
	if rp.buf.Len() > 0 {
		rp.p.out(rp.buf.String())
		rp.buf.Reset()
	}
	if err != nil {
		rp.err = fmt.Errorf("unable to output the provided object: %w", err)
		if rp.fail != nil {
			rp.fail(rp.err)
		}
	}
}

// printObject prints one object, in its watch event with --output-watch-events.
func (rp *rowPrinter) printObject(event string, obj runtime.Object) error {
	if rp.events {
		obj = &metav1.WatchEvent{Type: event, Object: runtime.RawExtension{Object: obj}}
	}
	return rp.print.PrintObj(obj, rp.tw)
}

// printTables prints a batch of server rows as kubectl prints the Tables it is sent: a run of
// rows of one event type and one set of columns is one Table. Rows without cells (a server
// that printed no table) are printed as plain objects, as kubectl falls back to.
func (rp *rowPrinter) printTables(batch []pendingRow) error {
	for len(batch) > 0 {
		first, _ := batch[0].obj.(*serverRow)
		if first == nil || first.cells == nil || first.columns == nil {
			if err := rp.printObject(batch[0].event, plainObject(batch[0].obj)); err != nil {
				return err
			}
			batch = batch[1:]
			continue
		}
		t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: first.columns.defs}
		n := 0
		for ; n < len(batch); n++ {
			sr, _ := batch[n].obj.(*serverRow)
			if sr == nil || sr.cells == nil || sr.columns != first.columns || batch[n].event != batch[0].event {
				break
			}
			t.Rows = append(t.Rows, metav1.TableRow{Cells: rp.cells(sr), Object: runtime.RawExtension{Object: sr.Unstructured}})
		}
		if err := rp.printObject(batch[0].event, t); err != nil {
			return err
		}
		batch = batch[n:]
	}
	return nil
}

// cells are the row's cells as the server printed them; a row restored from a snapshot has
// its Age cell computed now, as the server would, since the snapshot's is from an earlier
// run (a printer may change the cells it is given: they are a copy).
func (rp *rowPrinter) cells(sr *serverRow) []any {
	cells := append([]any(nil), sr.cells...)
	if !sr.restored {
		return cells
	}
	for i, c := range sr.columns.defs {
		if i < len(cells) && c.Name == "Age" && c.Type == "string" {
			if ts := sr.GetCreationTimestamp(); !ts.IsZero() {
				cells[i] = duration.HumanDuration(rp.now().Sub(ts.Time))
			}
		}
	}
	return cells
}

// plainObject is the object the store holds, as kubectl's printers take it.
func plainObject(obj any) runtime.Object {
	switch o := obj.(type) {
	case *serverRow:
		return o.Unstructured
	case runtime.Object:
		return o
	}
	return &unstructured.Unstructured{}
}
