package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/metrics"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/persist/objstore"
	"github.com/rewatch/rewatch/transport/httpapi"
)

const watchExample = `  # Configmaps in kube-system as kubectl get -w shows them, with each row's event type;
  # the reflector's story (transitions, waits, LISTs avoided) goes to stderr:
  rewatch watch configmaps -n kube-system --output-watch-events

  # One deployment, by name, with the server's wide columns and a column per label:
  rewatch watch deploy/web -o wide -L app,tier

  # Deployments in every namespace, one JSON document per change, the story as JSON lines
  # in a file and Prometheus metrics on :9090/metrics:
  rewatch watch deployments.apps -A -o json --trace json 2>trace.jsonl --metrics-addr :9090

  # For scripts, the resource spelled out, without discovery, recording a journal:
  rewatch watch --group apps --version v1 --resource deployments -A --journal deploy.journal`

// traceFlag is --trace: where the reflector's story goes. A bare --trace means text; a value
// is given as --trace=json or --trace json (watchArgs joins the two).
type traceFlag struct{ format string }

var traceFormats = []string{"text", "json", "none"}

func (f *traceFlag) String() string { return f.format }

func (f *traceFlag) Set(v string) error {
	switch v {
	case "true":
		v = "text"
	case "false":
		v = "none"
	}
	for _, a := range traceFormats {
		if v == a {
			f.format = v
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(traceFormats, ", "))
}

func (f *traceFlag) Type() string { return "string" }

// watchArgs joins "--trace VALUE" into "--trace=VALUE": --trace alone means text, as a
// boolean flag, so pflag would take a value after a space for an argument.
func watchArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--trace" || a == "-trace") && i+1 < len(args) {
			for _, f := range traceFormats {
				if args[i+1] == f {
					a, i = "--trace="+f, i+1
					break
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// watchOptions are `rewatch watch`'s flags: kubectl's connection flags (cli-runtime's
// ConfigFlags) and get's print flags, kubectl get's own, and the reflector's.
type watchOptions struct {
	config *genericclioptions.ConfigFlags
	print  *get.PrintFlags

	res           rewatch.Resource
	allNamespaces bool
	watch         bool
	watchOnly     bool
	watchEvents   bool
	retryRefusals bool
	journalPath   string
	fullCapture   bool
	metricsAddr   string
	cacheDir      string
	cacheURL      string
	cacheKeyFile  string
	wireFormat    string
	trace         traceFlag
	tun           tunables
}

func newWatchCommand() (*cobra.Command, *watchOptions) {
	o := &watchOptions{config: genericclioptions.NewConfigFlags(true), print: get.NewGetPrintFlags(), trace: traceFlag{"text"}}
	// --cache-dir is the reflector's snapshot directory here, not kubectl's discovery cache:
	// discovery is kept in memory, and nothing is written unless asked.
	o.config.CacheDir = nil
	cmd := &cobra.Command{
		Use:   "watch RESOURCE[.GROUP] [NAME | RESOURCE/NAME] [flags]",
		Short: "LIST and WATCH a resource of a live cluster, printing its objects as kubectl get -w does",
		Long: "LIST the resource, then WATCH it from the list's resourceVersion, keeping an in-memory cache,\n" +
			"and print the objects as kubectl get -w does, with kubectl's flags and printers: the server's\n" +
			"columns for every resource (server-side printing), -o wide|name|json|yaml|jsonpath=…|\n" +
			"custom-columns=…|go-template=…, --show-labels, -L, --no-headers; the initial list, then a row per\n" +
			"change (--output-watch-events adds the event type; --watch-only leaves the list out). A relist\n" +
			"prints only what changed. The reflector's story goes to stderr (--trace): one line per state\n" +
			"transition and per LIST page, each failure once with the server's message, and, on a terminal,\n" +
			"a live status line. SIGINT or SIGTERM stops it and prints a summary there. A request the server\n" +
			"refuses (400, 401, 403, 404) before the first sync ends the command with kubectl's message and\n" +
			"exit status 1, unless --retry-refusals. Credentials and the connection are kubectl's:\n" +
			"--kubeconfig, $KUBECONFIG, ~/.kube/config, the in-cluster service account, and the flags below.\n" +
			"RESOURCE is resolved as kubectl resolves it, through the server's discovery: plural, singular or\n" +
			"short name, with .GROUP or .VERSION.GROUP (configmaps, cm, deployments.apps, deploy,\n" +
			"deployments.v1.apps); --resource/--group/--version name it without discovery. See docs/cli.md.",
		Example:               watchExample,
		DisableFlagsInUseLine: true,
		SilenceErrors:         true,
		SilenceUsage:          true,
	}
	fs := cmd.Flags()
	o.config.AddFlags(fs)
	o.print.AddFlags(cmd)
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "If present, watch the resource in every namespace. Namespace in current context is ignored even if specified with --namespace.")
	fs.StringVarP(&o.res.LabelSelector, "selector", "l", "", "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'. (e.g. -l key1=value1,key2=value2).")
	fs.StringVar(&o.res.FieldSelector, "field-selector", "", "Selector (field query) to filter on, supports '=', '==', and '!='. (e.g. --field-selector key1=value1,key2=value2).")
	fs.BoolVarP(&o.watch, "watch", "w", true, "Accepted as kubectl get's -w: rewatch watch always watches.")
	fs.BoolVar(&o.watchOnly, "watch-only", false, "Watch for changes to the resource, without printing the initial list (nor a snapshot's objects).")
	fs.BoolVar(&o.watchEvents, "output-watch-events", false, "Print each object's watch event type (ADDED, MODIFIED, DELETED), as kubectl's flag.")
	fs.BoolVar(&o.retryRefusals, "retry-refusals", false, "Keep retrying, as a reflector does, a request the server refuses (400, 401, 403, 404) before the first sync, instead of exiting as kubectl does.")
	fs.StringVar(&o.res.Resource, "resource", "", "Resource to watch, plural lower case, e.g. configmaps (instead of RESOURCE, without discovery).")
	fs.StringVar(&o.res.Group, "group", "", "API group of --resource, empty for the core group (e.g. apps).")
	fs.StringVar(&o.res.Version, "version", "v1", "API version of --resource.")
	fs.StringVar(&o.journalPath, "journal", "", "Write the event journal (docs/journal.md) to this file.")
	fs.BoolVar(&o.fullCapture, "journal-full-capture", false, "Record whole objects in the journal, not only keys.")
	fs.Var(&o.trace, "trace", "The reflector's story on stderr: text (a bare --trace), json (JSON lines) or none; --trace json or --trace=json.")
	fs.Lookup("trace").NoOptDefVal = "text"
	fs.StringVar(&o.wireFormat, "format", "auto", "Wire format: auto (the server's tables as JSON for the table outputs, JSON objects for the others), json, or protobuf (built-in types, decoded into their Go types; not with the table outputs).")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "Serve Prometheus metrics on this address at /metrics (e.g. :9090).")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "Keep a snapshot of the cache in this directory (owner-only; it holds the objects) and start from it: a restart resumes the watch instead of listing everything.")
	fs.StringVar(&o.cacheURL, "cache-url", "", "Keep the snapshot of the cache at this URL instead: file:///path (a directory, as --cache-dir) or s3://bucket/prefix?endpoint=host:port&region=… (object storage that replicas share; sealed, so --cache-key-file is required; credentials from the environment or the workload's identity).")
	fs.StringVar(&o.cacheKeyFile, "cache-key-file", "", "Seal the snapshot with the keys of this file (one a line, newest first, each 32 bytes in base64 or hex: openssl rand -base64 32): encrypted and authenticated with the first, read with any. Required with an s3:// --cache-url.")
	goFlags := flag.NewFlagSet("watch", flag.ContinueOnError)
	o.tun.register(goFlags, libraryDefaults())
	fs.AddGoFlagSet(goFlags)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nSee '%s --help' for usage.", err, c.CommandPath())}
	})
	return cmd, o
}

// watchMain runs `rewatch watch` and returns its exit status. Every error is reported as
// kubectl reports it, with kubectl's exit status, 1 (docs/cli.md, "Exit status").
func watchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "rewatch", SilenceErrors: true, SilenceUsage: true}
	root.CompletionOptions.DisableDefaultCmd = true
	cmd, o := newWatchCommand()
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.run(cmd.Context(), args, stdout, stderr)
	}
	root.AddCommand(cmd)
	root.SetArgs(append([]string{"watch"}, watchArgs(args)...))
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprint(stderr, kubectlMessage(err))
	return exitFailure
}

// cacheStore is where --cache-dir, or --cache-url, keeps the snapshot, sealed with
// --cache-key-file's keys; nil when neither is given. Nothing is contacted.
func (o *watchOptions) cacheStore() (persist.Store, error) {
	var keys []persist.Key
	if o.cacheKeyFile != "" {
		if o.cacheDir == "" && o.cacheURL == "" {
			return nil, usagef("--cache-key-file seals the snapshot of --cache-dir or --cache-url; neither is given")
		}
		var err error
		if keys, err = persist.ReadKeyFile(o.cacheKeyFile); err != nil {
			return nil, usagef("--cache-key-file: %v", err)
		}
	}
	switch {
	case o.cacheDir != "" && o.cacheURL != "":
		return nil, usagef("--cache-dir and --cache-url both say where the snapshot goes: give one")
	case o.cacheDir != "":
		if keys == nil {
			return persist.Dir(o.cacheDir), nil
		}
		st, err := persist.Sealed(persist.Dir(o.cacheDir), keys...)
		if err != nil {
			return nil, usagef("--cache-key-file: %v", err)
		}
		return st, nil
	case o.cacheURL != "":
		st, err := objstore.OpenURL(o.cacheURL, keys)
		if err != nil {
			return nil, usagef("--cache-url: %v", err)
		}
		return st, nil
	}
	return nil, nil
}

func (o *watchOptions) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if !o.watch {
		return usagef("--watch=false: rewatch watch only watches (kubectl get without -w is a one-off LIST)")
	}
	resourceArg, name, err := o.positional(args)
	if err != nil {
		return err
	}
	if name != "" && (o.res.LabelSelector != "" || o.res.FieldSelector != "") {
		return errors.New("name cannot be provided when a selector is specified")
	}
	if name != "" && o.allNamespaces {
		return errors.New("a resource cannot be retrieved by name across all namespaces")
	}
	table := o.tableOutput()
	if err := o.checkFormat(table); err != nil {
		return err
	}
	if err := o.tun.validate(); err != nil {
		return err
	}
	if _, err := o.print.ToPrinter(); err != nil {
		// The output format is checked before anything is asked of the server.
		return err
	}
	cache, err := o.cacheStore()
	if err != nil {
		return err
	}
	// client-go's discovery logs what it then returns (through klog, on stderr): the error
	// line says it once.
	klog.SetLogger(logr.Discard())
	rc, err := o.config.ToRESTConfig()
	if err != nil {
		return err
	}
	namespace, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	res := o.res
	if !o.allNamespaces {
		res.Namespace = namespace
	}
	// The kind kubectl's printers name objects by; discovery says it, --resource leaves it to
	// the objects.
	var gk schema.GroupKind
	if resourceArg != "" {
		found, err := resolveResource(rc, resourceArg)
		if err != nil {
			return err
		}
		res.Group, res.Version, res.Resource = found.gvr.Group, found.gvr.Version, found.gvr.Resource
		gk = schema.GroupKind{Group: found.gvr.Group, Kind: found.kind}
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
	if name != "" {
		// One object: listed and watched through its name, as kubectl watches it.
		res.FieldSelector = "metadata.name=" + name
	}
	print, err := o.printer(gk, res)
	if err != nil {
		return err
	}
	cfg, err := rewatch.FromRESTConfig(rc)
	if err != nil {
		return err
	}
	// --request-timeout bounds each LIST as it bounds kubectl's requests; a watch is the
	// reflector's to keep (docs/cli.md).
	cfg.RequestTimeout = rc.Timeout
	cfg.Resource = res
	o.tun.apply(&cfg)
	switch {
	case table:
		cfg.Decoder = newTableDecoder()
	case o.wireFormat == "protobuf":
		cfg.Decoder, cfg.Format = httpapi.Typed(scheme.Scheme), rewatch.Format(o.wireFormat)
	default:
		// The objects as kubectl's get reads them: unstructured, from JSON.
		cfg.Decoder, cfg.Format = httpapi.Unstructured(), httpapi.FormatJSON
	}

	// stdout is the objects', as kubectl's; the story and the summary go to stderr.
	traceOut := stderr
	if o.trace.format == "none" {
		traceOut = io.Discard
	}
	p := newPrinter(traceOut, o.trace.format)
	p.rows = stdout
	rp := newRowPrinter(p, print, table, o.watchEvents)
	rp.skipFirstState = o.watchOnly
	store := newRowStore(rp)
	cfg.Store = store

	// The command ends early when the server refuses the watch before the first sync, when a
	// named object is not there, or when a printer fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		endMu sync.Mutex
		ended error
	)
	end := func(err error) {
		endMu.Lock()
		if ended == nil {
			ended = err
		}
		endMu.Unlock()
		cancel()
	}
	rp.fail = end
	synced := false
	cfg.OnTransition = func(t driver.Transition) {
		p.transition(t)
		if !synced && !o.retryRefusals && refusedBeforeSync(t) {
			end(listRefusal(t, schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource},
				o.res.LabelSelector, o.res.FieldSelector))
		}
		if !synced && t.Snapshot.Synced {
			synced = true
			if name != "" && len(store.ListKeys()) == 0 {
				end(apierrors.NewNotFound(schema.GroupResource{Group: res.Group, Resource: res.Resource}, name))
			}
		}
	}
	// The reflector's own log lines would repeat the transition lines printed here: each
	// failure is told once, on its transition line.
	cfg.Logger = slog.New(slog.DiscardHandler)
	if o.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		m, err := metrics.NewPrometheus(reg, metrics.Options{})
		if err != nil {
			return err
		}
		cfg.Metrics = m
		stopMetrics, err := serveMetrics(o.metricsAddr, reg)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if cache != nil {
		cfg.Persist = cache
		p.persisted = true
	}
	if o.journalPath != "" {
		f, err := os.Create(o.journalPath)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		defer f.Close()
		cfg.Journal, cfg.JournalFullCapture = f, o.fullCapture
	}
	r, err := rewatch.New(cfg)
	if err != nil {
		return err
	}
	if o.trace.format == "text" {
		p.note("start", fmt.Sprintf("watching %s at %s (wire format %s)", res, cfg.Server, r.Stats().WireFormat), nil)
	}
	var stopStatus func()
	if o.trace.format == "text" && isTerminal(stderr) {
		stopStatus = startStatus(ctx, p, r.Stats)
	}
	runErr := r.Run(ctx)
	if stopStatus != nil {
		stopStatus()
	}
	st := r.Stats()
	p.summary(st)
	endMu.Lock()
	defer endMu.Unlock()
	switch {
	case ended != nil:
		return ended
	case runErr != nil:
		return runErr
	case !st.Synced:
		return notSyncedError(st)
	}
	return nil
}

// positional reads RESOURCE[.GROUP] [NAME] or RESOURCE/NAME, as kubectl get takes them, or
// nothing with --resource.
func (o *watchOptions) positional(args []string) (resource, name string, err error) {
	byFlag := o.res.Resource != "" || o.res.Group != "" || o.res.Version != "v1"
	switch {
	case len(args) == 0 && o.res.Resource == "":
		return "", "", usagef("a resource is required (e.g. rewatch watch configmaps, or --resource configmaps)")
	case len(args) == 0:
		return "", "", nil
	case byFlag:
		return "", "", usagef("give the resource either as RESOURCE[.GROUP] or with --resource/--group/--version, not both")
	}
	if strings.Contains(args[0], "/") {
		if len(args) > 1 {
			return "", "", fmt.Errorf("watch is only supported on individual resources and resource collections, but %d resources were found", len(args))
		}
		resource, name, _ = strings.Cut(args[0], "/")
		if resource == "" || name == "" || strings.Contains(name, "/") {
			return "", "", fmt.Errorf("arguments in resource/name form must have a single resource and name")
		}
		return resource, name, nil
	}
	if len(args) > 2 {
		return "", "", fmt.Errorf("watch is only supported on individual resources and resource collections, but %d resources were found", len(args)-1)
	}
	if len(args) == 2 {
		name = args[1]
	}
	return args[0], name, nil
}

// tableOutput: kubectl asks the server for its table for the human-readable outputs only
// (none, wide; a --template without -o is a go-template).
func (o *watchOptions) tableOutput() bool {
	format := *o.print.OutputFormat
	template := o.print.TemplateFlags.TemplateArgument != nil && *o.print.TemplateFlags.TemplateArgument != ""
	return (format == "" && !template) || format == "wide"
}

func (o *watchOptions) checkFormat(table bool) error {
	switch o.wireFormat {
	case "auto", "json":
	case "protobuf":
		if table {
			return usagef("--format=protobuf: the server prints its tables in JSON only; use it with -o json, yaml, name or a template")
		}
	default:
		return usagef("invalid argument %q for \"--format\" flag: want one of auto, json, protobuf", o.wireFormat)
	}
	return nil
}

// printer is kubectl get's printer for the output flags (its ToPrinter): the resource's kind
// for the name output and --show-kind, a NAMESPACE column with -A, the typed objects' kind
// set, and the initial list sorted with --sort-by.
func (o *watchOptions) printer(gk schema.GroupKind, res rewatch.Resource) (printers.ResourcePrinter, error) {
	flags := o.print.Copy()
	if !gk.Empty() {
		flags.SetKind(gk)
	}
	if o.allNamespaces {
		if err := flags.EnsureWithNamespace(); err != nil {
			return nil, err
		}
	}
	print, err := flags.ToPrinter()
	if err != nil {
		return nil, err
	}
	print, err = printers.NewTypeSetter(scheme.Scheme).WrapToPrinter(print, nil)
	if err != nil {
		return nil, err
	}
	if sortBy := *o.print.HumanReadableFlags.SortBy; sortBy != "" {
		print = &get.SortingPrinter{Delegate: print, SortField: sortBy}
	}
	return print, nil
}

// refusedBeforeSync: a request refused as one that will not pass by itself (400, 401, 403,
// 404, any other 4xx but 429) while the store has never synced; kubectl exits at once with
// it (docs/cli.md, "Exit status").
func refusedBeforeSync(t driver.Transition) bool {
	if t.Snapshot.Synced || t.Event.Failure == nil || t.Event.Failure.Status == nil {
		return false
	}
	switch t.Cause {
	case fsm.CauseListRejected, fsm.CauseWatchRejectedOnce, fsm.CauseWatchRejected:
		return true
	}
	return false
}

// listRefusal is the refusal t carries, as kubectl's get reports it: a LIST refused as a bad
// request or not found says what was listed, with which selectors, before the server's
// message (kubectl's resource builder words it so).
func listRefusal(t driver.Transition, gvr schema.GroupVersionResource, labelSelector, fieldSelector string) error {
	err := t.Event.Failure.Err()
	var se *apierrors.StatusError
	if t.Cause != fsm.CauseListRejected || !(apierrors.IsBadRequest(err) || apierrors.IsNotFound(err)) || !errors.As(err, &se) {
		return err
	}
	st := se.ErrStatus
	if labelSelector == "" && fieldSelector == "" {
		st.Message = fmt.Sprintf("Unable to list %q: %v", gvr, st.Message)
	} else {
		st.Message = fmt.Sprintf("Unable to find %q that match label selector %q, field selector %q: %v", gvr, labelSelector, fieldSelector, st.Message)
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// notSyncedError says why a watch stopped before it ever held the resource: a script must be
// able to tell "watched, then stopped" from "never got the initial list".
func notSyncedError(st rewatch.Stats) error {
	if st.LastFailure == nil {
		return errors.New("stopped before the initial list completed; the server had not answered")
	}
	return fmt.Errorf("stopped before the initial list completed; last failure: %s", st.LastFailure)
}

// serveMetrics listens before returning so that a taken port is an error at once, not a log
// line.
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
