package preflight

import (
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/household"
)

// householdKey: a key the daemon would refuse, or one it would not use
// (the household settles wake phrases: without the wake word it is not
// joined), is said; the speaker answers alone then.
func householdKey(cfg *config.Config) []Finding {
	_, ok, err := household.LoadKey(cfg.Plugins.StateDirectory())
	switch {
	case err != nil:
		return []Finding{warn("household: %s; this speaker answers alone", clean(err))}
	case ok && (!cfg.Conversation.WakeWord.On() || cfg.Audio.Backend == "none"):
		return []Finding{warn("household: this speaker has the household's key, but its wake word is off (conversation.wake_word.models, a microphone): it does not join the household, whose speakers share wake phrases")}
	}
	return nil
}
