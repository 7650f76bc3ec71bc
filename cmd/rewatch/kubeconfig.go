package main

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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
