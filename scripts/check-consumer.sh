#!/usr/bin/env bash
# What a controller author takes on by adding rewatch to a go.mod. Builds two throw-away
# consumer modules — the same small program on plain client-go, and on rewatch's façade — and
# checks that:
#   1. the rewatch consumer's module graph (go list -m all) has at most 3 modules more than the
#      client-go one;
#   2. versions the consumer pinned below the ones rewatch's tools use stay pinned: the
#      library's go.mod must not require Prometheus or gonum/plot;
#   3. the README's "Using it in a controller" program (between its consumer:begin and
#      consumer:end markers), in an empty module that depends on the checkout as the README
#      says, builds and runs: against the simulator, it prints what its lister and Stats saw.
# Needs the Go module proxy (or a warm module cache). The README's test command runs it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

k8s=$(cd "$root" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/client-go)

mkdir -p "$work/clientgo" "$work/rewatch"
cat >"$work/clientgo/main.go" <<'GO'
package main

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", "kubeconfig")
	if err != nil {
		panic(err)
	}
	dc := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return dc.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return dc.Watch(ctx, o) },
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	cache.NewReflector(lw, &unstructured.Unstructured{}, store, 0).RunWithContext(context.Background())
}
GO
cat >"$work/rewatch/main.go" <<'GO'
package main

import (
	"context"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rewatch/rewatch"
)

func main() {
	restConfig, err := clientcmd.BuildConfigFromFlags("", "kubeconfig")
	if err != nil {
		panic(err)
	}
	cfg, err := rewatch.FromRESTConfig(restConfig)
	if err != nil {
		panic(err)
	}
	cfg.Resource = rewatch.Resource{Version: "v1", Resource: "configmaps"}
	cfg.Store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, err := rewatch.New(cfg)
	if err != nil {
		panic(err)
	}
	_ = r.Run(context.Background())
}
GO

(cd "$work/clientgo" && go mod init example.com/clientgo >/dev/null 2>&1 && go get "k8s.io/client-go@$k8s" >/dev/null 2>&1 && go mod tidy >/dev/null)
(cd "$work/rewatch" && go mod init example.com/rewatch >/dev/null 2>&1 &&
	go mod edit -require=github.com/rewatch/rewatch@v0.0.0 -replace=github.com/rewatch/rewatch="$root" &&
	go mod edit -require=github.com/prometheus/client_golang@v1.24.0 -require=gonum.org/v1/plot@v0.14.0 &&
	go mod tidy -e >/dev/null)

base=$(cd "$work/clientgo" && go list -m all | wc -l)
ours=$(cd "$work/rewatch" && go list -m all | wc -l)
echo "check-consumer: go list -m all: client-go consumer $base modules, rewatch consumer $ours"
extra=$(comm -13 <(cd "$work/clientgo" && go list -m -f '{{.Path}}' all | sort) <(cd "$work/rewatch" && go list -m -f '{{.Path}}' all | sort) | grep -v '^example.com/' | tr '\n' ' ')
echo "check-consumer: modules only the rewatch consumer has: $extra"
status=0
if ((ours > base + 3)); then
	echo "check-consumer: FAIL: the rewatch consumer has more than 3 modules over plain client-go" >&2
	status=1
fi
# go mod tidy drops requirements nothing imports, so pin them again the way a consumer that
# does import them would, and check that rewatch does not raise them.
(cd "$work/rewatch" && go mod edit -require=github.com/prometheus/client_golang@v1.24.0 -require=gonum.org/v1/plot@v0.14.0)
for pin in github.com/prometheus/client_golang@v1.24.0 gonum.org/v1/plot@v0.14.0; do
	got=$(cd "$work/rewatch" && go list -m -f '{{.Path}}@{{.Version}}' "${pin%@*}")
	if [[ $got != "$pin" ]]; then
		echo "check-consumer: FAIL: pinned $pin, selected $got" >&2
		status=1
	else
		echo "check-consumer: $pin stays pinned"
	fi
done
# 3. The README's program, depended on as the README says, run against the simulator.
mkdir -p "$work/readme"
awk '/<!-- consumer:begin -->/{on=1; next} /<!-- consumer:end -->/{on=0} on && !/^```/' "$root/README.md" >"$work/readme/controller.go"
cat >"$work/readme/main.go" <<'GO'
package main

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/sim"
)

func main() {
	s := sim.New(sim.Options{})
	url, err := s.Start()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	for name, labels := range map[string]map[string]string{"selected": {"app": "demo"}, "other": {"app": "other"}} {
		if _, err := s.CreateWithLabels(sim.ConfigMaps, "default", name, labels, nil); err != nil {
			panic(err)
		}
	}
	if err := runController(context.Background(), &rest.Config{Host: url}); err != nil {
		panic(err)
	}
}
GO
(cd "$work/readme" && go mod init example.com/readme >/dev/null 2>&1 &&
	go mod edit -require=github.com/rewatch/rewatch@v0.0.0 -replace=github.com/rewatch/rewatch="$root" &&
	go mod tidy >/dev/null 2>&1)
if out=$(cd "$work/readme" && go run . 2>&1) && grep -q '^1 configmaps; LISTs 1, LISTs avoided 0, relists 0, answered in protobuf$' <<<"$out"; then
	echo "check-consumer: the README's program builds and runs: $out"
else
	echo "check-consumer: FAIL: the README's program: $out" >&2
	status=1
fi
exit $status
