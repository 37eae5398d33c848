#!/usr/bin/env bash
# Plugin benchmarks (cmd/agenthost/plugins_bench_test.go) with real binaries:
#   call     simulator → host → clock plugin, beside the built-in service and a
#            bare go-plugin RPC to the same binary (p50/p99; host/bare ratio)
#   reload   rename into the plugin folder → new register at the simulator
#   start    plugin start time with and without AutoMTLS
#   rss      resident memory of the host and of each idle bundled plugin
# Usage: scripts/bench-plugins.sh [calls]   (default 10000 calls)
# The p99 of 3000 calls is the 30th slowest: between runs of the same code
# its host/bare ratio moved by ±0.3 (a GC or a descheduled thread in either
# process decides it); the 100th slowest of 10000 moves by about half that.
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-10000}
run() { go test -run='^$' -bench="$1" -benchtime="$2" -count=1 ./cmd/agenthost/ | grep -E '^Benchmark'; }
out=$(run '^BenchmarkPluginCall$' "${calls}x"; run '^BenchmarkPlugin(Reload|Start|RSS)$' 1x)
echo "$out"
echo
echo "$out" | awk '{
  name=$1; sub(/^BenchmarkPlugin/, "", name); sub(/-[0-9]+$/, "", name)
  for (i=3; i<NF; i+=2) if ($(i+1) != "ns/op") printf "%-22s %-30s %10s\n", name, $(i+1), $i
}'
