package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/persist"
)

// variantCommand is a child process of the benchmark (self with args) for a variant: client-go's
// LIST mode is its WatchListClient feature gate turned off in the child's environment. The
// child's stderr is the benchmark's.
func variantCommand(ctx context.Context, variant, self string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = os.Environ()
	if variant == VariantCGList {
		cmd.Env = append(cmd.Env, "KUBE_FEATURE_WatchListClient=false")
	}
	cmd.Stderr = os.Stderr
	return cmd
}

// endChild ends a benchmark's child: its stdin closed, it stops its reflectors, whose journals
// then end with whole records, and exits. One that has not exited within childGrace is killed.
func endChild(cmd *exec.Cmd, stdin io.Closer) {
	_ = stdin.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(childGrace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// childGrace is how long a child has to stop its reflectors once told to.
const childGrace = 30 * time.Second

// Variants of reflector the benchmarks compare.
const (
	VariantRewatch  = "rewatch"
	VariantClientGo = "client-go"      // client-go defaults (WatchListClient on in v0.37)
	VariantCGList   = "client-go-list" // client-go with KUBE_FEATURE_WatchListClient=false
	VariantBaseline = "baseline"
	// VariantRewatchCap5s is rewatch with its backoff capped at 5 s instead of 30 s (waits in
	// [5 s, 10 s) at the cap): not a default, a measured answer to "what if rewatch backed off
	// less in a storm". Run it with -variants.
	VariantRewatchCap5s = "rewatch-cap5s"
	// VariantRewatchWatchList is rewatch with Policy.WatchList: the initial state and every
	// relist as a watch-list stream, as client-go's default does. Run it with -variants.
	VariantRewatchWatchList = "rewatch-watchlist"
	// VariantRewatchExact is rewatch waiting every Retry-After exactly, repeated or not
	// (Policy.RetryAfterSpread = RetryAfterExact): the policy before repeated Retry-Afters were
	// spread by default, kept to measure what the spread buys. Run it with -variants.
	VariantRewatchExact = "rewatch-exact"
	// VariantRewatchPaged is rewatch relisting in pages at a known RV too (Policy.PageRelists),
	// as it did before relists asked the watch cache for the whole list in one request: kept to
	// measure what that buys. Run it with -variants.
	VariantRewatchPaged = "rewatch-paged"
	// VariantRewatchSingle is rewatch told that the server is one kube-apiserver
	// (Policy.SingleServer: a young watch cache's 410 relists without a fresh-connection
	// re-watch), with watch-lists as client-go's default has them. Run it with -variants.
	VariantRewatchSingle = "rewatch-single-watchlist"
	// VariantRewatchBucket is rewatch with its persisted cache in one bucket that every member
	// shares (SeaweedFS's S3 API, persist/objstore, sealed): a Deployment's replicas, each new
	// pod with no local cache of its own. Run it with -variants.
	VariantRewatchBucket = "rewatch-bucket"
	// VariantRewatchEmptyDir is rewatch with its persisted cache in a directory that each start
	// finds empty, as a Deployment's new pod finds its emptyDir: the directory store alone
	// through a rollout. Run it with -variants.
	VariantRewatchEmptyDir = "rewatch-emptydir"
	// VariantRewatchBucketCR is VariantRewatchBucket in a controller-runtime cache, as a manager
	// builds it with informer.NewControllerRuntime: the same bucket, through controller-runtime's
	// way in. The restart program only.
	VariantRewatchBucketCR = "rewatch-bucket-controller-runtime"
)

// inBucket says whether a variant keeps its persisted cache in the bench's bucket.
func inBucket(variant string) bool {
	return variant == VariantRewatchBucket || variant == VariantRewatchBucketCR
}

// isRewatch says whether a variant is one of rewatch's.
func isRewatch(variant string) bool {
	switch variant {
	case VariantRewatch, VariantRewatchCap5s, VariantRewatchWatchList, VariantRewatchExact, VariantRewatchPaged, VariantRewatchSingle,
		VariantRewatchBucket, VariantRewatchEmptyDir, VariantRewatchBucketCR:
		return true
	}
	return false
}

// Variants lists every reflector variant.
var Variants = []string{VariantRewatch, VariantClientGo, VariantCGList, VariantBaseline}

// Target says what a reflector lists and watches.
type Target struct {
	Server    string // base URL (plain HTTP: the fault proxy, the simulator)
	GVR       schema.GroupVersionResource
	Namespace string
	Transport http.RoundTripper // nil: http.DefaultTransport
	// WatchList asks rewatch for streaming lists (client-go decides by its feature gate).
	WatchList bool
	// PageSize for rewatch (0: default 500).
	PageSize int64
	// Journal, when set, receives rewatch's event journal (other variants have none).
	Journal io.Writer
	// CacheDir, when set, keeps rewatch's persisted cache (Config.Persist) in this directory.
	CacheDir string
	// Persist, when set, keeps rewatch's persisted cache there instead (a bucket).
	Persist persist.Store
	// OnReflector, when set, is given rewatch's reflector once it is made (other variants have
	// none), before it runs.
	OnReflector func(*rewatch.Reflector)
}

// NewStoreFor returns the store each variant uses by default: rewatch's MemStore, client-go's
// cache.NewStore for the others, wrapped to time its mutations.
func NewStoreFor(variant string) *TimedStore {
	if isRewatch(variant) {
		return &TimedStore{Inner: driver.NewMemStore()}
	}
	return &TimedStore{Inner: cache.NewStore(cache.MetaNamespaceKeyFunc)}
}

// RunReflector runs one variant until ctx is done, filling store.
func RunReflector(ctx context.Context, variant string, t Target, store *TimedStore) error {
	rt := t.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	switch {
	case isRewatch(variant):
		cfg := rewatch.Config{
			Connection: rewatch.Connection{
				Client: &http.Client{Transport: rt}, Server: t.Server,
				Resource: rewatch.Resource{Group: t.GVR.Group, Version: t.GVR.Version, Resource: t.GVR.Resource, Namespace: t.Namespace},
			},
			Policy: rewatch.Policy{WatchList: t.WatchList || variant == VariantRewatchWatchList || variant == VariantRewatchSingle,
				PageSize: t.PageSize, PageRelists: variant == VariantRewatchPaged, SingleServer: variant == VariantRewatchSingle},
			Store: store.ForDriver(), Journal: t.Journal,
		}
		if t.CacheDir != "" {
			cfg.Persist = persist.Dir(t.CacheDir)
		}
		if t.Persist != nil {
			cfg.Persist = t.Persist
		}
		if variant == VariantRewatchExact {
			cfg.RetryAfterSpread = rewatch.RetryAfterExact
		}
		if variant == VariantRewatchCap5s {
			b := backoff.Reflector()
			b.Cap = 5 * time.Second
			cfg.Backoff = b
		}
		r, err := rewatch.New(cfg)
		if err != nil {
			return err
		}
		if t.OnReflector != nil {
			t.OnReflector(r)
		}
		return r.Run(ctx)
	case variant == VariantClientGo, variant == VariantCGList:
		return RunClientGo(ctx, &rest.Config{Host: t.Server, Transport: rt}, t.GVR, t.Namespace, store, false)
	case variant == VariantBaseline:
		path := "/api/" + t.GVR.Version
		if t.GVR.Group != "" {
			path = "/apis/" + t.GVR.Group + "/" + t.GVR.Version
		}
		if t.Namespace != "" {
			path += "/namespaces/" + t.Namespace
		}
		path += "/" + t.GVR.Resource
		b := &Baseline{Client: &http.Client{Transport: rt}, Server: t.Server, Path: path, Store: store}
		b.Run(ctx)
		return nil
	}
	return fmt.Errorf("unknown variant %q", variant)
}

// listOnly makes client-go's reflector use LIST+WATCH whatever its WatchListClient gate says.
type listOnly struct{}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// RunClientGo runs client-go's Reflector with its defaults (cache.NewReflector, no resync) over
// the dynamic client until ctx is done. With forceList it lists and watches instead of asking
// for a watch-list stream.
func RunClientGo(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, ns string, store cache.ReflectorStore, forceList bool) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ri := dyn.Resource(gvr).Namespace(ns)
	var semantics any = dyn
	if forceList {
		semantics = listOnly{}
	}
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	}, semantics)
	cache.NewReflector(lw, &unstructured.Unstructured{}, store, 0).RunWithContext(ctx)
	return nil
}
