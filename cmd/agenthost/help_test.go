package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// TestEveryCommandHasHelp: `agenthost help CMD` and `agenthost CMD -h` give
// every command's usage, what it does, its flags and an example, not the
// general list.
func TestEveryCommandHasHelp(t *testing.T) {
	for name := range commands {
		var out, errOut bytes.Buffer
		if err := run([]string{"help", name}, nil, &out, &errOut); err != nil {
			t.Errorf("help %s: %v", name, err)
		}
		var hOut, hErr bytes.Buffer
		if err := run([]string{name, "-h", "--config", "/nonexistent/agenthost.yaml"}, nil, &hOut, &hErr); err != nil {
			t.Errorf("%s -h: %v", name, err)
		}
		for what, got := range map[string]string{"help " + name: out.String(), name + " -h": hErr.String()} {
			h := helps[name]
			switch {
			case !strings.HasPrefix(got, "usage: agenthost "+name):
				t.Errorf("%s does not start with its usage:\n%s", what, got)
			case len(h.text) < 40:
				t.Errorf("%s does not say what the command does:\n%s", what, got)
			case !strings.Contains(got, "\nexamples:\n  agenthost "+name):
				t.Errorf("%s has no example:\n%s", what, got)
			case strings.Contains(got, "commands:"):
				t.Errorf("%s prints the general list:\n%s", what, got)
			case name != "version" && !strings.Contains(got, "-config"):
				t.Errorf("%s does not list the flags:\n%s", what, got)
			}
		}
	}
	for name := range helps {
		if _, ok := commands[name]; !ok {
			t.Errorf("help for %q, which is no command", name)
		}
	}
}

// TestEnrollHelpListsThePrompts: `wakeword enroll --other` takes a
// recording of each prompt; the help lists them all.
func TestEnrollHelpListsThePrompts(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"wakeword", "enroll", "-h"}, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, p := range wakeword.EnrollPrompts {
		if !strings.Contains(errOut.String(), p) {
			t.Errorf("wakeword enroll -h does not list the prompt %q:\n%s", p, errOut.String())
		}
	}
}

func TestHelpOfAnUnknownCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run([]string{"help", "sing"}, nil, &out, &errOut)
	if ee, ok := err.(*exitError); !ok || ee.code != 2 || !strings.Contains(err.Error(), `"sing"`) {
		t.Fatalf("help sing: %v", err)
	}
}
