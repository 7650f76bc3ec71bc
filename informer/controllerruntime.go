package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// NewInformerFn is the signature of client-go's cache.NewSharedIndexInformer and of
// controller-runtime's cache.Options.NewInformer.
type NewInformerFn = func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer

// ForRESTConfig is the constructor for controller-runtime's cache that reads over rewatch's own
// HTTP transport, as NewHTTP does — a LIST decoded item by item as it arrives, and on a relist
// the items the informer holds unchanged left undecoded (docs/semantics.md, "Relists") — where
// NewSharedIndexInformer can only go through the ListerWatcher controller-runtime builds, whose
// client-go decodes everything. It returns the rest.Config to give the manager and the
// NewInformer to give its cache:
//
//	cfg, newInformer, err := informer.ForRESTConfig(ctrl.GetConfigOrDie(), scheme, informer.Options{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: cache.Options{NewInformer: newInformer}})
//
// The manager must be given the returned rest.Config, not the one ForRESTConfig was given:
// each new informer learns what to request from one LIST its ListerWatcher makes, which the
// returned config's transport takes back before it leaves the process. Given another config
// (or an HTTPClient of its own), the manager's cache fails to build the informer with an error
// that says so — controller-runtime's GetInformer returns it — rather than reading otherwise.
// NewControllerRuntime is ForRESTConfig with the informers' Stats within reach.
//
// Everything controller-runtime asks of an informer's requests — the namespace (DefaultNamespaces,
// a namespace per cache), ByObject's and the defaults' label and field selectors — is read from
// the ListerWatcher it hands over, not recomputed: the URL that probe LIST would have requested
// (path and selectors) becomes the informer's resource. So the informer lists and watches
// exactly what controller-runtime's own would.
//
// Each informer's requests ask for the media types controller-runtime's ListerWatcher asks for
// (protobuf first for a built-in type, unless cfg's ContentType says otherwise), carry its
// User-Agent, wait on cfg's rate limiter (cfg.RateLimiter, else one of cfg's QPS and Burst for
// the informer), time a LIST out after cfg.Timeout and hand response warnings to cfg's warning
// handler, as a REST client made from cfg does (docs/semantics.md, "Requests"). Typed objects
// are decoded with scheme (nil: client-go's), unstructured ones as JSON or CBOR, and
// metadata-only ones as PartialObjectMetadata given the kind of the example object, as
// controller-runtime's ListerWatcher gives it them. A type scheme does not know, and a
// metadata-only example without its kind, have no HTTP path: that informer is
// NewSharedIndexInformer's over the ListerWatcher (watch-lists where the server has them,
// WatchListFor), and says so in the manager's log when it runs. opts apply to every informer;
// resync and indexers come from controller-runtime.
func ForRESTConfig(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (*rest.Config, NewInformerFn, error) {
	cr, err := NewControllerRuntime(cfg, scheme, opts)
	if err != nil {
		return nil, nil, err
	}
	return cr.RESTConfig, cr.NewInformer, nil
}

// ControllerRuntime is what a controller-runtime manager needs to read over rewatch's HTTP
// transport (ForRESTConfig), and the way to the Stats of every informer it made:
//
//	cr, err := informer.NewControllerRuntime(ctrl.GetConfigOrDie(), scheme, informer.Options{})
//	mgr, err := ctrl.NewManager(cr.RESTConfig, ctrl.Options{Scheme: scheme, Cache: cache.Options{NewInformer: cr.NewInformer}})
//	…
//	stats := cr.Stats(&corev1.ConfigMap{}) // one per namespace the cache watches
//
// controller-runtime's GetInformer hands out the informer itself for a cache of all namespaces
// (an *Informer, whose Stats method is there) and, for a cache given DefaultNamespaces (even
// one), a wrapper of its own around one informer per namespace, which Stats reaches through.
type ControllerRuntime struct {
	// RESTConfig is the rest.Config to give the manager: the one NewControllerRuntime was given,
	// with a transport that takes back each new informer's probe LIST.
	RESTConfig *rest.Config
	b          *crBuilder
}

// NewControllerRuntime is ForRESTConfig as a ControllerRuntime.
func NewControllerRuntime(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (*ControllerRuntime, error) {
	if cfg == nil {
		return nil, errors.New("informer: nil rest.Config")
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	cp := rest.CopyConfig(cfg)
	// A client-side timeout would cut every watch stream; waits are the reflector's business.
	cp.Timeout = 0
	client, err := rest.HTTPClientFor(cp)
	if err != nil {
		return nil, fmt.Errorf("informer: HTTP client from rest.Config: %w", err)
	}
	base, _, err := rest.DefaultServerUrlFor(cp)
	if err != nil {
		return nil, fmt.Errorf("informer: server URL from rest.Config: %w", err)
	}
	managerCfg := rest.CopyConfig(cfg)
	managerCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return probeTransport{rt} })
	b := &crBuilder{opts: opts, scheme: scheme, client: client, server: strings.TrimSuffix(base.String(), "/"), cfg: rest.CopyConfig(cfg)}
	return &ControllerRuntime{RESTConfig: managerCfg, b: b}, nil
}

// NewInformer is the NewInformer to give the manager's cache (cache.Options.NewInformer).
func (c *ControllerRuntime) NewInformer(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return c.b.newInformer(lw, example, resync, indexers)
}

// Stats is the Stats of every informer NewInformer made for example's type, by the namespace
// it watches ("" for all namespaces, and for an informer that reads through the ListerWatcher,
// whose namespace is the ListerWatcher's business).
func (c *ControllerRuntime) Stats(example runtime.Object) map[string]rewatch.Stats {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	out := map[string]rewatch.Stats{}
	for _, made := range c.b.made {
		if made.typ == reflect.TypeOf(example) && sameKind(made.example, example) {
			out[made.namespace] = made.inf.Stats()
		}
	}
	return out
}

// sameKind: for unstructured and metadata-only examples, which carry their kind, the same
// group, version and kind; for typed ones the Go type says it all.
func sameKind(a, b runtime.Object) bool {
	ga, gb := a.GetObjectKind().GroupVersionKind(), b.GetObjectKind().GroupVersionKind()
	switch a.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		return ga == gb
	}
	return true
}

// crBuilder builds controller-runtime's informers over the HTTP transport.
type crBuilder struct {
	opts   Options
	scheme *runtime.Scheme
	client *http.Client
	server string
	cfg    *rest.Config // the caller's, for what a REST client made from it does to requests

	mu   sync.Mutex
	made []madeInformer
}

// madeInformer is an informer newInformer made: its example's type and the namespace it watches.
type madeInformer struct {
	typ       reflect.Type
	example   runtime.Object
	namespace string
	inf       *Informer
}

// errNotTheReturnedConfig is why an informer cannot be made: the manager was not given the
// rest.Config ForRESTConfig returned.
var errNotTheReturnedConfig = errors.New("informer.ForRESTConfig: the manager's requests do not go through the rest.Config " +
	"ForRESTConfig returned, so its informers cannot learn what to request: give ctrl.NewManager that rest.Config " +
	"(ForRESTConfig's first result, ControllerRuntime.RESTConfig), not the one ForRESTConfig was given, and no HTTPClient " +
	"of the manager's own")

func (b *crBuilder) newInformer(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	o := b.opts
	o.ResyncPeriod = resync
	o.Indexers = mergeIndexers(b.opts.Indexers, indexers)
	overListerWatcher := func(why string) cache.SharedIndexInformer {
		inf := WithOptions(b.opts)(lw, example, resync, indexers).(*Informer)
		inf.runNote = "informer reads through controller-runtime's ListerWatcher: " + why
		b.note(example, "", inf)
		return inf
	}
	var decoder httpapi.Decoder
	var gvk schema.GroupVersionKind
	typed := false
	switch example.(type) {
	case runtime.Unstructured:
		decoder = httpapi.Unstructured()
	case *metav1.PartialObjectMetadata:
		// controller-runtime sets the kind of each metadata-only object its ListerWatcher
		// returns (the server's is PartialObjectMetadata); the informer does the same.
		if gvk = example.GetObjectKind().GroupVersionKind(); gvk.Empty() {
			return overListerWatcher("a metadata-only object without its kind")
		}
		decoder = httpapi.Metadata()
	default:
		if _, _, err := b.scheme.ObjectKinds(example); err != nil {
			return overListerWatcher(fmt.Sprintf("the scheme does not know the type: %v", err))
		}
		// client-go's decoder, under controller-runtime's typed ListerWatcher, hands out
		// objects without their kind (apiVersion and kind empty); the HTTP transport's carry
		// what the server wrote, so the informer clears it.
		typed = true
		decoder = httpapi.Typed(b.scheme)
	}
	probe, err := probeRequest(lw)
	if err != nil {
		return failed(err, example, o)
	}
	res, err := resourceOf(b.server, probe.url)
	if err != nil {
		return failed(fmt.Errorf("informer.ForRESTConfig: %w", err), example, o)
	}
	// The requests say what the ListerWatcher's would (media types, User-Agent) and wait on
	// the rate limiter a REST client made from the caller's rest.Config would wait on: its
	// RateLimiter, shared, or one of its QPS and Burst for this informer, as
	// controller-runtime makes a REST client per type (docs/semantics.md, "Requests").
	conn := httpapi.Config{Client: b.client, Server: b.server, Resource: res, Decoder: decoder, Format: b.opts.Format,
		UserAgent: probe.userAgent, ClientUserAgent: probe.userAgent == "",
		RateLimiter: rateLimiterFor(b.cfg), RequestTimeout: b.cfg.Timeout, WarningHandler: warningHandlerFor(b.cfg)}
	if conn.Format == httpapi.FormatAuto {
		conn.Format = formatForAccept(probe.accept, decoder)
	}
	t, err := httpapi.New(conn)
	if err != nil {
		return failed(fmt.Errorf("informer.ForRESTConfig: %w", err), example, o)
	}
	if o.Name == "" {
		o.Name = t.String()
	}
	inf := New(t, example, o)
	if typed || !gvk.Empty() {
		inf.prepare = func(obj any) {
			if o, ok := obj.(runtime.Object); ok {
				o.GetObjectKind().SetGroupVersionKind(gvk)
			}
		}
	}
	b.note(example, res.Namespace, inf)
	return inf
}

// note keeps inf, made for example in namespace, for ControllerRuntime.Stats.
func (b *crBuilder) note(example runtime.Object, namespace string, inf *Informer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.made = append(b.made, madeInformer{typ: reflect.TypeOf(example), example: example, namespace: namespace, inf: inf})
}

// probeKey marks the context of a probe request; its value is the *probed it fills in.
type probeKey struct{}

type probed struct {
	mu                sync.Mutex
	url               *url.URL
	accept, userAgent string
}

// errProbed ends a probe request in the transport, before it is sent.
var errProbed = errors.New("rewatch: probe request, not sent")

// probeTransport takes back a probe request (one whose context carries a probeKey) and records
// its URL; every other request goes through unchanged.
type probeTransport struct{ rt http.RoundTripper }

func (p probeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if pr, ok := r.Context().Value(probeKey{}).(*probed); ok {
		u := *r.URL
		pr.mu.Lock()
		pr.url, pr.accept, pr.userAgent = &u, r.Header.Get("Accept"), r.Header.Get("User-Agent")
		pr.mu.Unlock()
		return nil, errProbed
	}
	return p.rt.RoundTrip(r)
}

// WrappedRoundTripper lets client-go's transport debugging see through the probe.
func (p probeTransport) WrappedRoundTripper() http.RoundTripper { return p.rt }

// probeRequest asks lw for one LIST, which the config's probeTransport takes back, and
// returns the URL it would have requested, with its Accept and User-Agent headers.
func probeRequest(lw cache.ListerWatcher) (*probed, error) {
	pr := &probed{}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), probeKey{}, pr), 30*time.Second)
	defer cancel()
	// A limit of 1 at resourceVersion "" keeps the request small should it go out after all
	// (a manager with an HTTPClient of its own).
	_, _ = cache.ToListerWatcherWithContext(lw).ListWithContext(ctx, metav1.ListOptions{Limit: 1})
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.url == nil {
		return nil, errNotTheReturnedConfig
	}
	return &probed{url: pr.url, accept: pr.accept, userAgent: pr.userAgent}, nil
}

// resourceOf reads the resource, namespace and selectors of a collection's URL under server:
// /api/v1[/namespaces/NS]/RESOURCE or /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE.
func resourceOf(server string, u *url.URL) (httpapi.Resource, error) {
	s, err := url.Parse(server)
	if err != nil {
		return httpapi.Resource{}, err
	}
	rest, ok := strings.CutPrefix(u.EscapedPath(), strings.TrimSuffix(s.EscapedPath(), "/"))
	if !ok || u.Host != s.Host {
		return httpapi.Resource{}, fmt.Errorf("request %s is not under the server %s", u.Redacted(), server)
	}
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	var r httpapi.Resource
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		r.Version, seg = seg[1], seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		r.Group, r.Version, seg = seg[1], seg[2], seg[3:]
	default:
		return httpapi.Resource{}, fmt.Errorf("request path %s is not a collection", u.Path)
	}
	switch len(seg) {
	case 1:
		r.Resource = seg[0]
	case 3:
		if seg[0] != "namespaces" {
			return httpapi.Resource{}, fmt.Errorf("request path %s is not a collection", u.Path)
		}
		r.Namespace, r.Resource = seg[1], seg[2]
	default:
		return httpapi.Resource{}, fmt.Errorf("request path %s is not a collection", u.Path)
	}
	for _, p := range []*string{&r.Group, &r.Version, &r.Namespace, &r.Resource} {
		if *p, err = url.PathUnescape(*p); err != nil {
			return httpapi.Resource{}, err
		}
	}
	q := u.Query()
	r.LabelSelector, r.FieldSelector = q.Get("labelSelector"), q.Get("fieldSelector")
	return r, nil
}
