package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// bindLimitedUser lets LimitedUser read (the built-in "view" role), so
// that the limited token can drive LISTs and WATCHes that, unlike an
// admin's, are subject to --max-requests-inflight.
func (s *Server) bindLimitedUser(ctx context.Context) error {
	body := []byte(`{
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "ClusterRoleBinding",
  "metadata": {"name": "rewatch-limited-view"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "` + LimitedUser + `"}]
}`)
	hc, err := s.HTTPClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("bind %s to view: %w", LimitedUser, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// 409: already bound, as after RestartAPIServer on the same etcd.
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("bind %s to view: %s: %s", LimitedUser, resp.Status, b)
	}
	return nil
}
