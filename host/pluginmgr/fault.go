package pluginmgr

import "sync/atomic"

// startHook is a fault point for tests (set by export_test.go): when set, a
// plugin's start calls it at each stage of a start that succeeded: "up"
// (the process is up and described, nothing recorded yet) and "handing
// over" (recorded, about to be handed to the supervisor); and "hashing" (a
// binary renamed in is about to be hashed, beside its start). A test
// blocks in it to order a reload against a touch or a status read.
var startHook atomic.Pointer[func(name, stage string)]

func startFault(name, stage string) {
	if f := startHook.Load(); f != nil {
		(*f)(name, stage)
	}
}
