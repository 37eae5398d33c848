package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -h prints a command's flags and does nothing else: `run -h` must not start
// the daemon, `status -h` must not look for one.
func TestHelpDoesNotRunTheCommand(t *testing.T) {
	for _, cmd := range []string{"run", "status", "check", "call", "talk"} {
		var out, errOut bytes.Buffer
		err := run([]string{cmd, "-h", "--config", "/nonexistent/agenthost.yaml"}, nil, &out, &errOut)
		if err != nil {
			t.Errorf("%s -h: %v", cmd, err)
		}
		if !strings.Contains(errOut.String(), "-config") {
			t.Errorf("%s -h printed no flags: %q", cmd, errOut.String())
		}
	}
}

func TestUnknownCommandAndUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run([]string{"sing"}, nil, &out, &errOut)
	if ee, ok := err.(*exitError); !ok || ee.code != 2 || !strings.Contains(errOut.String(), "commands:") {
		t.Fatalf("got %v, stderr %q", err, errOut.String())
	}
	if err := run([]string{"call", "--config", "/nonexistent.yaml"}, nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("call without a service: %v", err)
	}
}

// TestCheckMasksTheMCPURLsSecrets: `agenthost check` says its output masks
// secrets; an MCP server's URL may carry a token in its query (or a
// password), which must not be shown either (found by attack: ?token=… was
// printed in clear).
func TestCheckMasksTheMCPURLsSecrets(t *testing.T) {
	file := filepath.Join(t.TempDir(), "agenthost.yaml")
	conf := `mcp:
  servers:
    web: {url: "https://bob:pa55word@mcp.example:8443/mcp?token=s3cr3t-t0ken&api_key=k3y-v4lue&mode=a%2Fb"}
`
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"check", "--offline", "--config", file}, nil, &out, &errOut); err != nil {
		t.Fatalf("check: %v\n%s%s", err, out.String(), errOut.String())
	}
	all := out.String() + errOut.String()
	for _, secret := range []string{"pa55word", "s3cr3t-t0ken", "k3y-v4lue", "a%2Fb"} {
		if strings.Contains(all, secret) {
			t.Errorf("check shows %q:\n%s", secret, all)
		}
	}
	if !strings.Contains(all, "mcp.example:8443/mcp?") || !strings.Contains(all, "token=") {
		t.Errorf("check no longer says which server and which query keys:\n%s", all)
	}
}
