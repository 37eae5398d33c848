#!/usr/bin/env bash
# Prints the upstream version of a commit (default HEAD) of the git checkout
# in the current folder: 0.0.0+git<commit time>.<short hash>. scripts/package.sh
# and scripts/install.sh use it unless PACKAGE_VERSION is set.
# Usage: scripts/version.sh [COMMIT]
set -euo pipefail
commit=${1:-HEAD}
echo "0.0.0+git$(git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S "$commit").$(git rev-parse --short=7 "$commit")"
