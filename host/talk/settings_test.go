package talk

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

// TestTheDetectorsSettingsComeFromConversationWakeWord: what the
// configuration says of the models' scoring reaches the detector's
// settings (and so its command line, hostwake.Settings.Args).
func TestTheDetectorsSettingsComeFromConversationWakeWord(t *testing.T) {
	cfg := config.Default()
	w := &cfg.Conversation.WakeWord
	w.Models, w.Threshold, w.Step, w.Over = []string{"hey_jarvis_agenthost"}, 0.9, config.Duration(40*time.Millisecond), 2
	s := settings(cfg)
	if len(s.Models) != 1 || s.Models[0] != "hey_jarvis_agenthost" || s.Threshold != 0.9 || s.Step != 40*time.Millisecond || s.Over != 2 {
		t.Errorf("settings = %+v", s)
	}
}
