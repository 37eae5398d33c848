// Package pluginsound is the door through which plugins' sound reaches the
// speaker's mixer (plugins.audio): it opens each stream on the mixer, follows
// what the mixer does with it (playing, ducked, paused) and tells the owner:
// the media hook event and the agenthost_media_* counters.
package pluginsound

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/internal/urlmask"
)

// Options configure an Out.
type Options struct {
	Mixer *mixer.Mixer
	// Hook runs an event hook (conversation.hooks); nil: none.
	Hook func(event string, fields map[string]string)
	Log  *slog.Logger
	// Poll is how often a stream's state is looked at (default 100 ms).
	Poll time.Duration
}

// Out is a pluginmgr.AudioOut on the speaker's mixer.
type Out struct {
	o Options

	mu    sync.Mutex
	names map[string]bool // the mixer names of the streams open
	stats Stats
	// The media hook's budget: a run costs a token; hookRate come back a
	// second, up to hookBurst. A plugin churning its streams would keep
	// the hooks' shared slots full (mute and wake would be skipped).
	tokens   float64
	filled   time.Time
	dropping bool // a run was skipped since the last one told
}

const (
	hookBurst = 20
	hookRate  = 2
)

// Stats are the counters of the plugins' sound.
type Stats struct {
	// Started counts the streams opened, by class.
	Started map[string]int64
	// Held counts the times the host turned a stream down, by how
	// ("ducked", "paused"): for the assistant, an announcement or a ring.
	Held map[string]int64
}

var _ pluginmgr.AudioOut = (*Out)(nil)

// New returns an Out on o.Mixer.
func New(o Options) *Out {
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Hook == nil {
		o.Hook = func(string, map[string]string) {}
	}
	return &Out{o: o, names: map[string]bool{}, stats: Stats{Started: map[string]int64{}, Held: map[string]int64{}},
		tokens: hookBurst, filled: time.Now()}
}

// hookAllowed takes a token of the media hook's budget; false: none is
// left, and the first such is logged.
func (o *Out) hookAllowed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	o.tokens = min(hookBurst, o.tokens+now.Sub(o.filled).Seconds()*hookRate)
	o.filled = now
	if o.tokens < 1 {
		if !o.dropping {
			o.o.Log.Warn("media hook skipped: plugins' sounds change too often", "most_per_second", hookRate)
		}
		o.dropping = true
		return false
	}
	o.tokens--
	o.dropping = false
	return true
}

// Stats reports the counters.
func (o *Out) Stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := Stats{Started: map[string]int64{}, Held: map[string]int64{}}
	for k, v := range o.stats.Started {
		st.Started[k] = v
	}
	for k, v := range o.stats.Held {
		st.Held[k] = v
	}
	return st
}

// Open implements pluginmgr.AudioOut.
func (o *Out) Open(source, class string, f audio.Format) (pluginmgr.AudioStream, error) {
	c, err := mixer.ParseClass(class)
	if err != nil {
		return nil, err
	}
	source = urlmask.InText(source) // pluginmgr does too; this door may have others
	o.mu.Lock()
	defer o.mu.Unlock()
	// The mixer keeps Reserved streams from media and announcements only;
	// a plugin's earcon (or ring, or voice) must leave them too.
	mo := o.o.Mixer.Options()
	if most := mo.MaxStreams - min(mixer.Reserved, mo.MaxStreams/2); len(o.names) >= most {
		return nil, fmt.Errorf("refused: plugins play %d streams already, the most (the other %d are kept for the speaker's replies, earcons and ring)",
			len(o.names), mo.MaxStreams-most)
	}
	// A name of its own: the stream's state is read from the mixer's status.
	name := source
	for i := 2; o.names[name]; i++ {
		name = fmt.Sprintf("%s (%d)", source, i)
	}
	st, err := o.o.Mixer.Open(name, c, f)
	if err != nil {
		return nil, err
	}
	o.names[name] = true
	o.stats.Started[c.String()]++
	s := &stream{out: o, st: st, name: name, source: source, class: c, quiet: c == mixer.Earcon,
		poke: make(chan struct{}, 1), end: make(chan struct{}), done: make(chan struct{}), telling: make(chan struct{}, 1)}
	go s.watch()
	return s, nil
}

// The states a stream is in, as the hook's STATE says them.
const (
	started = "started"
	ducked  = "ducked"
	paused  = "paused"
	resumed = "resumed" // back at its level after ducked or paused
	stopped = "stopped"
)

// stream is a plugin's stream on the mixer.
type stream struct {
	out    *Out
	st     *mixer.Stream
	name   string // on the mixer
	source string
	class  mixer.Class
	quiet  bool // an earcon: too short and many for the hook

	mu     sync.Mutex
	self   bool   // the plugin paused it
	state  string // the last told: started (playing), ducked or paused
	by     string // and by whom: "host", "plugin" or "" (playing)
	held   string // "" or how the host holds it now: ducked or paused
	onHeld func(state string)
	// telling is held while the plugin is told its hold, so that what it
	// hears comes in the order it happened (a channel: synctest sees it).
	telling chan struct{}

	poke chan struct{} // look at the state now
	end  chan struct{} // closed by finish
	once sync.Once
	done chan struct{} // the watcher has told its last
}

func (s *stream) Write(p []int16) (int, error) { return s.st.Write(p) }

func (s *stream) Close() error {
	err := s.st.Close()
	s.finish()
	return err
}

func (s *stream) Stop() {
	s.st.Stop()
	s.finish()
}

// OnHeld implements pluginmgr.AudioHolder.
func (s *stream) OnHeld(f func(state string)) {
	s.telling <- struct{}{}
	defer func() { <-s.telling }()
	s.mu.Lock()
	s.onHeld = f
	held := s.held
	s.mu.Unlock()
	if held != "" {
		f(held)
	}
}

func (s *stream) Pause(on bool) {
	s.mu.Lock()
	s.self = on
	s.st.Pause(on) // under s.mu: look sees the mixer's pause and self together
	s.mu.Unlock()
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// finish ends the watcher once, which tells the stop.
func (s *stream) finish() {
	s.once.Do(func() { close(s.end) })
	<-s.done
}

// watch follows the stream's state until it ends, and tells each change.
func (s *stream) watch() {
	defer close(s.done)
	o := s.out
	s.tell(started, "")
	t := time.NewTicker(o.o.Poll)
	defer t.Stop()
	for {
		s.look()
		select {
		case <-s.end:
			o.mu.Lock()
			delete(o.names, s.name)
			o.mu.Unlock()
			s.tell(stopped, "")
			return
		case <-s.poke:
		case <-t.C:
		}
	}
}

// look reads the stream's state from the mixer and tells a change.
func (s *stream) look() {
	now := started
	s.mu.Lock()
	status, prev, prevBy, self := s.out.o.Mixer.Status(), s.state, s.by, s.self
	s.mu.Unlock()
	found := false
	for _, st := range status {
		if st.Name != s.name {
			continue
		}
		found = true
		switch {
		case st.Paused:
			now = paused
		case st.Ducked:
			now = ducked
		}
	}
	if !found { // off the mixer (played out, or the speaker stopped): only its stop is left to tell
		return
	}
	by := ""
	switch {
	case now == paused && self:
		by = "plugin"
	case now != started:
		by = "host"
	}
	if now == prev && by == prevBy { // paused by the plugin, then by the host, is a change
		return
	}
	held := ""
	if by == "host" {
		held = now
	}
	s.hold(held)
	switch now {
	case started:
		s.tell(resumed, "")
		return
	case ducked, paused:
		if by == "host" {
			s.out.mu.Lock()
			s.out.stats.Held[now]++
			s.out.mu.Unlock()
		}
	}
	s.tell(now, by)
}

// hold records how the host holds the stream ("" for not at all) and tells
// the plugin a change.
func (s *stream) hold(held string) {
	s.telling <- struct{}{}
	defer func() { <-s.telling }()
	s.mu.Lock()
	prev, f := s.held, s.onHeld
	s.held = held
	s.mu.Unlock()
	if held == prev || f == nil {
		return
	}
	if held == "" {
		held = "playing"
	}
	f(held)
}

// tell records state as the stream's and runs the media hook.
func (s *stream) tell(state, by string) {
	s.mu.Lock()
	if state == resumed {
		s.state = started
	} else {
		s.state = state
	}
	s.by = by
	s.mu.Unlock()
	log := s.out.o.Log
	if state != started && state != stopped {
		log.Debug("plugin's sound", "source", s.source, "class", s.class.String(), "state", state, "by", by)
	}
	if s.quiet || !s.out.hookAllowed() {
		return
	}
	fields := map[string]string{"STATE": state, "CLASS": s.class.String(), "SOURCE": s.source}
	if by != "" {
		fields["BY"] = by
	}
	s.out.o.Hook("media", fields)
}
