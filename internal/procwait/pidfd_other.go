//go:build !linux

package procwait

import "os"

func open(int) (*os.File, error) { return nil, ErrUnsupported }

func readable(uintptr) bool { return true }
