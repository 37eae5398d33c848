#!/usr/bin/env bash
# Decoder throughput against a bare bytes.Index scan for ##END over the same stream.
# Usage: scripts/bench-codec.sh [benchtime]   (default 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(go test -run='^$' -bench='^BenchmarkDecode' -benchtime="${1:-2s}" ./proto/voice/)
echo "$out" | grep -E '^Benchmark'
echo "$out" | awk '
  /^BenchmarkDecode\// { name=$1; sub(/^BenchmarkDecode\//, "", name); sub(/-[0-9]+$/, "", name)
                         for (i=1;i<=NF;i++) if ($(i+1)=="MB/s") mbs[name]=$i }
  END { for (k in mbs) if (k ~ /-(Decode|Next)$/) { base=k; sub(/-(Decode|Next)$/, "-scan-baseline", base)
          printf "ratio %-14s %6.1f%% of the bare scan (%s vs %s MB/s)\n", k, 100*mbs[k]/mbs[base], mbs[k], mbs[base] } }' | sort
