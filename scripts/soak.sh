#!/usr/bin/env bash
# Endurance run: the real host binary, the in-process voice simulator and the
# bundled plugins (clock, files, sysinfo) for a given time, with calls at a
# steady rate to every service, the clock plugin replaced by rename every
# 10 s, the link dropped every minute and voice turns (VAD mode, file audio
# backend). The driver is test/soak; its doc comment and constants give
# the checks and the growth bounds. Exits non-zero on a lost, duplicated or
# unexplained failed call, an orphan process, or growth beyond a bound.
#
# Usage: scripts/soak.sh [duration] [rate]     defaults: 10m 40
#   SOAK_KEEP=1 keeps the work folder (host log, config, files) afterwards;
#   it is always kept when the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

duration=${1:-10m}
rate=${2:-40}
work=$(mktemp -d "${TMPDIR:-/tmp}/agenthost-soak.XXXXXX")
driver=""

# kill_leftovers ends any process still running a binary from the work
# folder (the host, plugins), by pid: only this run's.
kill_leftovers() {
  local exe pid
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
    case "$exe" in "$work"/*) kill -KILL "$pid" 2>/dev/null && echo "soak.sh: killed leftover $pid $exe" >&2 ;; esac
  done
  return 0
}
on_signal() {
  trap '' INT TERM HUP
  if [ -n "$driver" ] && kill -0 "$driver" 2>/dev/null; then
    kill -TERM "$driver" 2>/dev/null || true # the driver stops the host, which stops its plugins
    wait "$driver" 2>/dev/null || true
  fi
  kill_leftovers
  echo "soak.sh: interrupted; the work folder is kept: $work" >&2
  exit 130
}
trap on_signal INT TERM HUP

echo "== soak: building the host, the bundled plugins and the driver into $work/bin"
mkdir -p "$work/bin/plugins"
go build -o "$work/bin/agenthost" ./cmd/agenthost
go build -o "$work/bin/plugins/" ./plugins/clock ./plugins/files ./plugins/sysinfo
go build -o "$work/bin/soak" ./test/soak

echo "== soak: reproduce with: scripts/soak.sh $duration $rate"
"$work/bin/soak" -duration "$duration" -rate "$rate" -host "$work/bin/agenthost" \
  -plugins "$work/bin/plugins" -work "$work/run" -call-timeout 15s &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
kill_leftovers
if [ "$status" -ne 0 ] || [ -n "${SOAK_KEEP:-}" ]; then
  echo "soak.sh: exit status $status; the work folder is kept: $work"
else
  rm -rf "$work"
fi
exit "$status"
