package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

func (t *Transport) get(ctx context.Context, c *fsm.Command) (*http.Response, error) {
	q := t.cfg.Resource.query(c)
	decoderQuery(t.cfg.Decoder, q)
	u := t.path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", t.accept(c))
	if t.cfg.UserAgent != "" {
		req.Header.Set("User-Agent", t.cfg.UserAgent)
	}
	resp, err := t.cfg.Client.Do(req)
	if err == nil && t.cfg.WarningHandler != nil {
		warnings, _ := utilnet.ParseWarningHeaders(resp.Header.Values("Warning"))
		for _, w := range warnings {
			t.cfg.WarningHandler.HandleWarningHeaderWithContext(ctx, w.Code, w.Agent, w.Text)
		}
	}
	return resp, err
}

// accept is the Accept header of the request for c. A metadata-only request asks for
// PartialObjectMetadata(List), as client-go's metadata client does.
func (t *Transport) accept(c *fsm.Command) string {
	as := ""
	switch {
	case !t.cfg.MetadataOnly:
	case c.Kind == fsm.CmdListPage:
		as = "PartialObjectMetadataList"
	default:
		as = "PartialObjectMetadata"
	}
	return acceptHeader(t.media, as)
}

// List performs the LIST page request c asks for and emits what comes back: an EvListItem for
// each item as soon as it is decoded, then the EvListPage that ends the page; or EvListFailed.
// Nothing holds the page: each item is the driver's once emitted (docs/semantics.md,
// "Relists").
func (t *Transport) List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	t.ListHeld(ctx, c, nil, emit)
}

// ListHeld is List for a relist into a store that says which versions it holds
// (driver.SkippingTransport): an item whose namespace, name and resourceVersion, read from its
// bytes, are what held reports is emitted as an EvListItem with its Key and ResourceVersion
// and no Object, without being decoded (docs/semantics.md, "Relists"). held nil decodes every
// item.
func (t *Transport) ListHeld(ctx context.Context, c fsm.Command, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	n := 0
	e := t.list(ctx, &c, held, func(obj any, key, rv string) error {
		if !emit(fsm.Event{Kind: fsm.EvListItem, Request: c.Request, Key: key, ResourceVersion: rv, Object: obj}) {
			return errEmitRefused
		}
		n++
		return nil
	})
	if ctx.Err() != nil || e.Kind == 0 {
		return
	}
	e.ItemCount = n
	emit(e)
}

// errEmitRefused ends a LIST whose events the driver no longer takes.
var errEmitRefused = errors.New("the driver took no more events")

// list performs the LIST page request c asks for, decoding the body as it arrives and handing
// each item to item; it returns the EvListPage (without items) or EvListFailed that ends it, or
// no event (Kind 0) when item refused to go on.
// The body is read through a bound of MaxListBytes; a body cut midway fails as the read that
// cut it, a body that does not decode as a decode error.
func (t *Transport) list(ctx context.Context, c *fsm.Command, held func(namespace, name string) (rv, uid string, ok bool), item func(obj any, key, rv string) error) fsm.Event {
	failed := func(f *fsm.Failure) fsm.Event {
		return fsm.Event{Kind: fsm.EvListFailed, Request: c.Request, Failure: f}
	}
	// The rate limiter is waited on before the request's timeout starts, as client-go's REST
	// client does: a request held back by its own client does not time out for it.
	if rl := t.cfg.RateLimiter; rl != nil {
		if err := rl.Wait(ctx); err != nil {
			return failed(transport.Failure(err))
		}
	}
	if d := t.cfg.RequestTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	ctx, guard, stopGuard := transport.WithProgress(ctx, t.cfg.progressClock)
	defer stopGuard()
	// A response that stops coming, its connection held open, is cancelled and reported as
	// such (docs/semantics.md, "A response that stops halfway").
	stalled := func(err error) fsm.Event {
		if st, ok := transport.Stalled(ctx); ok {
			return failed(&fsm.Failure{Transport: fsm.Stalled, Message: st.Error(), Cause: st})
		}
		return failed(transport.Failure(err))
	}
	guard.Wait("the LIST response's headers", t.cfg.ListHeadersTimeout)
	resp, err := t.get(ctx, c)
	guard.Done()
	if err != nil {
		return stalled(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return failed(failureFromResponse(resp, t.cfg.Clock.Now()))
	}
	body := &listBody{r: guard.Reader(resp.Body, "the LIST response's body", t.cfg.ListProgressTimeout), max: t.cfg.MaxListBytes}
	var h *wire.Held
	if held != nil {
		h = &wire.Held{Versions: held, Kept: func(key, rv string) error { return item(nil, key, rv) }}
	}
	rv, cont, err := decodeListStream(t.cfg.Decoder, t.answered(resp), body, h, func(obj any) error {
		key, rv, err := transport.ItemKey(obj)
		if err != nil {
			return &itemFailure{transport.Failure(&fsm.DecodeError{Err: err})}
		}
		return item(obj, key, rv)
	})
	var itemErr *itemFailure
	switch {
	case err == nil:
		return fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: rv, Continue: cont}
	case errors.Is(err, errEmitRefused):
		return fsm.Event{} // nothing more to report
	case errors.As(err, &itemErr):
		return failed(itemErr.f)
	case errors.Is(body.err, errListTooLarge):
		// Named apart from a decode error: the machine pages a list it could not take whole
		// (docs/semantics.md, "A list that cannot be served whole").
		return failed(&fsm.Failure{Transport: fsm.TooLarge, Message: fmt.Sprintf("LIST response exceeds MaxListBytes (%d bytes)", t.cfg.MaxListBytes)})
	case body.err != nil:
		return stalled(body.err)
	}
	return failed(transport.Failure(&fsm.DecodeError{Err: fmt.Errorf("LIST response: %w", err)}))
}

// itemFailure is an item the decoder read but the transport could not pass on (an object
// without metadata); the LIST fails with it.
type itemFailure struct{ f *fsm.Failure }

func (e *itemFailure) Error() string { return e.f.Message }

// errListTooLarge is the read error of a LIST body past MaxListBytes.
var errListTooLarge = errors.New("LIST response too large")

// listBody reads a LIST response body up to max bytes and keeps the first read error that was
// not the body's end, so that a connection broken mid-body is told from a malformed body.
type listBody struct {
	r      io.Reader
	n, max int64
	err    error
}

func (b *listBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.n > b.max {
		b.err = errListTooLarge
		return 0, b.err
	}
	if rest := b.max + 1 - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// Watch opens the watch c asks for and emits what happens — EvWatchOpenFailed, or EvWatchOpened
// and then the stream's events — until the stream ends, emit returns false or ctx is done. A
// watch that has delivered nothing — not its response headers, not a frame — for longer than
// c.SilenceBound is ended, and reported as a Timeout failure carrying a transport.SilentError
// (docs/semantics.md, "silent watch").
func (t *Transport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	t.WatchHeld(ctx, c, nil, emit)
}

// WatchHeld is Watch for a watch-list into a store that says which versions it holds
// (driver.SkippingTransport): until the bookmark that ends the initial state, an ADDED frame
// whose object's namespace, name and resourceVersion, read from the frame's bytes, are what
// held reports is emitted with its Key and ResourceVersion and no Object, without decoding
// the frame (docs/semantics.md, "Relists"). held nil decodes every frame.
func (t *Transport) WatchHeld(ctx context.Context, c fsm.Command, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	if c.FreshConnection {
		closeIdleConnections(t.cfg.Client)
	}
	rctx, sw, stop := transport.WithSilence(ctx, t.cfg.Clock, c.SilenceBound)
	defer stop()
	resp, err := t.get(rctx, &c)
	if err != nil {
		if ctx.Err() == nil {
			emit(fsm.Event{Kind: fsm.EvWatchOpenFailed, Request: c.Request, Failure: transport.Failure(transport.SilenceOr(rctx, err))})
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		emit(fsm.Event{Kind: fsm.EvWatchOpenFailed, Request: c.Request, Failure: failureFromResponse(resp, t.cfg.Clock.Now())})
		return
	}
	sw.Frame() // the headers count: the silence runs from here
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	var skip *initialSkip
	if _, builtin := t.cfg.Decoder.(heldListStreamDecoder); held != nil && c.SendInitialEvents && builtin {
		skip = &initialSkip{held: held}
	}
	t.decodeStream(rctx, resp.Body, t.answered(resp), c.Request, sw, skip, emit)
}

// decodeStream turns the frames of a watch body in the given media type into events for emit
// until the stream ends, emit refuses, or ctx is done. The last event it emits is the one that
// ended the stream (EvWatchEnded or EvWatchError), unless ctx ended it for any reason but
// silence. JSON streams are a sequence of JSON objects; protobuf streams are length-delimited
// frames, each a metav1.WatchEvent whose object is a protobuf body of its own; CBOR streams a
// CBOR sequence of metav1.WatchEvent. Every frame is told to sw (nil: no silence bound).
//
// With skip, the initial state's ADDED frames the store holds unchanged are read only as far
// as their object's metadata (initialSkip).
func (t *Transport) decodeStream(ctx context.Context, body io.ReadCloser, media string, request uint64, sw *transport.SilenceWatch, skip *initialSkip, emit func(fsm.Event) bool) {
	// The framers read a frame's header and body separately, and an HTTP body's every Read
	// takes a lock and goes through chunked decoding: a buffer in front makes them cheap.
	lim := &frameLimiter{r: readCloser{bufio.NewReaderSize(body, 32<<10), body}, max: t.cfg.MaxFrameBytes}
	f := framesOf(media)
	dec := streaming.NewDecoder(f.Reader(lim), t.frames(f, skip))
	defer dec.Close()
	for {
		var we metav1.WatchEvent
		_, _, err := dec.Decode(nil, &we)
		lim.frameDone()
		if err != nil {
			if ctx.Err() != nil {
				if silent := transport.SilenceOr(ctx, nil); silent != nil {
					emit(fsm.Event{Kind: fsm.EvWatchEnded, Request: request, Failure: transport.Failure(silent)})
				}
				return
			}
			var f *fsm.Failure
			if !errors.Is(err, io.EOF) {
				f = transport.Failure(asDecodeError(err))
			}
			emit(fsm.Event{Kind: fsm.EvWatchEnded, Request: request, Failure: f})
			return
		}
		sw.Frame()
		if kept, ok := skip.take(); ok {
			if !emit(fsm.Event{Kind: fsm.EvWatchEvent, Request: request, Type: fsm.Added, Key: kept.key, ResourceVersion: kept.rv}) {
				return
			}
			continue
		}
		e, ok := t.frameEvent(&we, media, request)
		skip.seen(&e)
		if !emit(e) || !ok {
			return
		}
	}
}

// frameEvent translates one frame. ok is false when the stream must end after it.
func (t *Transport) frameEvent(we *metav1.WatchEvent, media string, request uint64) (fsm.Event, bool) {
	e := fsm.Event{Kind: fsm.EvWatchEvent, Request: request}
	ended := func(err error) (fsm.Event, bool) {
		return fsm.Event{Kind: fsm.EvWatchEnded, Request: request, Failure: transport.Failure(&fsm.DecodeError{Err: err})}, false
	}
	switch we.Type {
	case "ADDED":
		e.Type = fsm.Added
	case "MODIFIED":
		e.Type = fsm.Modified
	case "DELETED":
		e.Type = fsm.Deleted
	case "BOOKMARK":
		e.Type = fsm.Bookmark
	case "ERROR":
		st, ok := decodeStatus(media, we.Object.Raw)
		if !ok {
			return fsm.Event{Kind: fsm.EvWatchError, Request: request, Failure: &fsm.Failure{Transport: fsm.Decode,
				Message: "ERROR event without a Status object: " + printable(we.Object.Raw, 120)}}, false
		}
		return fsm.Event{Kind: fsm.EvWatchError, Request: request, Failure: &fsm.Failure{Status: st, Message: st.Message}}, false
	default:
		return ended(fmt.Errorf("unknown watch event type %q", printable([]byte(we.Type), 40)))
	}
	obj, err := t.cfg.Decoder.DecodeObject(media, we.Object.Raw)
	if err != nil {
		return ended(fmt.Errorf("%s object: %w", we.Type, err))
	}
	if err := transport.SetObject(&e, obj); err != nil {
		return ended(err)
	}
	return e, true
}

type readCloser struct {
	io.Reader
	io.Closer
}
