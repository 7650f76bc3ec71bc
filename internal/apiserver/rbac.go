package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// limitedRBAC lets LimitedUser read everything and write nothing. It cannot
// use the built-in "view" role: that one is aggregated by
// kube-controller-manager, which the harness does not run, so it is empty.
var limitedRBAC = []struct{ path, body string }{
	{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `{
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "ClusterRole",
  "metadata": {"name": "rewatch-limited-read"},
  "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
}`},
	{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "ClusterRoleBinding",
  "metadata": {"name": "rewatch-limited-read"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "rewatch-limited-read"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "` + LimitedUser + `"}]
}`},
}

// bindLimitedUser gives LimitedUser read access, so that the limited token
// drives LISTs and WATCHes that, unlike an admin's, are subject to
// --max-requests-inflight.
func (s *Server) bindLimitedUser(ctx context.Context) error {
	hc, err := s.HTTPClient()
	if err != nil {
		return err
	}
	return bindLimitedUser(ctx, hc, s.url)
}

// bindLimitedUser grants LimitedUser read access on the server at url, through hc (an admin's
// client).
func bindLimitedUser(ctx context.Context, hc *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, obj := range limitedRBAC {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+obj.path, bytes.NewReader([]byte(obj.body)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("grant %s read access: %w", LimitedUser, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// 409: already there, as after RestartAPIServer on the same etcd.
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("grant %s read access: POST %s: %s: %s", LimitedUser, obj.path, resp.Status, b)
		}
	}
	return nil
}
