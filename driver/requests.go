package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/framer"

	"github.com/rewatch/rewatch/fsm"
)

// initialEventsEnd is the annotation on the bookmark that ends a watch-list's initial state.
const initialEventsEnd = "k8s.io/initial-events-end"

func (d *driver) get(ctx context.Context, c *fsm.Command) (*http.Response, error) {
	u := d.cfg.Server + d.cfg.Resource.Path() + "?" + d.cfg.Resource.query(c).Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	return d.cfg.Client.Do(req)
}

// list performs one LIST page request.
func (d *driver) list(ctx context.Context, c fsm.Command) {
	failed := func(f *fsm.Failure) { d.send(ctx, fsm.Event{Kind: fsm.EvListFailed, Request: c.Request, Failure: f}) }
	resp, err := d.get(ctx, &c)
	if err != nil {
		if ctx.Err() == nil {
			failed(transportFailure(err))
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		failed(failureFromResponse(resp, d.cfg.Clock.Now()))
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxListBytes+1))
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		failed(transportFailure(err))
		return
	case int64(len(body)) > d.cfg.MaxListBytes:
		failed(transportFailure(&fsm.DecodeError{Err: fmt.Errorf("LIST response exceeds %d bytes", d.cfg.MaxListBytes)}))
		return
	}
	items, rv, cont, err := d.cfg.Decoder.DecodeList(body)
	if err != nil {
		failed(transportFailure(&fsm.DecodeError{Err: fmt.Errorf("LIST response: %w (%s)", err, printable(body, 80))}))
		return
	}
	d.send(ctx, fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: rv, Continue: cont, Items: items, ItemCount: len(items)})
}

// watch opens a watch stream and turns its frames into events until it ends.
func (d *driver) watch(ctx context.Context, c fsm.Command) {
	resp, err := d.get(ctx, &c)
	if err != nil {
		if ctx.Err() == nil {
			d.send(ctx, fsm.Event{Kind: fsm.EvWatchOpenFailed, Request: c.Request, Failure: transportFailure(err)})
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		d.send(ctx, fsm.Event{Kind: fsm.EvWatchOpenFailed, Request: c.Request, Failure: failureFromResponse(resp, d.cfg.Clock.Now())})
		return
	}
	if !d.send(ctx, fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	d.decodeStream(ctx, resp.Body, c.Request, func(e fsm.Event) bool { return d.send(ctx, e) })
}

// decodeStream turns the frames of a watch body into events for emit until the stream ends,
// emit refuses, or ctx is done. The last event it emits is the one that ended the stream
// (EvWatchEnded or EvWatchError), unless ctx ended it.
func (d *driver) decodeStream(ctx context.Context, body io.ReadCloser, request uint64, emit func(fsm.Event) bool) {
	lim := &frameLimiter{r: body, max: d.cfg.MaxFrameBytes}
	dec := streaming.NewDecoder(framer.NewJSONFramedReader(lim), watchEventDecoder{})
	defer dec.Close()
	for {
		var we metav1.WatchEvent
		_, _, err := dec.Decode(nil, &we)
		lim.frameDone()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var f *fsm.Failure
			if !errors.Is(err, io.EOF) {
				f = transportFailure(asDecodeError(err))
			}
			emit(fsm.Event{Kind: fsm.EvWatchEnded, Request: request, Failure: f})
			return
		}
		e, ok := d.frameEvent(&we, request)
		if !emit(e) || !ok {
			return
		}
	}
}

// frameEvent translates one frame. ok is false when the stream must end after it.
func (d *driver) frameEvent(we *metav1.WatchEvent, request uint64) (fsm.Event, bool) {
	e := fsm.Event{Kind: fsm.EvWatchEvent, Request: request}
	ended := func(err error) (fsm.Event, bool) {
		return fsm.Event{Kind: fsm.EvWatchEnded, Request: request, Failure: transportFailure(&fsm.DecodeError{Err: err})}, false
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
		st, ok := decodeStatus(we.Object.Raw)
		if !ok {
			return fsm.Event{Kind: fsm.EvWatchError, Request: request, Failure: &fsm.Failure{Transport: fsm.Decode,
				Message: "ERROR event without a Status object: " + printable(we.Object.Raw, 120)}}, false
		}
		return fsm.Event{Kind: fsm.EvWatchError, Request: request, Failure: &fsm.Failure{Status: st, Message: st.Message}}, false
	default:
		return ended(fmt.Errorf("unknown watch event type %q", printable([]byte(we.Type), 40)))
	}
	obj, err := d.cfg.Decoder.DecodeObject(we.Object.Raw)
	if err != nil {
		return ended(fmt.Errorf("%s object: %w", we.Type, err))
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ended(fmt.Errorf("%s object without metadata: %w", we.Type, err))
	}
	e.ResourceVersion = m.GetResourceVersion()
	if e.Type == fsm.Bookmark {
		e.InitialEventsEnd = m.GetAnnotations()[initialEventsEnd] == "true"
		return e, true
	}
	if m.GetName() == "" {
		return ended(fmt.Errorf("%s object without a name", we.Type))
	}
	e.Object = obj
	if ns := m.GetNamespace(); ns != "" {
		e.Key = ns + "/" + m.GetName()
	} else {
		e.Key = m.GetName()
	}
	return e, true
}

// watchEventDecoder decodes a frame into metav1.WatchEvent, leaving the object raw so the
// configured Decoder can read it.
type watchEventDecoder struct{}

func (watchEventDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	we, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("watch frames decode into *metav1.WatchEvent, not %T", into)
	}
	if err := jsonUnmarshalStrictCase(data, we); err != nil {
		// Marked here, where it is known to be about the bytes: sigs.k8s.io/json's syntax
		// errors are its own types, which a caller cannot match.
		return nil, nil, &fsm.DecodeError{Err: err}
	}
	return we, nil, nil
}
