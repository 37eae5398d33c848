// Package system holds the checks that prove the agenthost Debian package
// under a real systemd (build tag system). scripts/test-system.sh builds the
// packages, boots systemd as PID 1 of its own namespaces in a Debian root and
// runs them; without that script's environment they skip.
package system
