#!/usr/bin/env bash
# The quiet room on the Pi's architecture (issue 27), under qemu-user
# (binfmt_misc): builds the wake-word gate's tests and the capture path's
# benchmark for arm64 (Debian's cross compiler and multiarch -dev libraries,
# scripts/install-cross-deps.sh), runs the gate's tests there (the detector runs
# no model in a quiet room, the first phrase after a silence is handed on
# whole) and BenchmarkCapturePath in a quiet room and with a reply playing.
# Under emulation only the ratio (quiet vs speaking) means something; the
# script prints the same benchmark natively after it.
# The detector's models under qemu-user: scripts/bench-arm64-gate.sh (ONNX
# Runtime faults in dlopen there unless /proc/cpuinfo is an ARM one's).
# Usage: scripts/bench-wake-arm64.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { echo "bench-wake-arm64: no binfmt_misc entry for aarch64: scripts/install-cross-deps.sh (qemu-user-static, binfmt-support)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cross() {
  CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=aarch64-linux-gnu-gcc \
    PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig "$@"
}
cross go test -c -o "$out/gate.test" ./audio/gate
cross go test -c -o "$out/capture.test" ./audio/capture
file "$out/capture.test" | cut -d, -f1-2
(cd audio/gate && "$out/gate.test" -test.count=1 | tail -1)
(cd audio/capture && "$out/capture.test" -test.run='^$' -test.bench='CapturePath' -test.benchtime=1x | grep -E '^Benchmark')
echo "the same on this machine's own architecture:"
go test -run='^$' -bench='CapturePath' -benchtime=1x ./audio/capture/ | grep -E '^Benchmark'
