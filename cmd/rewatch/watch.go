package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/metrics"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi"
)

const watchExample = `  # Configmaps in kube-system as kubectl get -w shows them, with each row's event type;
  # the reflector's story (transitions, waits, LISTs avoided) goes to stderr:
  rewatch watch configmaps -n kube-system --output-watch-events

  # Deployments in every namespace, one JSON document per change, the story as JSON lines
  # in a file and Prometheus metrics on :9090/metrics:
  rewatch watch deployments.apps -A -o json --trace=json 2>trace.jsonl --metrics-addr :9090

  # For scripts, the resource spelled out, without discovery, recording a journal:
  rewatch watch --group apps --version v1 --resource deployments -A --journal deploy.journal`

// traceFlag is --trace: where the reflector's story goes. It is a boolean flag as well, so that
// a bare --trace means text, as --trace=json means JSON lines and --trace=none silence.
type traceFlag struct{ format string }

func (f *traceFlag) String() string { return f.format }

func (f *traceFlag) Set(v string) error {
	switch v {
	case "true":
		v = "text"
	case "false":
		v = "none"
	}
	if err := choice("trace", v, "text", "json", "none"); err != nil {
		return err
	}
	f.format = v
	return nil
}

func (f *traceFlag) IsBoolFlag() bool { return true }

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		res                     rewatch.Resource
		kubeconfig, kubeContext string
		journalPath, output     string
		metricsAddr, cacheDir   string
		fullCapture             bool
		allNamespaces           bool
		watchEvents, watchFlag  bool
		wireFormat              string
		trace                   = traceFlag{"text"}
		tun                     tunables
	)
	fs := newFlagSet("watch", "RESOURCE[.GROUP] [flags]  |  rewatch watch --resource NAME [--group G] [--version V] [flags]",
		"LIST the resource, then WATCH it from the list's resourceVersion, keeping an in-memory cache,\n"+
			"and print the objects as kubectl get -w does: the initial list, then a row per change\n"+
			"(--output-watch-events adds the event type). A relist prints only what changed. The\n"+
			"reflector's story goes to stderr (--trace): one line per state transition and per LIST\n"+
			"page, each failure once with the server's message, and, on a terminal, a live status line.\n"+
			"SIGINT or SIGTERM stops it and prints a summary there. Credentials are found as kubectl\n"+
			"finds them: --kubeconfig, $KUBECONFIG, ~/.kube/config, then the in-cluster service account.\n"+
			"RESOURCE is resolved as kubectl resolves it, through the server's discovery: plural,\n"+
			"singular or short name, with .GROUP or .VERSION.GROUP (configmaps, cm, deployments.apps,\n"+
			"deploy, deployments.v1.apps); --resource/--group/--version name it without discovery.",
		watchExample, stdout)
	fs.StringVar(&res.Resource, "resource", "", "resource to watch, plural lower case, e.g. configmaps (instead of RESOURCE, without discovery)")
	fs.StringVar(&res.Group, "group", "", "API group of --resource, empty for the core group (e.g. apps)")
	fs.StringVar(&res.Version, "version", "v1", "API version of --resource")
	fs.StringVar(&res.Namespace, "namespace", "", "namespace to watch (default: the kubeconfig context's, as kubectl)")
	fs.StringVar(&res.Namespace, "n", "", "shorthand for --namespace")
	fs.BoolVar(&allNamespaces, "all-namespaces", false, "watch every namespace")
	fs.BoolVar(&allNamespaces, "A", false, "shorthand for --all-namespaces")
	fs.StringVar(&res.LabelSelector, "selector", "", "label selector, e.g. app=web")
	fs.StringVar(&res.LabelSelector, "l", "", "shorthand for --selector")
	fs.StringVar(&res.FieldSelector, "field-selector", "", "field selector, e.g. metadata.name=x")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context to use (default the current context)")
	fs.StringVar(&journalPath, "journal", "", "write the event journal (docs/journal.md) to this file")
	fs.BoolVar(&fullCapture, "journal-full-capture", false, "record whole objects in the journal, not only keys")
	fs.StringVar(&output, "output", "", "how objects are printed: the table (default), wide, name, yaml or json (a document per event)")
	fs.StringVar(&output, "o", "", "shorthand for --output")
	fs.BoolVar(&watchEvents, "output-watch-events", false, "print each object's watch event type (ADDED, MODIFIED, DELETED), as kubectl's flag")
	fs.BoolVar(&watchFlag, "watch", true, "accepted for kubectl's get -w: rewatch watch always watches")
	fs.BoolVar(&watchFlag, "w", true, "shorthand for --watch")
	fs.Var(&trace, "trace", "the reflector's story on stderr: text (--trace), json (--trace=json, JSON lines) or none (--trace=none)")
	fs.StringVar(&wireFormat, "format", "auto", "wire format: auto (protobuf for built-in types, else JSON), json or protobuf")
	fs.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address at /metrics (e.g. :9090)")
	fs.StringVar(&cacheDir, "cache-dir", "", "keep a snapshot of the cache in this directory (owner-only; it holds the objects) and start from it: a restart resumes the watch instead of listing everything")
	tun.register(fs.FlagSet, libraryDefaults())
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if !watchFlag {
		return usagef("--watch=false: rewatch watch only watches (kubectl get without -w is a one-off LIST)")
	}
	var resourceArg string
	switch {
	case len(positional) > 1:
		return usagef("unexpected argument %q: watch takes one resource", positional[1])
	case len(positional) == 1 && anyFlagGiven(fs, "resource", "group", "version"):
		return usagef("give the resource either as RESOURCE[.GROUP] or with --resource/--group/--version, not both")
	case len(positional) == 1:
		resourceArg = positional[0]
	case res.Resource == "":
		return usagef("a resource is required (e.g. rewatch watch configmaps, or --resource configmaps)")
	}
	if err := choice("output", output, objectOutputs...); err != nil {
		return err
	}
	if err := choice("format", wireFormat, "auto", "json", "protobuf"); err != nil {
		return err
	}
	if err := tun.validate(); err != nil {
		return err
	}
	if allNamespaces && res.Namespace != "" {
		return usagef("--namespace and --all-namespaces cannot be used together: a namespace is either one or all")
	}
	// client-go's discovery logs what it then returns (through klog, on stderr): the error
	// line below says it once.
	klog.SetLogger(logr.Discard())
	rc, contextNamespace, err := loadKubeconfig(kubeconfig, kubeContext)
	if err != nil {
		return err
	}
	if !allNamespaces && res.Namespace == "" {
		res.Namespace = contextNamespace
	}
	var kind string // the resource's kind, when discovery said it
	if resourceArg != "" {
		found, err := resolveResource(rc, resourceArg)
		if err != nil {
			return err
		}
		res.Group, res.Version, res.Resource = found.gvr.Group, found.gvr.Version, found.gvr.Resource
		kind = found.kind
		if !found.namespaced {
			res.Namespace = "" // as kubectl, below
		}
	}
	if res.Namespace != "" && resourceArg == "" && clusterScoped(rc, res) {
		// As kubectl does, a namespace means nothing for a cluster-scoped resource (nodes,
		// namespaces, CRDs): without this, the context's default would ask for
		// /namespaces/default/nodes, which the server answers 404.
		res.Namespace = ""
	}
	cfg, err := rewatch.FromRESTConfig(rc)
	if err != nil {
		return usageError{err}
	}
	cfg.Resource = res
	tun.apply(&cfg)
	if wireFormat != "auto" {
		cfg.Format = rewatch.Format(wireFormat)
	}
	if gv := (schema.GroupVersion{Group: res.Group, Version: res.Version}); wireFormat != "json" && scheme.Scheme.IsVersionRegistered(gv) {
		// A built-in type: decoded into its Go type, so the server can send protobuf.
		cfg.Decoder = httpapi.Typed(scheme.Scheme)
	}

	// stdout is the objects', as kubectl's; the story and the summary go to stderr.
	traceOut := stderr
	if trace.format == "none" {
		traceOut = io.Discard
	}
	p := newPrinter(traceOut, trace.format)
	p.rows = stdout
	rp := &rowPrinter{p: p, format: output, events: watchEvents, allNamespaces: allNamespaces,
		gvr: schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}, kind: kind, now: time.Now}
	cfg.Store = newRowStore(rp)
	cfg.OnTransition = p.transition
	// The reflector's own log lines would repeat the transition lines printed here: each
	// failure is told once, on its transition line.
	cfg.Logger = slog.New(slog.DiscardHandler)
	if metricsAddr != "" {
		reg := prometheus.NewRegistry()
		m, err := metrics.NewPrometheus(reg, metrics.Options{})
		if err != nil {
			return err
		}
		cfg.Metrics = m
		stopMetrics, err := serveMetrics(metricsAddr, reg)
		if err != nil {
			return usageError{err}
		}
		defer stopMetrics()
	}
	if cacheDir != "" {
		cfg.Persist = persist.Dir(cacheDir)
		p.persisted = true
	}
	if journalPath != "" {
		f, err := os.Create(journalPath)
		if err != nil {
			return usagef("journal: %v", err)
		}
		defer f.Close()
		cfg.Journal, cfg.JournalFullCapture = f, fullCapture
	}
	r, err := rewatch.New(cfg)
	if err != nil {
		return usageError{err}
	}
	if trace.format == "text" {
		p.note("start", fmt.Sprintf("watching %s at %s (wire format %s)", res, cfg.Server, r.Stats().WireFormat), nil)
	}
	var stopStatus func()
	if trace.format == "text" && isTerminal(stderr) {
		stopStatus = startStatus(ctx, p, r.Stats)
	}
	runErr := r.Run(ctx)
	if stopStatus != nil {
		stopStatus()
	}
	st := r.Stats()
	p.summary(st)
	if runErr != nil {
		return runErr
	}
	if !st.Synced {
		return notSyncedError(st)
	}
	return nil
}

// notSyncedError says why a watch stopped before it ever held the resource: a script must be
// able to tell "watched, then stopped" from "never got the initial list".
func notSyncedError(st rewatch.Stats) error {
	if st.LastFailure == nil {
		return errors.New("stopped before the initial list completed; the server had not answered")
	}
	return fmt.Errorf("stopped before the initial list completed; last failure: %s", st.LastFailure)
}

// serveMetrics listens before returning so that a taken port is a usage error, not a log line.
func serveMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "rewatch: metrics server:", err)
		}
	}()
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
