//go:build !unix

package fsperm

import "os"

// Problem: this system has no unix owner and mode bits to check.
func Problem(os.FileInfo, string, ...int) string { return "" }
