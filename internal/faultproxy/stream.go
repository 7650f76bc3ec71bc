package faultproxy

import (
	"context"
	"net/http"
	"time"
)

// relayWatch copies a watch stream in encoding enc frame by frame, flushing
// each one at once, and applies a stream fault between frames when it is due.
func (p *Proxy) relayWatch(ctx context.Context, w http.ResponseWriter, resp *http.Response, f *firing, enc encoding) {
	rec := f.rec
	// Most of the fault needs a frame boundary.
	frames := make(chan []byte)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(frames)
		enc.readFrames(resp.Body, func(frame []byte) bool {
			select {
			case frames <- frame:
				return true
			case <-done:
				return false
			}
		})
	}()
	// Closing the body unblocks the decoder goroutine if we return first.
	defer resp.Body.Close()

	flush(w)
	streamFault := f.act == actInject || f.act == actReset || f.act == actTruncate || f.act == actStall
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
			applyStreamFault(ctx, w, f, enc)
			return
		}
		select {
		case raw, ok := <-frames:
			if !ok {
				return
			}
			if _, err := w.Write(raw); err != nil {
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

// applyStreamFault delivers f between two frames. A stall holds the
// connection open, relaying nothing, until the client or the proxy ends it;
// the upstream stream is left unread meanwhile.
func applyStreamFault(ctx context.Context, w http.ResponseWriter, f *firing, enc encoding) {
	switch f.act {
	case actInject:
		// The real server ends the watch after an ERROR event; returning
		// does the same here.
		_, _ = w.Write(enc.errorEvent(statusOf(f.err)))
		flush(w)
		f.deliver()
	case actReset:
		flush(w)
		f.deliver()
		abort(w, true)
	case actTruncate:
		_, _ = w.Write(enc.halfFrame)
		flush(w)
		f.deliver()
		abort(w, false)
	case actStall:
		f.deliver()
		<-ctx.Done()
	}
}
