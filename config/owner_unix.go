//go:build unix

package config

import "syscall"

// writable reports whether this user may create files in dir.
func writable(dir string) bool { return syscall.Access(dir, 0x2 /* W_OK */) == nil }
