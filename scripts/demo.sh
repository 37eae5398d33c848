#!/usr/bin/env bash
# The main job, on any Debian / Raspberry Pi OS machine: builds agenthost, the
# simulator and the bundled plugins, starts the simulated voice server and the
# host against it, and holds a conversation turn that uses a plugin.
# Runs until Ctrl-C (or for DEMO_SECONDS seconds).
# Usage: scripts/demo.sh [extra `agenthost run` flags, e.g. --set audio.backend=portaudio]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

mkdir -p bin/plugins run/files
go build -o bin/agenthost ./cmd/agenthost
go build -o bin/voicesim ./cmd/voicesim
for p in plugins/*/; do
  name=$(basename "$p")
  [ -f "$p/main.go" ] || continue
  go build -o "bin/plugins/.$name.tmp" "./$p" && mv "bin/plugins/.$name.tmp" "bin/plugins/$name"   # install = build, then rename
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

tail -f /dev/null | bin/voicesim --listen 127.0.0.1:8009 2> >(sed -u 's/^/[voicesim] /' >&2) &
pids+=($!)
sleep 0.3
bin/agenthost run --config examples/demo.yaml --set "plugins.config.files.root=$PWD/run/files" "$@" 2> >(sed -u 's/^/[agenthost] /' >&2) &
pids+=($!)

ah() { bin/agenthost "$1" --config examples/demo.yaml "${@:2}"; }
for _ in $(seq 50); do ah status >/dev/null 2>&1 && break; sleep 0.2; done
echo "== the host is up; services it lends the server:"
ah status
echo "== a text turn: the simulator asks the host's get_current_time and speaks the answer"
ah say "What time is it?"
sleep 1.5
echo "== a call through the same dispatch as the server's:"
ah call get_current_time '{"format":"detailed"}' || true
echo "== running; Ctrl-C stops both (try: bin/agenthost say --config examples/demo.yaml 'hello')"
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait "${pids[1]}"; fi
