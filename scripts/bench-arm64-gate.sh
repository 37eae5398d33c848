#!/usr/bin/env bash
# The wake-word gate on the Pi's architecture (issue 27): builds
# host/wakeword's tests for arm64 (Debian's cross compiler and multiarch -dev
# libraries, scripts/install-cross-deps.sh), runs BenchmarkGatedFrontEnd under
# qemu-user (binfmt_misc) with ONNX Runtime 1.30's arm64 library from the
# pinned onnxruntime-node pack, then the same natively, and prints, per room,
# the share of the audio the gate hands to the detector, its model runs and
# the front end's CPU (canceller, suppressor, gate, models), and the speaking
# room's figures relative to the empty room's. Under emulation only the ratio
# means something. A benchmark, not a test: scripts/test.sh does not run it.
#
# qemu-user 7.2 (Debian 12) shows an arm64 program the host's own
# /proc/cpuinfo; ONNX Runtime's cpuinfo finds no ARM processor in it and
# dereferences NULL inside dlopen (its static initialisers). So the emulated
# benchmark runs in a mount namespace of its own where /proc/cpuinfo is a
# Cortex-A53's (the Pi 3's and Zero 2 W's core; QEMU_CPU=cortex-a53 too, so
# ONNX Runtime picks the kernels it picks there). Needs root (or user
# namespaces) for that mount.
#
# Usage: scripts/bench-arm64-gate.sh [-bench REGEXP]
#   default REGEXP: 'GatedFrontEnd/room=(empty|replies)/gate=true' (about 7
#   minutes under qemu here; the gate off costs ~500 s a room there).
#   AGENTHOST_BENCH_SECONDS: the rooms' length (40).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bench='GatedFrontEnd/room=(empty|replies)/gate=true'
if [ $# -eq 2 ] && [ "$1" = -bench ]; then
  bench=$2
elif [ $# -ne 0 ]; then
  echo "usage: scripts/bench-arm64-gate.sh [-bench REGEXP]" >&2; exit 2
fi
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { echo "bench-arm64-gate: no binfmt_misc entry for aarch64: scripts/install-cross-deps.sh (qemu-user-static, binfmt-support)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

packs=$(scripts/fetch-wakeword.sh --pack "${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/wakeword-packs")
tar xzf "$packs/onnxruntime-node-1.30.0.tgz" -C "$out" package/bin/napi-v6/linux/arm64/libonnxruntime.so.1
ort=$out/package/bin/napi-v6/linux/arm64/libonnxruntime.so.1

# One Cortex-A53 per CPU the kernel lists (cpuinfo matches the two).
ncpu=$(( $(sed 's/.*-//' /sys/devices/system/cpu/present) + 1 ))
for ((i = 0; i < ncpu; i++)); do
  printf 'processor\t: %d\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd03\nCPU revision\t: 4\n\n' "$i"
done > "$out/cpuinfo"

CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=aarch64-linux-gnu-gcc \
  PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig \
  nice -n 19 go test -c -o "$out/wakeword.test" ./host/wakeword
file "$out/wakeword.test" | cut -d, -f1-2

# Only the Benchmark lines are shown as they come; a failed run, or one
# where -bench matched nothing, shows its whole output before the trap
# removes it.
failed() { echo "bench-arm64-gate: the run failed or ran no benchmark; its output:" >&2; cat "$1" >&2; exit 1; }
ns=(unshare -m)
[ "$(id -u)" = 0 ] || ns=(unshare -Urm)
echo "arm64 under $(qemu-aarch64-static --version | head -1), QEMU_CPU=cortex-a53:"
(cd host/wakeword && AGENTHOST_TEST_ONNXRUNTIME=$ort QEMU_CPU=cortex-a53 nice -n 19 "${ns[@]}" \
  sh -c 'mount --bind "$1" /proc/cpuinfo && shift && exec "$@"' sh "$out/cpuinfo" \
  "$out/wakeword.test" -test.run='^$' -test.bench="$bench" -test.benchtime=1x) | tee "$out/arm64.txt" | grep -E '^Benchmark' ||
  failed "$out/arm64.txt"
echo "$(go env GOARCH), natively:"
nice -n 19 go test ./host/wakeword/ -run='^$' -bench="$bench" -benchtime=1x | tee "$out/native.txt" | grep -E '^Benchmark' ||
  failed "$out/native.txt"

# The figures, and each room's relative to the empty room with the gate in the same state.
summary() {
  awk -v arch="$1" '
    /^BenchmarkGatedFrontEnd\// {
      split($1, p, "/"); room = p[2]; sub(/^room=/, "", room); gate = p[3]; sub(/-[0-9]+$/, "", gate)
      for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
      n++; rooms[n] = room; gates[n] = gate
      fe[n] = v["%core-front-end"]; mr[n] = v["model-runs"]; au[n] = v["%audio-to-detector"]
      if (room == "empty") { efe[gate] = fe[n]; emr[gate] = mr[n] }
    }
    END {
      for (i = 1; i <= n; i++) {
        rel = ""
        if (gates[i] in efe && rooms[i] != "empty" && efe[gates[i]] > 0 && emr[gates[i]] > 0)
          rel = sprintf("  = %.1fx the empty room CPU, %.1fx its model runs", fe[i] / efe[gates[i]], mr[i] / emr[gates[i]])
        printf "%-6s %-8s %-10s audio to detector %6.2f%%  model runs %5d  front end %7.2f%% of a core%s\n", arch, rooms[i], gates[i], au[i], mr[i], fe[i], rel
      }
    }' "$2"
}
echo "summary (CPU share of one core for the audio's length; arm64 is emulated: compare ratios only):"
summary arm64 "$out/arm64.txt"
summary "$(go env GOARCH)" "$out/native.txt"
