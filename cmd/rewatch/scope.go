package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch"
)

// clusterScoped asks the server's discovery whether res is cluster-scoped. When discovery
// cannot answer (an old or unreachable server, a proxy that serves only the resource), the
// resource is taken as namespaced and the reflector's own requests report what is wrong.
func clusterScoped(rc *rest.Config, res rewatch.Resource) bool {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return false
	}
	list, err := dc.ServerResourcesForGroupVersion(schema.GroupVersion{Group: res.Group, Version: res.Version}.String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == res.Resource {
			return !r.Namespaced
		}
	}
	return false
}
