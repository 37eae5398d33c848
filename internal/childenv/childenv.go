// Package childenv owns what the host passes on to the processes it starts
// (plugins, event hooks): its own environment minus its secrets.
package childenv

import (
	"os"
	"strings"
)

// Environ returns os.Environ() without the host's settings (AGENTHOST_*, which
// carry the server token, except the AGENTHOST_PLUGIN_* variables meant for
// plugins) and without systemd's credentials folder and notify socket.
func Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "AGENTHOST_") && !strings.HasPrefix(name, "AGENTHOST_PLUGIN_"):
		case name == "CREDENTIALS_DIRECTORY", name == "NOTIFY_SOCKET", name == "WATCHDOG_USEC", name == "WATCHDOG_PID":
		default:
			out = append(out, kv)
		}
	}
	return out
}
