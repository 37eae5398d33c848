#!/usr/bin/env bash
# Prints the upstream version of a commit (default HEAD) of the git checkout
# in the current folder: 0.0.0+git<commit time, UTC>.<short hash>.
# scripts/package.sh and scripts/install.sh use it unless PACKAGE_VERSION is
# set. UTC, not the build machine's zone: local time goes back an hour at the
# end of summer time (a later commit would sort first, and apt would refuse
# it), and one commit would get another version in another zone.
# Usage: scripts/version.sh [COMMIT]
set -euo pipefail
commit=${1:-HEAD}
echo "0.0.0+git$(TZ=UTC0 git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S "$commit").$(git rev-parse --short=7 "$commit")"
