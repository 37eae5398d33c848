#!/usr/bin/env bash
# Installs the third-party MCP programs the tests run against, from the npm
# registry, pinned: the reference server @modelcontextprotocol/server-everything
# and the MCP Inspector (its --cli mode). They go into a cache folder outside
# the clone, ${AGENTHOST_MCP_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/npm},
# so a fresh clone finds them installed. Idempotent: it does nothing when the
# pinned versions are there. Prints the folder (its node_modules/.bin has the
# programs) on stdout; everything else goes to stderr. Needs npm; the programs
# need Node >= 20, and where the machine's is older (Debian 12 and Raspberry
# Pi OS bookworm ship 18) a pinned Node 20 comes from the npm registry too
# (the package `node`, a prebuilt binary per architecture) into the same
# node_modules/.bin, which the tests put first on their PATH.
set -euo pipefail

SERVER_EVERYTHING=2026.8.31
INSPECTOR=2.12.0
NODE=20.20.2

dir="${AGENTHOST_MCP_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/npm}"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "install-mcp-test-deps: node and npm are needed (apt-get install nodejs npm)" >&2
  exit 1
fi
pkgs=("@modelcontextprotocol/server-everything@$SERVER_EVERYTHING" "@modelcontextprotocol/inspector@$INSPECTOR")
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "install-mcp-test-deps: Node $(node --version) is older than 20; using node@$NODE from the npm registry" >&2
  pkgs=("node@$NODE" "${pkgs[@]}")
fi
stamp="$dir/.installed-$(printf '%s\n' "${pkgs[@]}" | sha256sum | cut -c1-16)"

if [ ! -f "$stamp" ]; then
  mkdir -p "$dir"
  # A lock, so tests of several packages that start at once install once.
  exec 9>"$dir/.lock"
  flock 9
  if [ ! -f "$stamp" ]; then
    echo "install-mcp-test-deps: installing ${pkgs[*]} into $dir" >&2
    [ -f "$dir/package.json" ] || printf '{"name":"agenthost-mcp-test-deps","private":true}\n' >"$dir/package.json"
    if [ "${pkgs[0]}" = "node@$NODE" ]; then
      npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact "node@$NODE" >&2
      export PATH="$dir/node_modules/.bin:$PATH" # the programs' install scripts run on Node 20 too
    fi
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact "${pkgs[@]}" >&2
    rm -f "$dir"/.installed-*
    touch "$stamp"
  fi
fi
echo "$dir"
