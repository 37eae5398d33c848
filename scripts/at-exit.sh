# Sourced by the scripts: `at_exit FUNC` runs FUNC when the script ends, at
# its end, on an error (set -e), on Ctrl-C (SIGINT) or on SIGTERM, and only
# once: a signal only ends the script (128+signal, as the shell would), and
# the EXIT trap then runs FUNC. (A trap on EXIT INT TERM ran it on the signal
# and again on the exit that followed.)
# shellcheck shell=bash
at_exit() {
  trap "$1" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
