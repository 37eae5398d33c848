package host

import (
	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/host/pluginmgr"
)

// pluginAudio lends the speaker's mixer to the plugins (plugins.audio): a
// plugin's sound is one more stream of its class.
type pluginAudio struct{ m *mixer.Mixer }

func (p pluginAudio) Open(source, class string, f audio.Format) (pluginmgr.AudioStream, error) {
	c, err := mixer.ParseClass(class)
	if err != nil {
		return nil, err
	}
	s, err := p.m.Open(source, c, f)
	if err != nil {
		return nil, err
	}
	return s, nil
}
