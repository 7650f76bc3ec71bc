#!/usr/bin/env bash
# Runs controller-runtime's own pkg/cache test suite with every informer its cache builds made
# by rewatch. controller-runtime's code is not part of this repository: the script copies the
# module from the Go module cache (downloading it through the module proxy if needed) into a
# temporary directory and patches one line there — the default of cache.Options.NewInformer in
# pkg/cache/internal/informers.go (client-go's cache.NewSharedIndexInformer) becomes a package
# variable, which an added file sets to rewatch's informer.NewSharedIndexInformer. A test that
# sets NewInformer itself keeps its own. The copy's go.mod requires this checkout of rewatch
# through a replace directive.
#
# The suite starts kube-apiserver and etcd with envtest: KUBEBUILDER_ASSETS (default
# $REWATCH_BIN_DIR, else /work/bin) must hold both binaries (scripts/build-apiserver.sh).
#
#   scripts/controller-runtime-cache-suite.sh            # rewatch's informers
#   REWATCH_CR_INFORMER=restconfig scripts/controller-runtime-cache-suite.sh  # informer.ForRESTConfig's
#   REWATCH_CR_BASELINE=1 scripts/controller-runtime-cache-suite.sh   # unpatched, for comparison
#
# Extra arguments go to go test (e.g. -ginkgo.focus='Informer'). It prints ginkgo's summary line
# for each package and exits with go test's status.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${CONTROLLER_RUNTIME_VERSION:-$(cd "$root/e2e/controllers" && GOWORK=off go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime)}"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${REWATCH_BIN_DIR:-/work/bin}}"
for bin in kube-apiserver etcd; do
	if [[ ! -x $KUBEBUILDER_ASSETS/$bin ]]; then
		echo "controller-runtime-cache-suite: no $bin in $KUBEBUILDER_ASSETS (scripts/build-apiserver.sh builds it)" >&2
		exit 2
	fi
done
export GOWORK=off GOFLAGS=-mod=mod

src=$(go mod download -json "sigs.k8s.io/controller-runtime@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
cd "$work"

if [[ -z ${REWATCH_CR_BASELINE:-} ]]; then
	informers=pkg/cache/internal/informers.go
	grep -q '^	newInformer := cache.NewSharedIndexInformer$' "$informers" || {
		echo "controller-runtime-cache-suite: $informers no longer has the line this script patches" >&2
		exit 2
	}
	sed -i 's/^	newInformer := cache.NewSharedIndexInformer$/	config, newInformer := rewatchInformers(config, options)/' "$informers"
	cat >pkg/cache/internal/zz_rewatch.go <<'GO'
package internal

import (
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	rewatchinformer "github.com/rewatch/rewatch/informer"
)

// rewatchInformers is the informer constructor controller-runtime's cache uses when its Options
// set none: rewatch's, for this run of the suite. REWATCH_CR_INFORMER=restconfig makes it
// informer.ForRESTConfig's, whose config and HTTP client the informers' ListerWatchers then use
// in place of the cache's own; otherwise it is informer.NewSharedIndexInformer. Each informer
// built is logged, so that the run shows how many rewatch stood in for.
func rewatchInformers(config *rest.Config, options *InformersOpts) (*rest.Config, func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer) {
	build := rewatchinformer.NewSharedIndexInformer
	if os.Getenv("REWATCH_CR_INFORMER") == "restconfig" {
		cfg, newInformer, err := rewatchinformer.ForRESTConfig(config, options.Scheme, rewatchinformer.Options{})
		if err != nil {
			panic(err)
		}
		if options.HTTPClient, err = rest.HTTPClientFor(cfg); err != nil {
			panic(err)
		}
		config, build = cfg, newInformer
	}
	return config, func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		inf := build(lw, obj, resync, indexers)
		fmt.Fprintf(os.Stderr, "rewatch-cache-suite: built %T for %T\n", inf, obj)
		return inf
	}
}
GO
	go mod edit -require=github.com/rewatch/rewatch@v0.0.0 -replace=github.com/rewatch/rewatch="$root"
	echo "controller-runtime-cache-suite: controller-runtime $version, every default informer rewatch's (${REWATCH_CR_INFORMER:-listwatch}, $root)"
else
	echo "controller-runtime-cache-suite: controller-runtime $version, unpatched"
fi
go mod tidy >/dev/null 2>&1 || go mod tidy
go vet ./pkg/cache/internal/ >/dev/null

status=0
go test -v -count=1 -timeout 30m ./pkg/cache/... -ginkgo.no-color "$@" >"$work/out.txt" 2>&1 || status=$?
grep -E '^(ok|FAIL|panic)|Ran [0-9]+ of|Passed \||\[FAIL\]' "$work/out.txt" || true
echo "controller-runtime-cache-suite: informers built by rewatch: $(grep -c '^rewatch-cache-suite: built \*informer.Informer' "$work/out.txt" || true)"
if [[ ${REWATCH_CR_INFORMER:-} == restconfig ]]; then
	echo "controller-runtime-cache-suite: of which through the ListerWatcher instead of HTTP: $(grep -c "informer reads through controller-runtime's ListerWatcher" "$work/out.txt" || true)"
fi
if ((status != 0)) && [[ -n ${REWATCH_CR_KEEP:-} ]]; then
	cp "$work/out.txt" "$REWATCH_CR_KEEP"
	echo "controller-runtime-cache-suite: full output in $REWATCH_CR_KEEP"
fi
exit "$status"
