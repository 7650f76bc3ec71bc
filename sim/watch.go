package sim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/watch"
)

// frame is one watch event queued for a stream. Objects are immutable, so
// encoding happens outside the server lock.
type frame struct {
	typ        watch.EventType
	obj        *object // nil for BOOKMARK
	rv         uint64  // BOOKMARK only
	initialEnd bool
}

// watcher is one open watch stream. ch and done are written only under
// Server.mu, which keeps frames in resourceVersion order.
type watcher struct {
	res  *resource
	pred predicate
	ch   chan frame
	done chan struct{}
	// startRV: like cache_watcher.process, events and bookmarks at or below
	// the RV the watch started from are never sent.
	startRV   uint64
	bookmarks bool
	stopped   bool
}

// convert applies the cache_watcher's selector semantics: an object that
// starts matching is ADDED, one that stops matching is DELETED (its previous
// state at the event's RV).
func (w *watcher) convert(e event) (frame, bool) {
	if e.rv <= w.startRV {
		return frame{}, false
	}
	cur := e.typ != watch.Deleted && w.pred.matches(e.obj)
	old := e.prev != nil && w.pred.matches(e.prev)
	switch {
	case cur && !old:
		return frame{typ: watch.Added, obj: e.obj}, true
	case cur && old:
		return frame{typ: watch.Modified, obj: e.obj}, true
	case old:
		return frame{typ: watch.Deleted, obj: e.prev.withRV(e.rv)}, true
	}
	return frame{}, false
}

// enqueueLocked never blocks a writer: a watcher whose buffer is full is
// closed, as the cacher does once its dispatch timeout budget is spent
// (cacheWatcher.add → forget). The simulator spends no budget; the stream
// ends at once.
func (s *Server) enqueueLocked(w *watcher, f frame) {
	select {
	case w.ch <- f:
	default:
		s.stopWatcherLocked(w)
	}
}

func (s *Server) stopWatcherLocked(w *watcher) {
	if w.stopped {
		return
	}
	w.stopped = true
	delete(w.res.watchers, w)
	close(w.done)
}

// enqueueBookmark queues a BOOKMARK at the current global RV behind every
// event already queued, so bookmarks never overtake events. Like the
// cacher's nonblockingAdd for bookmarks, a full buffer just skips it.
func (s *Server) enqueueBookmark(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.stopped || s.rv <= w.startRV {
		return
	}
	select {
	case w.ch <- frame{typ: watch.Bookmark, rv: s.rv}:
	default:
	}
}

func (s *Server) serveWatch(rw http.ResponseWriter, r *http.Request, res *resource, enc encoding, p predicate, o internalversion.ListOptions) {
	ctx := r.Context()
	// handlers/get.go ListResource: timeoutSeconds, else a random duration
	// in [minRequestTimeout, 2*minRequestTimeout).
	timeout := time.Duration(float64(s.opts.MinRequestTimeout) * (1 + rand.Float64()))
	if o.TimeoutSeconds != nil && *o.TimeoutSeconds > 0 {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	deadline := time.Now().Add(timeout)

	requested, _ := strconv.ParseUint(o.ResourceVersion, 10, 64)
	sendInitial := o.SendInitialEvents != nil && *o.SendInitialEvents

	var initial []frame
	var failure error
	// Only a request for initial events waits for the cache to catch up
	// (waitUntilWatchCacheFreshAndForceAllEvents); a plain watch from a
	// future RV just waits for events newer than it.
	if sendInitial && requested > 0 && !s.waitFresh(ctx, requested) {
		failure = tooLarge(requested, s.currentRV())
	}

	w := &watcher{res: res, pred: p, ch: make(chan frame, s.opts.WatcherBuffer),
		done: make(chan struct{}), bookmarks: o.AllowWatchBookmarks}
	s.mu.Lock()
	if failure == nil {
		switch {
		case sendInitial, o.SendInitialEvents == nil && requested == 0:
			// RV "" or "0" without sendInitialEvents is the legacy "get
			// state and start at most recent": synthetic ADDED events for
			// the current state, served from the cache.
			for _, obj := range sortedObjects(res.objects) {
				if p.matches(obj) {
					initial = append(initial, frame{typ: watch.Added, obj: obj})
				}
			}
			if sendInitial || len(initial) > 0 {
				w.startRV = s.rv
			}
			// The initial-events-end bookmark is only sent when bookmarks
			// were allowed (cacher setInitialEventsEndBookmarkIfRequested);
			// apimachinery's validation does not reject the combination.
			if sendInitial && o.AllowWatchBookmarks {
				initial = append(initial, frame{typ: watch.Bookmark, rv: s.rv, initialEnd: true})
			}
		case requested == 0:
			// sendInitialEvents=false with RV "" or "0": from now on.
			w.startRV = s.rv
		default:
			if horizon := res.watchHorizon(s.opts.HistoryWindow); requested < horizon {
				// watchCache getAllEventsSinceLocked; the cacher hands this
				// back as an ERROR event in a 200 stream (newErrWatcher),
				// never as an HTTP 410.
				failure = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", requested, horizon))
				break
			}
			w.startRV = requested
			for _, e := range res.eventsAfter(requested) {
				if f, ok := w.convert(e); ok {
					initial = append(initial, f)
				}
			}
		}
		if failure == nil {
			res.watchers[w] = struct{}{}
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.stopWatcherLocked(w)
		s.mu.Unlock()
	}()

	rw.Header().Set("Content-Type", enc.streamContentType())
	rw.WriteHeader(http.StatusOK)
	flusher, _ := rw.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	if failure != nil {
		body, _ := enc.body(statusOf(failure))
		_ = enc.writeFrame(rw, watch.Error, body)
		flush()
		return
	}

	for _, f := range initial {
		if s.send(rw, res, enc, f) != nil {
			return
		}
	}
	flush()

	end := time.NewTimer(timeout)
	defer end.Stop()
	// A stopped timer's channel never fires, so a watch without bookmarks
	// simply never takes that branch.
	bookmark := time.NewTimer(time.Hour)
	bookmark.Stop()
	defer bookmark.Stop()
	schedule := func() {
		if next, ok := nextBookmark(time.Now(), deadline, s.opts.BookmarkInterval); ok && w.bookmarks {
			bookmark.Reset(next)
		}
	}
	schedule()
	for {
		select {
		case f := <-w.ch:
			if s.send(rw, res, enc, f) != nil {
				return
			}
			flush()
		case <-bookmark.C:
			s.enqueueBookmark(w)
			schedule()
		case <-w.done:
			return
		case <-end.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// nextBookmark follows cacheWatcher.nextBookmarkTime: every interval, but
// also 2s before the deadline so that a client re-watching after the
// timeout starts from a recent RV; none once that moment has passed.
func nextBookmark(now, deadline time.Time, interval time.Duration) (time.Duration, bool) {
	next := now.Add(interval)
	if pre := deadline.Add(-2 * time.Second); pre.Before(next) {
		next = pre
	}
	if next.Before(now) {
		return 0, false
	}
	return next.Sub(now), true
}

// send writes frame f in enc; an error ends the stream.
func (s *Server) send(rw http.ResponseWriter, res *resource, enc encoding, f frame) error {
	var v any
	if f.typ == watch.Bookmark {
		v = res.bookmarkObject(f.rv, f.initialEnd)
	} else {
		v = res.wire(f.obj, true)
	}
	b, err := enc.body(v)
	if err != nil {
		return err
	}
	return enc.writeFrame(rw, f.typ, b)
}
