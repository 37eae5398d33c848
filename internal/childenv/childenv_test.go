package childenv

import (
	"strings"
	"testing"
)

func TestSecretsStayHome(t *testing.T) {
	t.Setenv("AGENTHOST_SERVER_TOKEN", "s3cret")
	t.Setenv("AGENTHOST_SERVER_TOKEN_FILE", "/etc/agenthost/token")
	t.Setenv("CREDENTIALS_DIRECTORY", "/run/credentials/agenthost.service")
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	t.Setenv("AGENTHOST_PLUGIN_LOG_LEVEL", "debug")
	t.Setenv("LANG", "C.UTF-8")
	env := strings.Join(Environ(), "\n")
	for _, gone := range []string{"s3cret", "AGENTHOST_SERVER_TOKEN", "CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET"} {
		if strings.Contains(env, gone) {
			t.Errorf("%s reached a child's environment", gone)
		}
	}
	for _, kept := range []string{"AGENTHOST_PLUGIN_LOG_LEVEL=debug", "LANG=C.UTF-8"} {
		if !strings.Contains(env, kept) {
			t.Errorf("%s was dropped", kept)
		}
	}
}
