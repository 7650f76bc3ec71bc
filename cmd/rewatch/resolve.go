package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// resolvedResource is a resource argument as the server's discovery names it.
type resolvedResource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// resolveResource finds the group, version and resource that arg names, as kubectl does: arg is
// resource, resource.group or resource.version.group, in plural, singular or short form
// (configmaps, configmap, cm; deployments.apps, deploy; deployments.v1.apps), and the version is
// the group's preferred one that serves the resource. An unknown name is a usage error;
// discovery that cannot be reached is a failure.
func resolveResource(rc *rest.Config, arg string) (resolvedResource, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return resolvedResource{}, fmt.Errorf("discovery: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, func(string) {})
	fullySpecified, groupResource := schema.ParseResourceArg(strings.ToLower(arg))
	var gvk schema.GroupVersionKind
	if fullySpecified != nil {
		gvk, _ = mapper.KindFor(*fullySpecified)
	}
	if gvk.Empty() {
		if gvk, err = mapper.KindFor(groupResource.WithVersion("")); err != nil {
			if !meta.IsNoMatchError(err) {
				err = discoveryAnswer(rc, err)
			}
			return resolvedResource{}, discoveryError(arg, err)
		}
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return resolvedResource{}, discoveryError(arg, err)
	}
	return resolvedResource{gvr: mapping.Resource, kind: mapping.GroupVersionKind.Kind, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

// discoveryError words a name discovery does not know as kubectl does, as a usage error.
func discoveryError(arg string, err error) error {
	if meta.IsNoMatchError(err) {
		return usagef("the server doesn't have a resource type %q", arg)
	}
	return fmt.Errorf("discovery of %q: %w", arg, err)
}

// discoveryAnswer is what the server answered GET /api, when it refused it: client-go's
// discovery reports a refusal whose Status it did not ask for as "unknown", having logged it,
// so the user would never see the server's message (a 403's `User "system:anonymous" cannot
// get path "/api"`). Otherwise it is err.
func discoveryAnswer(rc *rest.Config, err error) error {
	hc, herr := rest.HTTPClientFor(rc)
	if herr != nil {
		return err
	}
	u, uerr := url.Parse(rc.Host)
	if uerr != nil {
		return err
	}
	u = u.JoinPath("api")
	req, rerr := http.NewRequest(http.MethodGet, u.String(), nil)
	if rerr != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, derr := hc.Do(req)
	if derr != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.Message == "" {
		return err
	}
	return &apierrors.StatusError{ErrStatus: st}
}
