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

// Changers: this system has no unix owners.
func Changers(paths, inside []string) (map[int]string, error) { return nil, nil }

// Names: nothing to name.
func Names(map[int]string) string { return "" }
