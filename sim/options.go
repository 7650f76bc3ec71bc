package sim

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConfigMaps is core v1 configmaps, the default resource.
var ConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Widgets is a CRD-like namespaced custom resource served under /apis.
var Widgets = schema.GroupVersionResource{Group: "demo.rewatch.dev", Version: "v1", Resource: "widgets"}

// Options configures a Server. The zero value is usable.
type Options struct {
	// Resources served; default ConfigMaps only. All are namespaced.
	Resources []schema.GroupVersionResource
	// HistoryWindow is how many events per resource the watch cache keeps;
	// a watch from an older resourceVersion gets 410 Expired. Default 1000.
	HistoryWindow int
	// StorageHistory is how many events per resource "etcd" keeps for
	// exact-RV lists and continue tokens, like etcd's periodic compaction.
	// Default 100000. Compact forgets it all at once.
	StorageHistory int
	// BookmarkInterval between BOOKMARK events on a watch that asked for
	// them. The real server uses one minute; the default here is 1s so that
	// demos show them.
	BookmarkInterval time.Duration
	// TooLargeWait is how long a request for a resourceVersion newer than
	// the current one waits before failing with 504 ResourceVersionTooLarge.
	// Default 3s, the cacher's blockTimeout.
	TooLargeWait time.Duration
	// MinRequestTimeout: a watch without timeoutSeconds ends after a random
	// duration in [MinRequestTimeout, 2*MinRequestTimeout), as
	// --min-request-timeout does. Default 1800s.
	MinRequestTimeout time.Duration
	// WatcherBuffer is the number of events a watcher may lag behind before
	// the server closes its stream. Default 100.
	WatcherBuffer int
	// Clock stamps creationTimestamp. Default time.Now.
	Clock func() time.Time
	// MaxPageSize caps a positive limit; 0 means no cap.
	MaxPageSize int
	// Incarnation tells clusters apart: the uids of a server's objects are deterministic,
	// and two servers of different incarnations give the same writes different uids, as two
	// real clusters do (a cluster deleted and created again at the same address).
	Incarnation uint16
}

func (o Options) withDefaults() Options {
	if len(o.Resources) == 0 {
		o.Resources = []schema.GroupVersionResource{ConfigMaps}
	}
	if o.HistoryWindow <= 0 {
		o.HistoryWindow = 1000
	}
	if o.StorageHistory <= 0 {
		o.StorageHistory = 100000
	}
	if o.StorageHistory < o.HistoryWindow {
		o.StorageHistory = o.HistoryWindow
	}
	if o.BookmarkInterval <= 0 {
		o.BookmarkInterval = time.Second
	}
	if o.TooLargeWait <= 0 {
		o.TooLargeWait = 3 * time.Second
	}
	if o.MinRequestTimeout <= 0 {
		o.MinRequestTimeout = 1800 * time.Second
	}
	if o.WatcherBuffer <= 0 {
		o.WatcherBuffer = 100
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}
