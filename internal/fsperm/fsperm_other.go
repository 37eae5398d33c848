//go:build !unix

package fsperm

import "os"

// Problem: this system has no unix owner and mode bits to check.
func Problem(os.FileInfo, string, ...int) string { return "" }

// DirProblem: nothing to check here.
func DirProblem(os.FileInfo) string { return "" }

// SocketProblem: nothing to check here.
func SocketProblem(string) string { return "" }

// Owner: this system has no unix owners.
func Owner(os.FileInfo) (int, bool) { return 0, false }

// HandOver: this system has no unix owners to hand a file to.
func HandOver(top, dir, name string) error { return nil }
