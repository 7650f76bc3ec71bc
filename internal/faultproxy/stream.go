package faultproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// halfFrame is what Truncate writes into a watch: the start of an event
// that never ends, so the client's decoder fails mid-object.
const halfFrame = `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"trunc`

// relayWatch copies a watch stream frame by frame, flushing each one at
// once, and applies a stream fault between frames when it is due.
func (p *Proxy) relayWatch(ctx context.Context, w http.ResponseWriter, resp *http.Response, rec *Record, f Fault) {
	// Most of the fault needs a frame boundary; decoding JSON values (the API
	// server writes one event object per line) gives exactly that.
	frames := make(chan json.RawMessage)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(frames)
		dec := json.NewDecoder(resp.Body)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return
			}
			select {
			case frames <- raw:
			case <-done:
				return
			}
		}
	}()
	// Closing the body unblocks the decoder goroutine if we return first.
	defer resp.Body.Close()

	flush(w)
	streamFault := f.act == actInject || f.act == actReset || f.act == actTruncate
	var timer <-chan time.Time
	if streamFault && f.afterDelay > 0 {
		t := time.NewTimer(f.afterDelay)
		defer t.Stop()
		timer = t.C
	}
	delayPassed := f.afterDelay <= 0
	events := 0
	for {
		if streamFault && delayPassed && events >= f.afterEvents {
			applyStreamFault(w, f)
			return
		}
		select {
		case raw, ok := <-frames:
			if !ok {
				return
			}
			if _, err := w.Write(append(raw, '\n')); err != nil {
				return
			}
			flush(w)
			events++
			p.update(func() { rec.Events = events })
		case <-timer:
			delayPassed = true
		case <-ctx.Done():
			return
		}
	}
}

func applyStreamFault(w http.ResponseWriter, f Fault) {
	switch f.act {
	case actInject:
		// The real server ends the watch after an ERROR event; returning
		// does the same here.
		_, _ = w.Write(errorEvent(statusOf(f.err)))
		flush(w)
	case actReset:
		flush(w)
		abort(w, true)
	case actTruncate:
		_, _ = w.Write([]byte(halfFrame))
		flush(w)
		abort(w, false)
	}
}
