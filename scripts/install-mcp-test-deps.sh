#!/usr/bin/env bash
# Installs the third-party MCP programs the tests run against, from the npm
# registry, pinned: the reference server @modelcontextprotocol/server-everything
# and the MCP Inspector (its --cli mode). They go into a cache folder outside
# the clone, ${AGENTHOST_MCP_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/npm},
# so a fresh clone finds them installed. Idempotent: it does nothing when the
# pinned versions are there. Prints the folder (its node_modules/.bin has the
# programs) on stdout; everything else goes to stderr. Needs Node >= 20 and npm.
set -euo pipefail

SERVER_EVERYTHING=2026.8.31
INSPECTOR=2.12.0

dir="${AGENTHOST_MCP_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/npm}"
stamp="$dir/.installed-server-everything@$SERVER_EVERYTHING-inspector@$INSPECTOR"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "install-mcp-test-deps: node and npm are needed (apt-get install nodejs npm, Node >= 20)" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "install-mcp-test-deps: Node $(node --version) is too old; the MCP programs need Node >= 20" >&2
  exit 1
fi

if [ ! -f "$stamp" ]; then
  mkdir -p "$dir"
  # A lock, so tests of several packages that start at once install once.
  exec 9>"$dir/.lock"
  flock 9
  if [ ! -f "$stamp" ]; then
    echo "install-mcp-test-deps: installing server-everything@$SERVER_EVERYTHING and inspector@$INSPECTOR into $dir" >&2
    [ -f "$dir/package.json" ] || printf '{"name":"agenthost-mcp-test-deps","private":true}\n' >"$dir/package.json"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact \
      "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING" \
      "@modelcontextprotocol/inspector@$INSPECTOR" >&2
    rm -f "$dir"/.installed-*
    touch "$stamp"
  fi
fi
echo "$dir"
