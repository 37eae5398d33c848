//go:build !linux

package sandbox

// ABI: Landlock is Linux's.
func ABI() (int, error) { return 0, ErrUnsupported }

// DenyInspection does nothing here.
func DenyInspection() error { return nil }
