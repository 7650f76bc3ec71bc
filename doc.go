// Package rewatch is the core of a Kubernetes reflector: it LISTs a resource, WATCHes it from
// the list's resourceVersion, and keeps a store in sync. When a watch fails transiently (429,
// InternalError, a dropped connection) it re-opens the watch from the last resourceVersion it
// saw instead of relisting everything.
//
// This package is the small façade with good defaults. The parts are usable on their own:
// fsm (the vocabulary and transition table), transitions (the pure decisions), driver (HTTP,
// clock and store), journal (record and replay), retry (client-go-style retry helpers).
//
//	cfg, err := rewatch.FromRESTConfig(restConfig)
//	cfg.Resource = rewatch.Resource{Version: "v1", Resource: "configmaps"}
//	r, err := rewatch.New(cfg)
//	go r.Run(ctx)
package rewatch
