#!/usr/bin/env bash
# Runs every benchmark of bench/ and writes the raw results (storm and sync JSON, rewatch's
# journals, go test output) to $RAW (default .cache/bench/<time>, not tracked), and what a
# reader needs — the machine, benchstat and storm summaries — to bench/results/:
#   1. the transient storm on the real kube-apiserver through the fault proxy, one run per seed
#      (rewatch, client-go, client-go in LIST mode and a relist-on-error baseline at once);
#   2. watch-stream throughput (client side);
#   3. initial sync of 10,000 and 50,000 objects on the real kube-apiserver, plus the
#      client-side B/op benchmark;
#   4. transitions.Step per event kind;
#   5. informer memory per object and the Pod initial sync in JSON and protobuf;
#   6. fleets of reflectors through faults the server makes itself (rewatch-bench fleet);
#   7. a rollout of 200 replicas sharing one bucket (SeaweedFS, built by
#      scripts/build-seaweedfs.sh), and a controller of 20,000 ConfigMaps restarted as a new pod;
# then summarises them with benchstat and rewatch-bench summary, and redraws the charts.
# The full storm schedule takes about 45 minutes per seed (the baseline is the slowest to get
# through it). Knobs (environment):
#   RAW=DIR           where the raw results go
#   SEEDS="11 12 13"  storm seeds, run one after another
#   SCALE=1           fraction of the storm's fault schedule (0.25 for a quick look)
#   COUNT=6           repetitions of each go test benchmark
#   SIZES=10000,50000 initial-sync sizes; REPEAT=3 repetitions of each sync case
#   FLEET=50,200      fleet sizes
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

: "${SEEDS:=11 12 13}" "${SCALE:=1}" "${COUNT:=6}" "${SIZES:=10000,50000}" "${REPEAT:=3}" "${FLEET:=50,200}"
out=bench/results
stamp=$(date -u +%Y%m%d-%H%M%S)
: "${RAW:=.cache/bench/$stamp}"
benchstat=(go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da)
mkdir -p "$out" "$RAW"

scripts/build-apiserver.sh
scripts/build-seaweedfs.sh
bin=$(mktemp -d)/rewatch-bench
go build -o "$bin" ./bench/cmd/rewatch-bench

echo "== machine"
{ uname -srm; nproc; grep -m1 'model name' /proc/cpuinfo || true; go version; uptime; } | tee "$out/machine-$stamp.txt"

echo "== 1. storm (seeds: $SEEDS, scale $SCALE)"
storms=()
for seed in $SEEDS; do
	"$bin" storm -objects 5000 -scale "$SCALE" -seed "$seed" -out "$RAW" 2> >(grep -v '^[IEW][0-9]\{4\} ' >&2)
	storms+=("$(ls -t "$RAW"/storm-*.json | head -1)")
done
"$bin" summary "${storms[@]}" | tee "$out/storm-summary-$stamp.md"

echo "== 2. throughput"
go test -run '^$' -bench Throughput -benchmem -benchtime 1x -count "$COUNT" ./bench/ | tee "$RAW/throughput-$stamp.txt"
"${benchstat[@]}" "$RAW/throughput-$stamp.txt" | tee "$out/throughput-$stamp.benchstat.txt"

echo "== 3. initial sync"
"$bin" sync -sizes "$SIZES" -repeat "$REPEAT" -out "$RAW" 2> >(grep -v '^[IEW][0-9]\{4\} ' >&2)
go test -run '^$' -bench InitialSync -benchmem -count "$COUNT" ./bench/ | tee "$RAW/initial-sync-$stamp.txt"
"${benchstat[@]}" "$RAW/initial-sync-$stamp.txt" | tee "$out/initial-sync-$stamp.benchstat.txt"

echo "== 4. transitions.Step"
go test -run '^$' -bench . -benchmem -count "$COUNT" ./transitions/ | tee "$RAW/step-$stamp.txt"
"${benchstat[@]}" "$RAW/step-$stamp.txt" | tee "$out/step-$stamp.benchstat.txt"

echo "== 5. informer memory, Pod sync in JSON and protobuf"
go test -run '^$' -bench 'InformerMemory|PodSync' -benchmem -benchtime 1x -count "$COUNT" ./bench/ | tee "$RAW/memory-$stamp.txt"
"${benchstat[@]}" "$RAW/memory-$stamp.txt" | tee "$out/memory-$stamp.benchstat.txt"

echo "== 5b. informer handlers: 1, 10, 100 handlers, and handler churn, against client-go's informer"
go test -run '^$' -bench 'InformerHandlers|InformerHandlerChurn' -benchmem -count "$COUNT" ./bench/ | tee "$RAW/handlers-$stamp.txt"
"${benchstat[@]}" "$RAW/handlers-$stamp.txt" | tee "$out/handlers-$stamp.benchstat.txt"

echo "== 6. fleets (sizes: $FLEET)"
"$bin" fleet -sizes "$FLEET" -objects 5000 -out "$RAW" -charts bench 2> >(grep -v '^[IEW][0-9]\{4\} ' >&2) | tee "$out/fleet-$stamp.md"

echo "== 7. a rollout through one bucket (SeaweedFS), and a new pod 30 s after the old one stopped"
"$bin" fleet -sizes 200 -objects 5000 -scenarios rollout -variants rewatch-bucket,client-go,rewatch-emptydir -out "$RAW" \
	2> >(grep -v '^[IEW][0-9]\{4\} ' >&2) | tee "$out/rollout-bucket-$stamp.md"
"$bin" restart -objects 20000 -down 30s -scenarios down -variants rewatch-bucket,rewatch,client-go -out "$RAW" \
	2> >(grep -v '^[IEW][0-9]\{4\} ' >&2) | tee "$out/restart-bucket-$stamp.md"

echo "== charts"
"$bin" charts -storm "$(IFS=,; echo "${storms[*]}")" -throughput "$RAW/throughput-$stamp.txt" -dir bench
echo "raw results: $RAW"
