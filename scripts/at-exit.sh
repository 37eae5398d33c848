# Sourced by the scripts: `at_exit FUNC` runs FUNC when the script ends, at
# its end, on an error (set -e), on Ctrl-C (SIGINT) or on SIGTERM.
# shellcheck shell=bash
at_exit() {
  trap "$1" EXIT INT TERM
}
