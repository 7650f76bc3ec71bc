package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rewatch/rewatch"
)

// loadRESTConfig resolves credentials the way kubectl does: an explicit path, else $KUBECONFIG
// (a list of files, merged), else ~/.kube/config; when none of these yields a cluster the
// deferred loader falls back to the in-cluster service account.
func loadRESTConfig(path, context string) (*rest.Config, error) {
	rc, _, err := loadKubeconfig(path, context)
	return rc, err
}

// loadKubeconfig also returns the namespace kubectl would use: the context's, else the
// in-cluster service account's, else "default".
func loadKubeconfig(path, context string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", usagef("kubeconfig: %v", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", usagef("kubeconfig: namespace: %v", err)
	}
	return rc, ns, nil
}

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
