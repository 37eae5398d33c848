package config

// The media hook event: a plugin's sound started, stopped, was ducked or
// paused by the host, or came back (host/pluginsound).
func init() { HookEvents = append(HookEvents, "media") }
