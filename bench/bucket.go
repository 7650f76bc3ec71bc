package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/persist/objstore"
)

// bucket is the object store a benchmark's VariantRewatchBucket keeps its persisted cache in:
// SeaweedFS on loopback (internal/apiserver's harness), one bucket, a sealing key in a file.
type bucket struct {
	s3      *apiserver.SeaweedFS
	url     string
	keyFile string
	dir     string
}

// startBucket starts SeaweedFS (built on first use) with a bucket, and writes a key file.
func startBucket(ctx context.Context, name string) (*bucket, error) {
	if err := apiserver.EnsureSeaweedFSBuilt(ctx); err != nil {
		return nil, err
	}
	s3, err := apiserver.StartSeaweedFS(ctx, apiserver.SeaweedOptions{Buckets: []string{name}})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rewatch-bench-bucket-")
	if err != nil {
		s3.Close()
		return nil, err
	}
	key := make([]byte, persist.KeySize)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(dir, "keys")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		s3.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return &bucket{s3: s3, keyFile: keyFile, dir: dir,
		url: fmt.Sprintf("s3://%s/controller?endpoint=%s&region=us-east-1", name, s3.Endpoint())}, nil
}

// args are what a child is given to reach the bucket; env its credentials.
func (b *bucket) args() []string { return []string{"-cache-url", b.url, "-cache-key-file", b.keyFile} }
func (b *bucket) env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + apiserver.SeaweedAccessKey, "AWS_SECRET_ACCESS_KEY=" + apiserver.SeaweedSecretKey}
}

// newObjectStoreMeter is a meter over a transport of its own, for a child's stores.
func newObjectStoreMeter() *ObjectStoreMeter {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &ObjectStoreMeter{Base: t}
}

func (b *bucket) close() {
	b.s3.Close()
	os.RemoveAll(b.dir)
}

// openBucket is a child's store in the bucket at url, sealed with the keys of keyFile, its
// requests through rt: what one pod of a Deployment opens at its start.
func openBucket(url, keyFile string, rt http.RoundTripper) (persist.Store, error) {
	o, err := objstore.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("%s is not an s3:// URL", url)
	}
	if o.Keys, err = persist.ReadKeyFile(keyFile); err != nil {
		return nil, err
	}
	o.Transport = rt
	return objstore.New(*o)
}
