package rewatch

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
)

// FromRESTConfig returns a Config whose Client, Server and UserAgent come from a client-go
// rest.Config, so kubeconfig files, in-cluster config, exec plugins, client certificates and
// bearer tokens all work as they do for kubectl. TLS verification stays as the rest.Config
// says (on unless the kubeconfig itself asks for insecure-skip-tls-verify).
func FromRESTConfig(rc *rest.Config) (Config, error) {
	if rc == nil {
		return Config{}, fmt.Errorf("rewatch: nil rest.Config")
	}
	cp := rest.CopyConfig(rc)
	// A client-side timeout would cut every watch stream; waits are the reflector's business.
	cp.Timeout = 0
	client, err := rest.HTTPClientFor(cp)
	if err != nil {
		return Config{}, fmt.Errorf("rewatch: HTTP client from rest.Config: %w", err)
	}
	base, _, err := rest.DefaultServerUrlFor(cp)
	if err != nil {
		return Config{}, fmt.Errorf("rewatch: server URL from rest.Config: %w", err)
	}
	return Config{Connection: Connection{
		Client: client, Server: strings.TrimSuffix(base.String(), "/"), UserAgent: rc.UserAgent,
	}}, nil
}
