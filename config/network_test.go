package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestNetworkAllowIsCheckedStrictly: plugins.network.allow takes host
// names, addresses, host:port and CIDR ranges, from the file or a --set;
// anything else (a URL, a bad range or port, a wildcard) is named with what
// to write instead.
func TestNetworkAllowIsCheckedStrictly(t *testing.T) {
	clearEnv(t)
	good := []string{"radio.lan", "nas.local:8443", "192.168.1.5", "192.168.1.5:8000", "192.168.1.0/24",
		"fd00::1", "[fd00::1]:8000", "fd00::/8", "localhost"}
	yaml := "plugins:\n  network:\n    allow:\n"
	for _, g := range good {
		yaml += fmt.Sprintf("      - %q\n", g)
	}
	c := mustLoad(t, writeConfig(t, yaml), nil)
	if got := networkAllow(t, c); got != strings.Join(good, " ") {
		t.Errorf("plugins.network.allow %q, want %q", got, good)
	}
	if got := networkAllow(t, mustLoad(t, "", map[string]any{"plugins.network.allow": "192.168.1.0/24,radio.lan"})); got != "192.168.1.0/24 radio.lan" {
		t.Errorf("--set plugins.network.allow=192.168.1.0/24,radio.lan gave %q", got)
	}
	if got := networkAllow(t, Default()); got != "" {
		t.Errorf("the default allows %q, want nothing", got)
	}
	for _, bad := range []string{"http://nas.lan/radio", "192.168.1.0/33", "nas.lan:99999", "nas.lan:0", " ", "*.lan",
		"nas.lan/radio", "192.168.1.5:", "fd00::1:8000:x", "user@nas.lan", "-nas.lan", "192.168.1.1/24"} {
		_, err := Load("", map[string]any{"plugins.network.allow": []string{bad}})
		if err == nil {
			t.Errorf("plugins.network.allow [%q] was accepted", bad)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "plugins.network.allow") || !strings.Contains(msg, "192.168.1.0/24") {
			t.Errorf("plugins.network.allow [%q]: %q, want it to name the key and say what to write", bad, msg)
		}
	}
}

// networkAllow is plugins.network.allow of c, joined by spaces.
func networkAllow(t *testing.T, c *Config) string {
	t.Helper()
	m, err := toMap(c)
	if err != nil {
		t.Fatal(err)
	}
	plugins, _ := m["plugins"].(map[string]any)
	network, _ := plugins["network"].(map[string]any)
	allow, _ := network["allow"].([]any)
	var out []string
	for _, a := range allow {
		out = append(out, fmt.Sprint(a))
	}
	return strings.Join(out, " ")
}
