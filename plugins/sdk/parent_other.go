//go:build !unix

package sdk

import "time"

// watchParent does nothing where a dead parent does not change the parent
// process ID (Windows); the host must kill its plugins there.
func watchParent(time.Duration, func(oldPPID, newPPID int)) {}
