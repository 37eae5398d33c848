package preflight

import (
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/household"
)

// TestCheckSaysWhatKeepsTheSpeakerOutOfItsHousehold: a key others may
// read (run refuses it) and a key without the wake word (run does not
// join) are said; no key, or a key with the wake word on, says nothing.
func TestCheckSaysWhatKeepsTheSpeakerOutOfItsHousehold(t *testing.T) {
	cfg := config.Default()
	cfg.Plugins.StateDir = t.TempDir()
	if f := householdKey(cfg); len(f) != 0 {
		t.Errorf("no key: %v", f)
	}
	key, _ := household.NewKey()
	if err := household.SaveKey(cfg.Plugins.StateDir, key); err != nil {
		t.Fatal(err)
	}
	if f := householdKey(cfg); len(f) != 1 || !strings.Contains(f[0].Msg, "wake word is off") {
		t.Errorf("a key, no wake word: %v", f)
	}
	cfg.Conversation.WakeWord.Models = []string{"hey_jarvis"}
	if f := householdKey(cfg); len(f) != 0 {
		t.Errorf("a key and the wake word: %v", f)
	}
	os.Chmod(household.KeyPath(cfg.Plugins.StateDir), 0o644)
	if f := householdKey(cfg); len(f) != 1 || !strings.Contains(f[0].Msg, "chmod 600") {
		t.Errorf("a key others may read: %v", f)
	}
}
