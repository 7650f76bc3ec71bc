package listwatch

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
)

// Transport performs the driver's requests through a ListerWatcher.
type Transport struct {
	lw    cache.ListerWatcherWithContext
	name  string
	clock clockx.Clock
	// Selectors are added to every request, as a factory's TweakListOptions would.
	tweak func(*metav1.ListOptions)
	// expectedType and expectedGVK, when set, are what every watch event's object must be
	// (WithExpectedType).
	expectedType reflect.Type
	expectedGVK  *schema.GroupVersionKind
}

// Option changes a Transport.
type Option func(*Transport)

// WithTweakListOptions applies f to the options of every LIST and watch, after the machine's own
// (resourceVersion, limit, continue, timeout, bookmarks) are set: for label or field selectors.
func WithTweakListOptions(f func(*metav1.ListOptions)) Option {
	return func(t *Transport) { t.tweak = f }
}

// WithExpectedType makes the transport drop a watch event whose object is not of example's
// type — or, for an *unstructured.Unstructured example with an apiVersion and kind, not of that
// group, version and kind — with an error through utilruntime.HandleError, as client-go's
// reflector drops it: a ListerWatcher that mixes types cannot put a stranger in the store
// (docs/semantics.md, "Stores"). The informer's constructors pass their example object.
func WithExpectedType(example runtime.Object) Option {
	return func(t *Transport) {
		if example == nil {
			return
		}
		t.expectedType = reflect.TypeOf(example)
		if u, ok := example.(*unstructured.Unstructured); ok {
			if gvk := u.GroupVersionKind(); gvk.Version != "" && gvk.Kind != "" {
				t.expectedGVK = &gvk
			}
		}
	}
}

// expected says whether obj, a watch event's object, is of the expected type; it reports one
// that is not, as client-go's reflector does.
func (t *Transport) expected(ctx context.Context, obj runtime.Object) bool {
	if t.expectedType != nil {
		if actual := reflect.TypeOf(obj); actual != t.expectedType {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object type", "reflector", t.name, "expectedType", t.expectedType, "actualType", actual)
			return false
		}
	}
	if t.expectedGVK != nil && obj != nil {
		if actual := obj.GetObjectKind().GroupVersionKind(); actual != *t.expectedGVK {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object gvk", "reflector", t.name, "expectedGVK", *t.expectedGVK, "actualGVK", actual)
			return false
		}
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Table" && tableGroupVersions[u.GroupVersionKind().GroupVersion()] {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unsupported watch event object gvk", "reflector", t.name, "actualGVK", u.GroupVersionKind())
		return false
	}
	return true
}

// tableGroupVersions are where server-side printing's Table lives: a ListerWatcher that asks
// for Tables (the as=Table media type) hands over rows, not the objects a reflector caches, and
// client-go's reflector refuses them, a Table LIST as a failed LIST and a Table watch event
// dropped with an error (docs/semantics.md, "Stores").
var tableGroupVersions = map[schema.GroupVersion]bool{metav1.SchemeGroupVersion: true, metav1beta1.SchemeGroupVersion: true}

// tableList says, for a LIST answer of server-side printing's Table kind, which.
func tableList(obj runtime.Object) (schema.GroupVersionKind, bool) {
	u, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	gvk := u.GroupVersionKind()
	return gvk, gvk.Kind == "Table" && tableGroupVersions[gvk.GroupVersion()]
}

// WithClock sets the clock a watch's silence is measured on (default: the wall clock).
func WithClock(c clockx.Clock) Option {
	return func(t *Transport) { t.clock = c }
}

// New returns a transport over lw; name says what it watches, for logs. A ListerWatcher that
// takes a context is used as one, so a stop aborts its requests; any other is wrapped as
// client-go's reflector wraps it.
func New(lw cache.ListerWatcher, name string, opts ...Option) (*Transport, error) {
	if lw == nil {
		return nil, fmt.Errorf("listwatch: nil ListerWatcher")
	}
	t := &Transport{lw: cache.ToListerWatcherWithContext(lw), name: name, clock: clockx.Real()}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// String names what is watched.
func (t *Transport) String() string { return t.name }

func (t *Transport) options(c *fsm.Command) metav1.ListOptions {
	o := metav1.ListOptions{
		ResourceVersion:      c.ResourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatch(c.Match),
	}
	switch c.Kind {
	case fsm.CmdListPage:
		o.Limit, o.Continue = c.Limit, c.Continue
	case fsm.CmdOpenWatch:
		// Watch is left to the ListerWatcher's WatchFunc, which sets it (client-go's generated
		// clients do), as client-go's reflector leaves it: the options are the ones it passes.
		o.AllowWatchBookmarks = c.Bookmarks
		if c.TimeoutSeconds > 0 {
			ts := c.TimeoutSeconds
			o.TimeoutSeconds = &ts
		}
		if c.SendInitialEvents {
			yes := true
			o.SendInitialEvents = &yes
		}
	}
	if t.tweak != nil {
		t.tweak(&o)
	}
	return o
}

// List performs the LIST page request c asks for. client-go hands over the list whole, so it
// is emitted as one EvListPage carrying its items.
func (t *Transport) List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	if e, ok := t.list(ctx, c); ok {
		emit(e)
	}
}

// ListHeld is List for a relist into a store that says which versions it holds
// (driver.SkippingTransport). client-go has decoded the list already, so nothing is left
// undecoded: what is saved is the store's and the handlers' work. Each item is emitted as an
// EvListItem — one whose resourceVersion is the one held reports, with its Key and
// ResourceVersion and no Object, so the store keeps the object it holds without transforming
// or comparing the copy — and an EvListPage without items ends the page (docs/semantics.md,
// "Relists"). held nil is List.
func (t *Transport) ListHeld(ctx context.Context, c fsm.Command, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	e, ok := t.list(ctx, c)
	if !ok {
		return
	}
	if held == nil || e.Kind != fsm.EvListPage {
		emit(e)
		return
	}
	for i, obj := range e.Items {
		item, err := heldItem(obj, c.Request, held)
		if err != nil {
			emit(fsm.Event{Kind: fsm.EvListFailed, Request: c.Request, Failure: transport.Failure(&fsm.DecodeError{Err: err})})
			return
		}
		e.Items[i] = nil // the driver's once emitted
		if !emit(item) {
			return
		}
	}
	e.Items = nil
	emit(e)
}

// heldItem is the EvListItem for one item of a list: without its object when held reports the
// item's own resourceVersion.
func heldItem(obj any, request uint64, held func(namespace, name string) (rv, uid string, ok bool)) (fsm.Event, error) {
	key, rv, err := transport.ItemKey(obj)
	if err != nil {
		return fsm.Event{}, err
	}
	e := fsm.Event{Kind: fsm.EvListItem, Request: request, Key: key, ResourceVersion: rv, Object: obj}
	if unchanged(obj, rv, held) {
		e.Object = nil
	}
	return e, nil
}

// unchanged says whether held reports obj's own, non-empty resourceVersion rv and its uid: the
// store holds that version of the object (docs/semantics.md, "Relists": no update for an
// unchanged object; "Persisted cache": an object of another history is another object).
func unchanged(obj any, rv string, held func(namespace, name string) (rv, uid string, ok bool)) bool {
	if rv == "" {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	h, uid, ok := held(m.GetNamespace(), m.GetName())
	return ok && h == rv && uid == string(m.GetUID())
}

func (t *Transport) list(ctx context.Context, c fsm.Command) (fsm.Event, bool) {
	obj, err := t.lw.ListWithContext(ctx, t.options(&c))
	if err != nil {
		return fsm.Event{Kind: fsm.EvListFailed, Request: c.Request, Failure: transport.FromError(err)}, ctx.Err() == nil
	}
	failed := func(err error) (fsm.Event, bool) {
		return fsm.Event{Kind: fsm.EvListFailed, Request: c.Request, Failure: transport.Failure(&fsm.DecodeError{Err: err})}, ctx.Err() == nil
	}
	if gvk, table := tableList(obj); table {
		return failed(fmt.Errorf("unsupported list gvk: %v, type: %s", gvk, t.name))
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return failed(fmt.Errorf("LIST returned a %T, not a list: %w", obj, err))
	}
	objs, err := meta.ExtractListWithAlloc(obj)
	if err != nil {
		return failed(fmt.Errorf("LIST items: %w", err))
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: lm.GetResourceVersion(),
		Continue: lm.GetContinue(), Items: items, ItemCount: len(items)}, ctx.Err() == nil
}

// Watch opens the watch c asks for and emits its events until the result channel closes, an
// Error event ends it, emit refuses, or ctx is done. A watch that has delivered nothing for
// longer than c.SilenceBound is stopped and reported as a Timeout failure carrying a
// transport.SilentError (docs/semantics.md, "silent watch").
func (t *Transport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	t.WatchHeld(ctx, c, nil, emit)
}

// WatchHeld is Watch for a watch-list into a store that says which versions it holds
// (driver.SkippingTransport): an ADDED event of the initial state, before the bookmark that
// ends it, whose object held reports at the event's own resourceVersion is emitted with its
// Key and ResourceVersion and no Object. client-go has decoded it already; the copy is garbage
// at once, and the store keeps the object it holds without transforming or comparing it
// (docs/semantics.md, "Relists"). The watch's own events always carry their objects. held nil
// is Watch.
func (t *Transport) WatchHeld(ctx context.Context, c fsm.Command, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	if !c.SendInitialEvents {
		held = nil
	}
	rctx, sw, stop := transport.WithSilence(ctx, t.clock, c.SilenceBound)
	defer stop()
	w, err := t.lw.WatchWithContext(rctx, t.options(&c))
	if err != nil {
		if ctx.Err() == nil {
			emit(fsm.Event{Kind: fsm.EvWatchOpenFailed, Request: c.Request, Failure: transport.FromError(transport.SilenceOr(rctx, err))})
		}
		return
	}
	// The result channel is taken once, at once, and the watch stopped on the way out: a watch
	// is handed over as client-go's reflector hands it, ResultChan then Stop, even when a stop
	// comes before anything is read (a watcher may start its producer on ResultChan).
	results := w.ResultChan()
	defer w.Stop()
	sw.Frame()
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	for {
		select {
		case <-rctx.Done():
			if silent := transport.SilenceOr(rctx, nil); silent != nil && ctx.Err() == nil {
				emit(fsm.Event{Kind: fsm.EvWatchEnded, Request: c.Request, Failure: transport.Failure(silent)})
			}
			return
		case we, open := <-results:
			if !open {
				if ctx.Err() == nil {
					emit(fsm.Event{Kind: fsm.EvWatchEnded, Request: c.Request})
				}
				return
			}
			sw.Frame()
			if we.Type != watch.Error && !t.expected(ctx, we.Object) {
				continue
			}
			e, goOn := event(we, c.Request)
			if held != nil && goOn {
				switch {
				case e.Type == fsm.Bookmark && e.InitialEventsEnd:
					held = nil // the watch's own events from here on
				case e.Type == fsm.Added && unchanged(e.Object, e.ResourceVersion, held):
					e.Object = nil
				}
			}
			if !emit(e) || !goOn {
				return
			}
		}
	}
}

// event translates one watch event. goOn is false when the stream must end after it.
func event(we watch.Event, request uint64) (e fsm.Event, goOn bool) {
	ended := func(err error) (fsm.Event, bool) {
		return fsm.Event{Kind: fsm.EvWatchEnded, Request: request, Failure: transport.Failure(&fsm.DecodeError{Err: err})}, false
	}
	e = fsm.Event{Kind: fsm.EvWatchEvent, Request: request}
	switch we.Type {
	case watch.Added:
		e.Type = fsm.Added
	case watch.Modified:
		e.Type = fsm.Modified
	case watch.Deleted:
		e.Type = fsm.Deleted
	case watch.Bookmark:
		e.Type = fsm.Bookmark
	case watch.Error:
		if st, ok := we.Object.(*metav1.Status); ok {
			return fsm.Event{Kind: fsm.EvWatchError, Request: request, Failure: &fsm.Failure{Status: st.DeepCopy(), Message: st.Message}}, false
		}
		return fsm.Event{Kind: fsm.EvWatchError, Request: request, Failure: &fsm.Failure{Transport: fsm.Decode,
			Message: fmt.Sprintf("Error event carrying a %T, not a Status", we.Object)}}, false
	default:
		return ended(fmt.Errorf("unknown watch event type %q", we.Type))
	}
	if err := transport.SetObject(&e, we.Object); err != nil {
		return ended(err)
	}
	return e, true
}
