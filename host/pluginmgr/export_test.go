package pluginmgr

// SetStartHook sets the start fault point (see startHook) until the test's
// cleanup, which runs after the manager stopped (register it first).
func SetStartHook(cleanup func(func()), f func(name, stage string)) {
	startHook.Store(&f)
	cleanup(func() { startHook.Store(nil) })
}
