//go:build !linux

package audio

func newSleeper() sleeper { return &goTimer{} }
