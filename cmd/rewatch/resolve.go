package main

import (
	"flag"
	"fmt"
	"strings"

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

// parseInterspersed parses flags that may come after positional arguments, as kubectl's do
// (`rewatch watch configmaps -n kube-system`): Go's flag package stops at the first
// positional, so each one is set aside and parsing resumes after it.
func parseInterspersed(fs *flagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// anyFlagGiven reports whether any of the named flags was given on the command line.
func anyFlagGiven(fs *flagSet, names ...string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			given = given || f.Name == n
		}
	})
	return given
}
