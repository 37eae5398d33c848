#!/usr/bin/env bash
# Runs every fuzz target in the module (found as scripts/test.sh finds them),
# one after the other, for the given time each, and prints per target the
# executions, the new interesting inputs and whether it crashed. Exits 1 if
# any target crashed (go test leaves the crasher in the package's
# testdata/fuzz/<Target>/ for the fix) or could not run.
#
# Usage: scripts/fuzz.sh [duration] [target-regexp]
#   duration: per target, as go test's -fuzztime (default 1m)
#   target-regexp: run only the targets whose name matches (grep -E), e.g.
#   scripts/fuzz.sh 10m '^FuzzDecode$'
#   FUZZ_PARALLEL=N sets go test's -parallel (fuzzing workers; default GOMAXPROCS).
#   FUZZ_GO: the go command (default go; the tests put a stand-in here).
#
# Go 1.26's coordinator sometimes ends a run at its -fuzztime with a bare
# "context deadline exceeded" and exit 1, its deadline racing a worker's last
# input (golang/go#75804, fixed in Go 1.27). Such an end, with no input
# written and nothing else failing, counts as clean only if the target's
# corpus then replays clean.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

duration=${1:-1m}
only=${2:-}
logs=$(mktemp -d "${TMPDIR:-/tmp}/agenthost-fuzz.XXXXXX")
parallel=()
[ -n "${FUZZ_PARALLEL:-}" ] && parallel=(-parallel "$FUZZ_PARALLEL")
gocmd=${FUZZ_GO:-go}

# bare_deadline: the log's only failure is the coordinator's "context deadline exceeded".
bare_deadline() {
  grep -qxE '[[:space:]]+context deadline exceeded' "$1" &&
    ! grep -vE '^fuzz: elapsed: |^--- FAIL: |^[[:space:]]+context deadline exceeded$|^FAIL|^exit status ' "$1" | grep -q .
}

# seconds turns a Go duration as go test prints it (1h2m3s, 10m0s, 5s) into whole seconds.
seconds() {
  local d=$1 total=0
  [[ $d =~ ([0-9]+)h ]] && total=$((total + BASH_REMATCH[1] * 3600))
  [[ $d =~ ([0-9]+)m([0-9]|$) ]] && total=$((total + BASH_REMATCH[1] * 60))
  [[ $d =~ ([0-9.]+)s$ ]] && total=$((total + ${BASH_REMATCH[1]%.*}))
  echo "$total"
}

mapfile -t targets < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sort -u)
crashed=0 broken=0 ran=0
summary=()
for entry in "${targets[@]}"; do
  file=${entry%%:*} decl=${entry#*:}
  target=${decl#func } pkg=$(dirname "$file")
  if [ -n "$only" ] && ! grep -qE -- "$only" <<<"$target"; then continue; fi
  ran=$((ran + 1))
  log="$logs/$target.log"
  echo "== $target ($pkg), $duration"
  status=0
  "$gocmd" test -run='^$' -fuzz="^$target\$" -fuzztime="$duration" "${parallel[@]}" "$pkg" >"$log" 2>&1 || status=$?
  # The last progress line: "fuzz: elapsed: 1m0s, execs: N (R/sec), new interesting: M (total: K)".
  last=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1 || true)
  if [[ $last =~ elapsed:\ ([^,]+),\ execs:\ ([0-9]+)\ \(([0-9]+)/sec\),\ new\ interesting:\ ([0-9]+)\ \(total:\ ([0-9]+)\) ]]; then
    # The rate on the last line is of its last interval (often 0/sec): give the mean.
    secs=$(seconds "${BASH_REMATCH[1]}")
    figures="${BASH_REMATCH[2]} execs in ${BASH_REMATCH[1]} ($((BASH_REMATCH[2] / (secs > 0 ? secs : 1)))/sec), new interesting ${BASH_REMATCH[4]} (corpus ${BASH_REMATCH[5]})"
  else
    figures="no progress line (it ended within its first 3 s)"
  fi
  crasher=$(sed -n 's/.*Failing input written to \(.*\)$/\1/p' "$log" | tail -1)
  if [ -n "$crasher" ]; then
    crashed=$((crashed + 1))
    line="$target ($pkg): $figures: CRASH, input $pkg/$crasher"
    echo "$line"
    grep -vE '^fuzz: elapsed: ' "$log" | sed 's/^/    /' | head -60
    echo "    -- the input ($pkg/$crasher):"
    sed 's/^/    /' "$pkg/$crasher" | head -40
  elif [ "$status" -ne 0 ] && bare_deadline "$log" &&
    "$gocmd" test -run="^$target\$" "$pkg" >"$log.replay" 2>&1; then
    line="$target ($pkg): $figures: no crash (ended on Go's fuzztime race, golang/go#75804; its corpus replays clean)"
    echo "$line"
  elif [ "$status" -ne 0 ]; then
    broken=$((broken + 1))
    line="$target ($pkg): $figures: FAILED TO RUN (exit $status)"
    echo "$line"
    sed 's/^/    /' "$log" | tail -30
  else
    line="$target ($pkg): $figures: no crash"
    echo "$line"
  fi
  summary+=("$line")
done

echo "== fuzz summary ($ran targets, $duration each)"
printf '%s\n' "${summary[@]}"
if [ "$ran" -eq 0 ]; then
  echo "no fuzz target matched ${only:-anything}" >&2
  exit 2
fi
if [ $((crashed + broken)) -gt 0 ]; then
  echo "fuzz: $crashed crashed, $broken could not run; the logs: $logs"
  exit 1
fi
rm -rf "$logs"
