package main

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// loadRESTConfig resolves credentials the way kubectl does: an explicit path, else $KUBECONFIG
// (a list of files, merged), else ~/.kube/config; when none of these yields a cluster the
// deferred loader falls back to the in-cluster service account.
func loadRESTConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, usagef("kubeconfig: %v", err)
	}
	return rc, nil
}
