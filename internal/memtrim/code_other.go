//go:build !linux

package memtrim

func releaseCode() {}
