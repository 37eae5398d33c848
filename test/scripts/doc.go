// Package scripts tests the shell scripts under scripts/ (the version a
// package gets, the APT repository's key, the wake-word fetch, the demo's
// exit): each test runs the real script with bash, without network unless
// it says so, and skips what needs a tool the machine lacks.
package scripts
