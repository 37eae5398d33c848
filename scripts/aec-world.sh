#!/usr/bin/env bash
# Issue 24's echo figures on the world material (audio/capture's
# BenchmarkWorldEcho): today's canceller, the shipped one, and WebRTC's AEC3
# (libwebrtc-audio-processing 1.3, Debian trixie), built and run in a cached
# trixie root (scripts/roots.sh; needs root). Prints one table.
#   scripts/aec-world.sh            # the held-out set
#   AGENTHOST_AEC_SET=tuning scripts/aec-world.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/roots.sh
export GOFLAGS=-buildvcs=false
root=$(root_make aec3 trixie amd64 apt g++,pkg-config,libwebrtc-audio-processing-dev)
bin=$(mktemp -d); trap 'rm -rf "$bin"' EXIT
root_run "$root" -b "$PWD/test/aeccompare" -b "$bin" -w "$bin" -- sh -c \
  "g++ -O2 -o webrtc13 $PWD/test/aeccompare/webrtc13.cc \$(pkg-config --cflags --libs webrtc-audio-processing-1)"
cat > "$bin/aec3" <<EOS
#!/usr/bin/env bash
. "$PWD/scripts/roots.sh"
d=\$(dirname "\$1")
root_run "$root" -b "$bin" -b "\$d" -- "$bin/webrtc13" "\$1" "\$2" "\$3"
EOS
chmod +x "$bin/aec3"
export AGENTHOST_AEC_COMPARE="aec3=$bin/aec3"
go test ./audio/capture/ -run '^$' -bench 'WorldEcho$' -benchtime 1x 2>&1 | grep -vE '^(goos|goarch|pkg|cpu):'
