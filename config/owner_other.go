//go:build !unix

package config

import "os"

// privateProblem: this system has no unix owner and mode bits to check.
func privateProblem(os.FileInfo) string { return "" }

// writable: not checked here; creating the sockets will tell.
func writable(string) bool { return true }
