package bench

import (
	"context"
	"log/slog"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rewatch/rewatch/informer"
)

// The ways into rewatch a controller takes, beside the runners of relist_test.go: the
// informer over an arbitrary client-go ListerWatcher (full states as watch-lists, as
// client-go's own reflector takes them), and controller-runtime's cache, with the informers
// informer.ForRESTConfig builds (rewatch's HTTP transport) and with
// informer.NewSharedIndexInformer over controller-runtime's ListerWatcher.
func init() {
	relistRunners = append(relistRunners,
		relistRunner{"rewatch-listwatch-watchlist", startRewatchListWatch},
		relistRunner{"rewatch-informerfunc", startRewatchInformerFunc},
		relistRunner{"controller-runtime-rewatch", startControllerRuntime(true)},
		relistRunner{"controller-runtime-listwatch-watchlist", startControllerRuntime(false)},
	)
}

// startRewatchListWatch is informer.NewSharedIndexInformer over the ListerWatcher client-go's
// typed informer builds, asking for the run's wire format.
func startRewatchListWatch(b *testing.B, url string, d *relistData) *running {
	lw, err := typedListWatch(url, d.media, d.resource())
	if err != nil {
		b.Fatal(err)
	}
	quiet := informer.Options{Logger: slog.New(slog.DiscardHandler)}
	return runInformer(b, informer.WithOptions(quiet)(lw, d.example(), 0, indexers))
}

// startRewatchInformerFunc is informer.NewInformerFuncIn handed to client-go's own
// SharedInformerFactory.InformerFor, as a program on client-go's factory adopts rewatch type by
// type.
func startRewatchInformerFunc(b *testing.B, url string, d *relistData) *running {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("bench"))
	opts := informer.Options{Logger: slog.New(slog.DiscardHandler), Format: wireFormat(d.media)}
	return runInformer(b, f.InformerFor(d.example(), informer.NewInformerFuncIn(d.example(), "bench", nil, opts)))
}

// startControllerRuntime is a controller-runtime cache for the run's type in namespace bench, as a
// manager builds it, with rewatch's informers: ForRESTConfig's over HTTP (overHTTP), else
// NewSharedIndexInformer over controller-runtime's ListerWatcher. The cache's informer is the
// one a controller's handler is added to.
func startControllerRuntime(overHTTP bool) func(*testing.B, string, *relistData) *running {
	return func(b *testing.B, url string, d *relistData) *running {
		quiet := informer.Options{Logger: slog.New(slog.DiscardHandler), Format: wireFormat(d.media)}
		cfg := &rest.Config{Host: url, QPS: -1}
		newInformer := informer.WithOptions(quiet)
		if overHTTP {
			var err error
			if cfg, newInformer, err = informer.ForRESTConfig(cfg, nil, quiet); err != nil {
				b.Fatal(err)
			}
		}
		c, built, err := controllerRuntimeCache(cfg, "bench", newInformer)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		inf, err := c.GetInformer(ctx, d.example().(client.Object))
		if err != nil {
			b.Fatal(err)
		}
		rewatchInf, err := built()
		if err != nil {
			b.Fatal(err)
		}
		h := &counting{}
		if _, err := inf.AddEventHandler(h); err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Start(ctx) }()
		return &running{lastRV: rewatchInf.LastSyncResourceVersion, handler: h, stop: func() { cancel(); <-done }}
	}
}
