#!/usr/bin/env bash
# Puts promtool (Prometheus's checker, from Debian's prometheus package) in a
# cache folder outside the clone and prints its path. The package is only
# unpacked, not installed: installing it would start a Prometheus server.
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/promtool"
bin="$cache/usr/bin/promtool"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get download prometheus >/dev/null; })
  dpkg-deb -x "$tmp"/prometheus_*.deb "$cache"
fi
echo "$bin"
