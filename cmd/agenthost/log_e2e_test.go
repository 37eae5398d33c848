package main

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// maxLogLine bounds one line of the host's log in TestHugeNamesAndArgumentsAreClippedInTheLog:
// a few clipped values and the fixed text around them.
const maxLogLine = 32 << 10

// TestHugeNamesAndArgumentsAreClippedInTheLog: a service name or an argument
// of hundreds of kilobytes, from the voice server or from `agenthost call`,
// reaches no log line whole (found by attack: a 1 MB name made an INFO line
// of 1,000,288 characters).
func TestHugeNamesAndArgumentsAreClippedInTheLog(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim)
	ready(t, sim, 1)
	huge := strings.Repeat("n", 500<<10)
	if out := call(t, sim, huge, `{}`); out.Success {
		t.Fatalf("a call of an unknown service succeeded: %+v", out)
	}
	if out := call(t, sim, "testkit_echo", `{"text":"`+huge+`"}`); out.Success {
		t.Fatalf("a call with a text over maxLength succeeded: %+v", out)
	}
	if out := call(t, sim, "testkit_echo", `{"text":"a","mode":"`+huge+`"}`); out.Success {
		t.Fatalf("a call with a mode outside the enum succeeded: %+v", out)
	}
	// The command line takes up to 128 KiB in one argument.
	if out, err := d.cli("call", strings.Repeat("c", 100<<10)); err == nil {
		t.Fatalf("agenthost call of an unknown service succeeded: %s", out)
	}
	d.logShows("method=ccc")
	longest := 0
	for _, l := range strings.Split(d.log.String(), "\n") {
		longest = max(longest, len(l))
		if len(l) > maxLogLine {
			t.Errorf("a log line of %d bytes: %s", len(l), l[:200])
		}
	}
	t.Logf("the longest log line: %d bytes", longest)
}
