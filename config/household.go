package config

import "time"

// Household makes this speaker one of several that answer a wake phrase
// once: it is on when the speaker has the household's key (agenthost
// household create or join, kept in the state folder).
type Household struct {
	// Name is this speaker's name in the household ("": the host's name).
	Name string `yaml:"name"`
	// Room is where it stands (announcements and timers go to rooms).
	Room string `yaml:"room"`
	// Priority pins a speaker: the highest priority that heard a phrase
	// answers it, whoever heard it best.
	Priority int `yaml:"priority"`
	// Listen is the gossip's address (UDP and TCP).
	Listen string `yaml:"listen"`
	// Advertise is the address the others reach this speaker at ("": the
	// one Listen picks).
	Advertise string `yaml:"advertise"`
	// Peers are addresses (HOST or HOST:PORT) of other speakers, for a LAN
	// where mDNS does not pass.
	Peers []string `yaml:"peers"`
	// Discover finds the household's other speakers on the LAN by mDNS.
	Discover bool `yaml:"discover"`
	// Window is how long a speaker that heard the phrase waits for the
	// others' claims before it answers (alone it does not wait).
	Window Duration `yaml:"window"`
	// Rings is where a timer or alarm set on this speaker rings: "here"
	// (the default) or "everywhere" (every speaker of the household; a
	// stop on any one stops it on all).
	Rings string `yaml:"rings"`
}

func defaultHousehold() Household {
	return Household{Listen: "0.0.0.0:7946", Peers: []string{}, Discover: true, Window: Duration(150 * time.Millisecond), Rings: "here"}
}

func (l *loader) household(h Household) {
	l.hostPort("household.listen", h.Listen)
	if w := h.Window.D(); w <= 0 || w > time.Second {
		l.errorf(path("household.window"), "%s is outside 1ms…1s (150ms is the default: what a person does not notice)", w)
	}
	l.enum("household.rings", h.Rings, []string{"here", "everywhere"})
	if h.Priority < -100 || h.Priority > 100 {
		l.errorf(path("household.priority"), "%d is outside -100…100", h.Priority)
	}
}
