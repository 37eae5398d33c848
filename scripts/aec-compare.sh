#!/usr/bin/env bash
# Measures the echo cancellers considered for the capture path on the same
# echo rooms as audio/capture's BenchmarkEcho: speexdsp (what ships, through
# our binding), WebRTC audio processing 0.3 (AEC2, Debian bookworm) and 1.3
# (AEC3, Debian trixie, built and run in a trixie root). Prints ERLE after 2 s
# and the near-speech correlation per room. Needs root for the trixie root
# (mmdebstrap; cached in ~/.cache/agenthost/aec-trixie-amd64).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-buildvcs=false
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cache=${AGENTHOST_CACHE:-$HOME/.cache/agenthost}/aec-trixie-amd64
MIRROR=${MIRROR:-http://deb.debian.org/debian}

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  g++ pkg-config libwebrtc-audio-processing-dev libspeexdsp-dev mmdebstrap >&2
g++ -O2 -o "$work/webrtc03" test/aeccompare/webrtc03.cc $(pkg-config --cflags --libs webrtc-audio-processing)

root=$cache/root
if [ ! -x "$root/usr/bin/g++" ] || ! chroot "$root" pkg-config --exists webrtc-audio-processing-1; then
  mkdir -p "$cache"
  mmdebstrap --variant=apt --include=g++,pkg-config,libwebrtc-audio-processing-dev trixie "$cache/root.tar" "deb $MIRROR trixie main" >&2
  rm -rf "$root"; mkdir -p "$root"; tar -C "$root" -xf "$cache/root.tar"; rm -f "$cache/root.tar"
fi
mkdir -p "$root/aec"
cp test/aeccompare/webrtc13.cc "$root/aec/"
chroot "$root" sh -c 'cd /aec && g++ -O2 -o webrtc13 webrtc13.cc $(pkg-config --cflags --libs webrtc-audio-processing-1)'
cat > "$work/webrtc13" <<EOS
#!/bin/sh
cp "\$1" "$root/aec/far.raw"; cp "\$2" "$root/aec/mic.raw"
chroot "$root" /aec/webrtc13 /aec/far.raw /aec/mic.raw /aec/out.raw && cp "$root/aec/out.raw" "\$3"
EOS
chmod +x "$work/webrtc13"

export AGENTHOST_AEC_COMPARE="webrtc03-moderate=LEVEL=moderate $work/webrtc03,webrtc03-low=LEVEL=low $work/webrtc03,webrtc13=$work/webrtc13"
go test ./audio/capture/ -run '^$' -bench 'Echo$|Compare' -benchtime 1x 2>&1 | grep -E 'Benchmark|^ok|FAIL'
