# Sourced by the scripts: installs what is missing and puts Go on PATH.
# shellcheck shell=bash
eval "$("$(dirname "${BASH_SOURCE[0]}")/install-deps.sh")"
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
