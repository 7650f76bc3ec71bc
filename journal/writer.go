package journal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
)

// Writer appends records to a journal. It is safe for concurrent use. It flushes after every
// record that is not a plain watch event, so that a crash loses at most a burst of events and
// never the failure that preceded it.
type Writer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	enc  *json.Encoder
	seq  uint64
	full bool
	err  error
}

// NewWriter writes h as the first line of w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format = Format
	bw := bufio.NewWriterSize(w, 64<<10)
	jw := &Writer{w: bw, enc: json.NewEncoder(bw), full: h.FullCapture}
	if err := jw.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("journal: write header: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("journal: write header: %w", err)
	}
	return jw, nil
}

// Observe records one transition, so that a Writer is one of the driver's observers; its error
// stops the reflector (a run whose journal has a hole cannot be replayed).
func (w *Writer) Observe(t driver.Transition) error {
	return w.Write(t.Event, t.From, t.To, t.Cause, t.Commands)
}

// Write records e and the transition it caused. The first error sticks and is returned by
// every later call and by Close.
func (w *Writer) Write(e fsm.Event, from, to fsm.State, cause fsm.Cause, cmds []fsm.Command) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.seq++
	r := Record{Seq: w.seq, Event: e, From: from, To: to, Cause: cause, Commands: cmds, Ignored: cause == fsm.NoCause}
	if w.full {
		if err := w.capture(&r, e); err != nil {
			w.err = err
			return err
		}
	}
	if err := w.enc.Encode(&r); err != nil {
		w.err = fmt.Errorf("journal: record %d: %w", w.seq, err)
		return w.err
	}
	if e.Kind != fsm.EvWatchEvent {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("journal: flush: %w", err)
		}
	}
	return w.err
}

func (w *Writer) capture(r *Record, e fsm.Event) error {
	if e.Object != nil {
		b, err := json.Marshal(e.Object)
		if err != nil {
			return fmt.Errorf("journal: capture object %s: %w", e.Key, err)
		}
		r.Object = b
	}
	for _, it := range e.Items {
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("journal: capture list item: %w", err)
		}
		r.Items = append(r.Items, b)
	}
	return nil
}

// Close flushes what is buffered. It does not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("journal: flush: %w", err)
	}
	return w.err
}
