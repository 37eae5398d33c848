//go:build !linux

package main

import "errors"

func statfs(string) (DiskUsage, error) {
	return DiskUsage{}, errors.New("disk usage is only implemented on Linux")
}
