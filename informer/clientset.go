package informer

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/transport/httpapi"
)

// ErrNoRESTClient is returned by ClientsetConfig for a clientset whose typed clients have no
// REST client to take the connection from, such as client-go's fake clientset.
var ErrNoRESTClient = errors.New("the clientset has no REST client (a fake clientset?)")

// DefaultIndexers are the indexes client-go's typed informers always carry: the namespace index
// that a lister's Objects(namespace).List reads.
func DefaultIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

// ClientsetConfig is the configuration of rewatch's HTTP transport for example's resource, taken
// from the clientset's REST client for its group version: the same HTTP client (so its TLS,
// authentication and rest.Config wrappers, and the User-Agent its rest.Config gave it), the
// same server URL (with any path prefix), the REST client's rate limiter (rest.Config's QPS
// and Burst, or RateLimiter: the informer's LISTs share the clientset's budget), its
// rest.Config's Timeout for each LIST, its warning handler, and a typed decoder for client-go's
// scheme asking for what the REST client asks for: protobuf first, as client-go's generated
// clients do for built-in types, unless the rest.Config set a ContentType or
// AcceptContentTypes (JSON for "application/json"). namespace limits a namespaced resource to one
// namespace and is ignored for a cluster-scoped one, as client-go's typed informers do. tweak,
// when set, is applied once to empty ListOptions and its label and field selectors kept; the
// rest of ListOptions (resourceVersion, limit, timeouts) is the reflector's.
func ClientsetConfig(client kubernetes.Interface, example runtime.Object, namespace string, tweak func(*metav1.ListOptions)) (httpapi.Config, error) {
	r, err := clientsetResource(client, example)
	if err != nil {
		return httpapi.Config{}, err
	}
	rc, ok := r.rest.(*rest.RESTClient)
	if !ok || rc == nil {
		return httpapi.Config{}, fmt.Errorf("informer: %s: %w", r.gvr, ErrNoRESTClient)
	}
	server, err := serverOf(rc, r.gvr.GroupVersion())
	if err != nil {
		return httpapi.Config{}, err
	}
	hc := http.DefaultClient
	if rc.Client != nil {
		hc = rc.Client
	}
	// The client's Timeout (rest.Config.Timeout) would cut every watch stream: it bounds each
	// LIST instead, and the reflector times its own watches (docs/semantics.md, "Requests").
	c := *hc
	c.Timeout = 0
	res := httpapi.Resource{Group: r.gvr.Group, Version: r.gvr.Version, Resource: r.gvr.Resource}
	if r.namespaced {
		res.Namespace = namespace
	}
	if tweak != nil {
		var o metav1.ListOptions
		tweak(&o)
		res.LabelSelector, res.FieldSelector = o.LabelSelector, o.FieldSelector
	}
	content, defaulted, err := restClientContent(rc)
	if err != nil {
		return httpapi.Config{}, err
	}
	warnings, err := restClientWarnings(rc)
	if err != nil {
		return httpapi.Config{}, err
	}
	conn := httpapi.Config{Client: &c, Server: server, Resource: res, Decoder: httpapi.Typed(scheme.Scheme),
		ClientUserAgent: true, RequestTimeout: hc.Timeout, WarningHandler: warningsTo(warnings)}
	conn.Format = formatForAccept(acceptOf(content, defaulted), conn.Decoder)
	if rl := rc.GetRateLimiter(); rl != nil {
		conn.RateLimiter = rl
	}
	return conn, nil
}

// serverOf is the server URL of rc: its URL for the group version without the versioned API
// path, so that a rest.Config host with a path prefix keeps it.
func serverOf(rc *rest.RESTClient, gv schema.GroupVersion) (string, error) {
	u := rc.Get().URL()
	versioned := "/api/" + gv.Version
	if gv.Group != "" {
		versioned = "/apis/" + gv.Group + "/" + gv.Version
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(p, versioned) {
		return "", fmt.Errorf("informer: the REST client for %s is at %s, not under %s", gv, u.Path, versioned)
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = strings.TrimSuffix(p, versioned), "", "", ""
	return strings.TrimSuffix(u.String(), "/"), nil
}

// typedResource is a type of client-go's scheme as the clientset serves it.
type typedResource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	rest       rest.Interface
}

// clientsetResource finds example's resource in client-go's scheme and the clientset's typed
// client for it. The typed group client is named after the group and version (CoreV1, AppsV1,
// …); the resource is namespaced when the group client's accessor for it takes a namespace
// (ConfigMaps(namespace) against Nodes()), which is how client-gen writes them.
func clientsetResource(client kubernetes.Interface, example runtime.Object) (typedResource, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(example)
	if err != nil {
		return typedResource{}, fmt.Errorf("informer: %T is not a type of client-go's scheme: %w", example, err)
	}
	gvk := gvks[0]
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	out := typedResource{gvr: gvr}
	method := groupGoName(gvk.Group) + strings.ToUpper(gvk.Version[:1]) + gvk.Version[1:]
	m := reflect.ValueOf(client).MethodByName(method)
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return out, fmt.Errorf("informer: the clientset has no %s() for %s", method, gvk.GroupVersion())
	}
	group := m.Call(nil)[0]
	gc, ok := group.Interface().(interface{ RESTClient() rest.Interface })
	if !ok {
		return out, fmt.Errorf("informer: %s() of the clientset has no RESTClient", method)
	}
	out.rest = gc.RESTClient()
	if out.rest == nil || reflect.ValueOf(out.rest).IsNil() {
		return out, fmt.Errorf("informer: %s().RESTClient(): %w", method, ErrNoRESTClient)
	}
	ptr := reflect.TypeOf(example)
	for i := range group.NumMethod() {
		mt := group.Method(i).Type()
		if mt.NumOut() != 1 || mt.Out(0).Kind() != reflect.Interface {
			continue
		}
		get, ok := mt.Out(0).MethodByName("Get")
		if !ok || get.Type.NumOut() != 2 || get.Type.Out(0) != ptr {
			continue
		}
		switch {
		case mt.NumIn() == 0:
			return out, nil
		case mt.NumIn() == 1 && mt.In(0).Kind() == reflect.String:
			out.namespaced = true
			return out, nil
		}
	}
	return out, fmt.Errorf("informer: %s() of the clientset has no typed client for %T", method, example)
}
