// Package metrics adapts rewatch.Metrics to Prometheus. The caller owns the registry, so a
// program with several reflectors gives each its own ConstLabels (or Subsystem) and registers
// them all on one Registerer.
package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/fsm"
)

// Options name the metrics. The zero value gives rewatch_* names.
type Options struct {
	// Namespace defaults to "rewatch"; Subsystem is optional.
	Namespace, Subsystem string
	// ConstLabels are added to every series, e.g. {"resource": "configmaps"}.
	ConstLabels prometheus.Labels
	// WaitBuckets are the histogram buckets in seconds for backoff waits. The default spans
	// the reflector's range: a Retry-After floor of a few ms up to the 5 minute cap.
	WaitBuckets []float64
}

// DefaultWaitBuckets covers 5 ms to 5 min roughly geometrically.
var DefaultWaitBuckets = []float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Prometheus implements rewatch.Metrics. Its methods are safe for concurrent use and do not
// block, as the reflector requires.
type Prometheus struct {
	requests    *prometheus.CounterVec
	transitions *prometheus.CounterVec
	events      *prometheus.CounterVec
	waits       *prometheus.HistogramVec
	objects     prometheus.Gauge

	// Curried children avoid a label lookup per watch frame, the hot path.
	eventByType map[fsm.WatchEventType]prometheus.Counter
}

var _ rewatch.Metrics = (*Prometheus)(nil)

// NewPrometheus creates the collectors and registers them on reg. If any registration fails
// the ones already registered are unregistered, so a retry with other Options starts clean.
func NewPrometheus(reg prometheus.Registerer, opts Options) (*Prometheus, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil Registerer")
	}
	if opts.Namespace == "" {
		opts.Namespace = "rewatch"
	}
	if opts.WaitBuckets == nil {
		opts.WaitBuckets = DefaultWaitBuckets
	}
	name := func(n, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: opts.Namespace, Subsystem: opts.Subsystem, Name: n, Help: help, ConstLabels: opts.ConstLabels}
	}
	p := &Prometheus{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts(name("requests_total",
			"LIST page and WATCH requests issued, by kind.")), []string{"kind"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts(name("transitions_total",
			"State machine transitions, by source state, target state and cause.")), []string{"from", "to", "cause"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts(name("watch_events_total",
			"Watch frames received, by type.")), []string{"type"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: opts.Namespace, Subsystem: opts.Subsystem, Name: "backoff_wait_seconds",
			Help:        "Completed backoff and Retry-After waits, by the cause that started them.",
			ConstLabels: opts.ConstLabels, Buckets: opts.WaitBuckets,
		}, []string{"reason"}),
		objects: prometheus.NewGauge(prometheus.GaugeOpts(name("objects",
			"Objects in the reflector's store."))),
		eventByType: map[fsm.WatchEventType]prometheus.Counter{},
	}
	for _, t := range []fsm.WatchEventType{fsm.Added, fsm.Modified, fsm.Deleted, fsm.Bookmark} {
		p.eventByType[t] = p.events.WithLabelValues(t.String())
	}
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{p.requests, p.transitions, p.events, p.waits, p.objects} {
		if err := reg.Register(c); err != nil {
			for _, d := range done {
				reg.Unregister(d)
			}
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
		done = append(done, c)
	}
	return p, nil
}

func (p *Prometheus) Request(kind string) { p.requests.WithLabelValues(kind).Inc() }

func (p *Prometheus) Transition(from, to fsm.State, cause fsm.Cause) {
	p.transitions.WithLabelValues(from.String(), to.String(), cause.String()).Inc()
}

func (p *Prometheus) Waited(reason fsm.Cause, d time.Duration) {
	p.waits.WithLabelValues(reason.String()).Observe(d.Seconds())
}

func (p *Prometheus) WatchEvent(t fsm.WatchEventType) {
	// The map is never written after construction, so reading it needs no lock.
	if c, ok := p.eventByType[t]; ok {
		c.Inc()
		return
	}
	p.events.WithLabelValues(t.String()).Inc()
}

func (p *Prometheus) Objects(n int) { p.objects.Set(float64(n)) }

// RequestsCounter is the requests_total child for kind, for tests and dashboards-in-code.
func (p *Prometheus) RequestsCounter(kind string) prometheus.Counter {
	return p.requests.WithLabelValues(kind)
}

// ObjectsGauge is the objects gauge.
func (p *Prometheus) ObjectsGauge() prometheus.Gauge { return p.objects }
