#!/usr/bin/env bash
# Runs lintian on packages, each with its own suite's lintian: bookworm's on
# this machine, trixie's in the cached trixie build root (scripts/package.sh
# made it). Fails on any error or warning not in packaging/lintian-overrides,
# where each override says why.
# Usage: scripts/lint.sh DEB...   (suite from the version's ~deb12u1/~deb13u1)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/roots.sh
here=$(host_suite)
logs=$(mktemp -d); trap 'rm -rf "$logs"' EXIT
pids=() names=()
for deb in "$@"; do
  deb=$(realpath "$deb")
  version=$(dpkg-deb -f "$deb" Version)
  case $version in *~deb12u*) suite=bookworm ;; *~deb13u*) suite=trixie ;; *) echo "lint: $deb: no ~debNN suffix in $version" >&2; exit 2 ;; esac
  log="$logs/$(basename "$deb").log"
  if [ "$suite" = "$here" ]; then
    lintian --fail-on error,warning --no-tag-display-limit "$deb" > "$log" 2>&1 &
  else
    root=$(ls -d "$ROOTS_CACHE/build-$suite"-*/.complete 2>/dev/null | head -1)
    [ -n "$root" ] || { echo "lint: no $suite build root (scripts/package.sh $suite makes it)" >&2; exit 2; }
    root_run "$(dirname "$root")" -b "$(dirname "$deb")" -- \
      lintian --fail-on error,warning --no-tag-display-limit "$deb" > "$log" 2>&1 &
  fi
  pids+=($!) names+=("$suite $(basename "$deb")")
done
fail=0
for i in "${!pids[@]}"; do
  log="$logs/$(basename "${names[$i]#* }").log"
  if wait "${pids[$i]}"; then r=clean; else r=FAILED; fail=1; fi
  echo "lintian (${names[$i]%% *}): ${names[$i]#* }: $r $(grep -E '^[EW]:' "$log" | tr '\n' ' ')"
  [ "$r" = clean ] || cat "$log"
done
exit $fail
