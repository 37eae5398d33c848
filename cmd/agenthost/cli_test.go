package main

import (
	"bytes"
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
