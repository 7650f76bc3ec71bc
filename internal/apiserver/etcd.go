package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Compact compacts etcd at its current revision, so that every older
// resourceVersion is gone from etcd and requests that reach etcd for one get
// a real 410. It talks to etcd's JSON gRPC gateway rather than using
// clientv3, which would pull etcd's dependency tree into the root module.
//
// The API server's watch cache still holds recent events after compaction
// and serves watches from them; to make watches for an old resourceVersion
// reach etcd, start the server with ExtraArgs "--watch-cache=false".
func (s *Server) Compact(ctx context.Context) error {
	rev, err := s.Revision(ctx)
	if err != nil {
		return err
	}
	// physical: return only once the old revisions are really removed, so
	// the 410 is there as soon as Compact returns.
	if err := s.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return fmt.Errorf("etcd compact at %d: %w", rev, err)
	}
	s.logf("apiserver: etcd compacted at revision %d", rev)
	return nil
}

// Revision is etcd's current revision, which is the newest resourceVersion
// the API server can hand out.
func (s *Server) Revision(ctx context.Context) (int64, error) {
	var rng struct {
		Header struct {
			// The gateway encodes int64 as a JSON string.
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// key "\x00" (base64 "AA==") and count_only: the cheapest range whose
	// response header carries the store's current revision.
	if err := s.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "AA==", "count_only": true}, &rng); err != nil {
		return 0, fmt.Errorf("etcd current revision: %w", err)
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd current revision %q: %w", rng.Header.Revision, err)
	}
	return rev, nil
}

func (s *Server) etcdCall(ctx context.Context, path string, in, out any) error {
	return etcdCall(ctx, s.etcdURL, path, in, out)
}

// etcdCall posts in as JSON to etcd's gRPC gateway at base+path and decodes the answer into
// out (when not nil).
func etcdCall(ctx context.Context, base, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
