package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Server is the simulated API server. All methods are safe for concurrent use.
type Server struct {
	opts Options

	mu        sync.Mutex
	rv        uint64 // the global revision, shared by all resources as in etcd
	uidSeq    uint64
	resources map[schema.GroupVersionResource]*resource
	// changed is closed and replaced on every write, waking requests that
	// wait for a resourceVersion to arrive.
	changed chan struct{}
	closed  bool
	closing chan struct{}
	active  sync.WaitGroup // running HTTP handlers

	// handlerWrap, when set before Start, replaces serve so that tests can
	// observe requests; it calls serve itself.
	handlerWrap func(http.ResponseWriter, *http.Request)

	httpSrv  *http.Server
	serveErr chan error
}

// New returns a Server holding no objects at resourceVersion 1.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:      opts,
		rv:        1,
		resources: map[schema.GroupVersionResource]*resource{},
		changed:   make(chan struct{}),
		closing:   make(chan struct{}),
	}
	for _, gvr := range opts.Resources {
		s.resources[gvr] = newResource(newKindInfo(gvr), s.rv)
	}
	return s
}

// Start serves plain HTTP on 127.0.0.1 at a free port and returns its URL.
func (s *Server) Start() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("sim: listen: %w", err)
	}
	s.mu.Lock()
	s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.serveErr = make(chan error, 1)
	srv := s.httpSrv
	s.mu.Unlock()
	go func() { s.serveErr <- srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// Close ends every watch stream, closes the listener and waits until no
// handler goroutine is left.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.closing)
	s.dropWatchesLocked()
	srv := s.httpSrv
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
		<-s.serveErr
	}
	s.active.Wait()
}

// CurrentRV is the global resourceVersion of the latest write.
func (s *Server) CurrentRV() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.rv, 10)
}

// Snapshot maps "namespace/name" to resourceVersion for every object of gvr,
// to compare a client's cache with the server.
func (s *Server) Snapshot(gvr schema.GroupVersionResource) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	if r := s.resources[gvr]; r != nil {
		for k, o := range r.objects {
			out[k] = strconv.FormatUint(o.rv, 10)
		}
	}
	return out
}

// UIDs maps "namespace/name" to uid for every object of gvr: with Snapshot, what tells a
// cache holding this server's objects from one holding another cluster's of the same names.
func (s *Server) UIDs(gvr schema.GroupVersionResource) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	if r := s.resources[gvr]; r != nil {
		for k, o := range r.objects {
			out[k] = o.uid
		}
	}
	return out
}

// Compact forgets all history up to the current resourceVersion, as an etcd
// compaction does. Since KEP-4988 (ListFromCacheSnapshot, beta in 1.34) the
// apiserver also truncates the watch cache's history on compaction, so
// watches, exact lists and continue tokens from older RVs get 410 Expired.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.resources {
		r.log = nil
		r.logBase = s.rv
	}
}

// DropWatches ends every open watch stream cleanly, as the cacher does when
// it re-initializes (terminateAllWatchers) or the apiserver shuts down.
func (s *Server) DropWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropWatchesLocked()
}

func (s *Server) dropWatchesLocked() {
	for _, r := range s.resources {
		for w := range r.watchers {
			s.stopWatcherLocked(w)
		}
	}
}

// Create stores a new object and returns its resourceVersion.
func (s *Server) Create(gvr schema.GroupVersionResource, namespace, name string, data map[string]string) (string, error) {
	return s.CreateWithLabels(gvr, namespace, name, nil, data)
}

// CreateWithLabels is Create with labels, for selector scenarios.
func (s *Server) CreateWithLabels(gvr schema.GroupVersionResource, namespace, name string, labels, data map[string]string) (string, error) {
	return s.write(gvr, namespace, name, watch.Added, labels, data)
}

// Update replaces the data of an existing object, keeping its labels.
func (s *Server) Update(gvr schema.GroupVersionResource, namespace, name string, data map[string]string) (string, error) {
	return s.write(gvr, namespace, name, watch.Modified, nil, data)
}

// UpdateWithLabels replaces both labels and data of an existing object.
func (s *Server) UpdateWithLabels(gvr schema.GroupVersionResource, namespace, name string, labels, data map[string]string) (string, error) {
	if labels == nil {
		labels = map[string]string{}
	}
	return s.write(gvr, namespace, name, watch.Modified, labels, data)
}

// Delete removes an object and returns the resourceVersion of the deletion.
func (s *Server) Delete(gvr schema.GroupVersionResource, namespace, name string) (string, error) {
	return s.write(gvr, namespace, name, watch.Deleted, nil, nil)
}

var errClosed = errors.New("sim: server closed")

func (s *Server) write(gvr schema.GroupVersionResource, namespace, name string, typ watch.EventType, labels, data map[string]string) (string, error) {
	if namespace == "" || name == "" {
		return "", apierrors.NewBadRequest("namespace and name are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errClosed
	}
	r := s.resources[gvr]
	if r == nil {
		return "", apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	key := namespace + "/" + name
	prev := r.objects[key]
	gr := gvr.GroupResource()
	switch {
	case typ == watch.Added && prev != nil:
		return "", apierrors.NewAlreadyExists(gr, name)
	case typ != watch.Added && prev == nil:
		return "", apierrors.NewNotFound(gr, name)
	}
	s.rv++
	e := event{typ: typ, rv: s.rv, prev: prev}
	switch typ {
	case watch.Added:
		s.uidSeq++
		e.obj = &object{namespace: namespace, name: name, uid: uidFor(s.opts.Incarnation, s.uidSeq), rv: s.rv,
			created: s.opts.Clock(), labels: maps.Clone(labels), data: maps.Clone(data)}
		r.objects[key] = e.obj
	case watch.Modified:
		o := *prev
		o.rv = s.rv
		o.data = maps.Clone(data)
		if labels != nil {
			o.labels = maps.Clone(labels)
		}
		e.obj = &o
		r.objects[key] = e.obj
	case watch.Deleted:
		e.obj = prev.withRV(s.rv)
		delete(r.objects, key)
	}
	r.append(e, s.opts.StorageHistory)
	for w := range r.watchers {
		if f, ok := w.convert(e); ok {
			s.enqueueLocked(w, f)
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return strconv.FormatUint(s.rv, 10), nil
}

// waitFresh blocks until the global RV reaches rv, for at most TooLargeWait,
// like the cacher's waitUntilFreshAndBlock. It reports whether rv arrived.
func (s *Server) waitFresh(ctx context.Context, rv uint64) bool {
	timer := time.NewTimer(s.opts.TooLargeWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ok, ch := s.rv >= rv, s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-s.closing:
			return false
		}
	}
}
