//go:build !unix

package config

// writable: not checked here; creating the sockets will tell.
func writable(string) bool { return true }
