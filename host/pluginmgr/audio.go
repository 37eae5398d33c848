package pluginmgr

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/urlmask"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// AudioOut is where plugins' sound goes: the host's output mixer.
type AudioOut interface {
	// Open starts a stream named source (e.g. "plugin:media/radio") of class
	// ring, voice, earcon, announcement or media, of PCM in format f.
	Open(source, class string, f audio.Format) (AudioStream, error)
}

// AudioStream is one stream of an AudioOut.
type AudioStream interface {
	// Write queues interleaved samples at the stream's format; it blocks
	// while the stream's buffer is full (or it is paused), and returns an
	// error once the stream was stopped.
	Write(p []int16) (int, error)
	// Close waits until what was written has played (or Stop), then frees
	// the stream.
	Close() error
	// Stop ends the stream at once, dropping what is queued; a Write or
	// Close waiting returns. It may be called more than once, and after Close.
	Stop()
	// Pause holds (true) or resumes (false) the stream.
	Pause(paused bool)
}

// AudioHolder is an AudioStream that says when the host's own policy
// turns it down or holds it (the assistant's turn, an announcement, a
// ring), which the plugin is told (AudioEvent.held).
type AudioHolder interface {
	// OnHeld has f called with "ducked", "paused" or "playing" (back at
	// its level) at each change from now on, at once when it is held now.
	OnHeld(f func(state string))
}

// audioHost serves HostAudio to the plugins, under the plugins.audio policy.
type audioHost struct {
	out AudioOut // nil: plugins cannot play
	log *slog.Logger

	mu      sync.Mutex
	policy  config.PluginAudio
	perName map[string]int      // streams playing, by plugin name
	streams map[uint64]*playing // by stream id
	nextID  atomic.Uint64
}

// playing is one stream a plugin plays.
type playing struct {
	plugin string
	st     AudioStream
	events chan<- *pluginv1.AudioEvent
	slot   *slot
}

// slot is a stream's place in its plugin's count (plugins.audio.max_streams),
// given back once: by Stop, or when its Play ends.
type slot struct {
	plugin string
	freed  bool // guarded by audioHost.mu
}

func newAudioHost(out AudioOut, p config.PluginAudio, log *slog.Logger) *audioHost {
	return &audioHost{out: out, log: log, policy: p, perName: map[string]int{}, streams: map[uint64]*playing{}}
}

func (h *audioHost) setPolicy(p config.PluginAudio) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.policy = p
}

// server returns the HostAudio server of the plugin called name; hold
// keeps its process from an idle stop until release.
func (h *audioHost) server(name string, hold func() (release func())) pluginv1.HostAudioServer {
	return &pluginAudio{h: h, name: name, hold: hold}
}

// admit checks the policy for a new stream of class from plugin and counts
// it in the slot it returns; release gives the slot back.
func (h *audioHost) admit(plugin, class string) (*slot, error) {
	if h.out == nil {
		return nil, status.Error(codes.FailedPrecondition, "this host has no audio output for plugins")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.policy
	switch {
	case slices.Contains(p.Deny, plugin):
		return nil, status.Errorf(codes.PermissionDenied, "plugin %s may not play (plugins.audio.deny)", plugin)
	case !slices.Contains(p.Classes, class):
		return nil, status.Errorf(codes.PermissionDenied, "plugins may not play class %q (plugins.audio.classes: %v)", class, p.Classes)
	case h.perName[plugin] >= p.MaxStreams:
		return nil, status.Errorf(codes.ResourceExhausted, "plugin %s already plays %d streams (plugins.audio.max_streams)", plugin, h.perName[plugin])
	}
	h.perName[plugin]++
	return &slot{plugin: plugin}, nil
}

// release gives sl back, once.
func (h *audioHost) release(sl *slot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sl.freed {
		return
	}
	sl.freed = true
	if h.perName[sl.plugin]--; h.perName[sl.plugin] <= 0 {
		delete(h.perName, sl.plugin)
	}
}

// pluginAudio is one plugin's HostAudio server.
type pluginAudio struct {
	pluginv1.UnimplementedHostAudioServer
	h    *audioHost
	name string
	hold func() (release func())
}

func validHeader(hd *pluginv1.AudioHeader) error {
	switch {
	case hd == nil:
		return status.Error(codes.InvalidArgument, "the first message of Play must carry the header")
	case !slices.Contains(pluginv1.AudioClasses, hd.GetClass()):
		return status.Errorf(codes.InvalidArgument, "class %q is not one of %v", hd.GetClass(), pluginv1.AudioClasses)
	case hd.GetRate() < 8000 || hd.GetRate() > 192000:
		return status.Errorf(codes.InvalidArgument, "rate %d Hz is not within 8000..192000", hd.GetRate())
	case hd.GetChannels() < 1 || hd.GetChannels() > 2:
		return status.Errorf(codes.InvalidArgument, "%d channels; 1 or 2 are played", hd.GetChannels())
	case len(hd.GetName()) > 200:
		return status.Error(codes.InvalidArgument, "the stream's name is longer than 200 bytes")
	}
	return nil
}

// Play implements pluginv1.HostAudioServer.
func (a *pluginAudio) Play(s pluginv1.HostAudio_PlayServer) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	hd := first.GetHeader()
	if err := validHeader(hd); err != nil {
		return err
	}
	sl, err := a.h.admit(a.name, hd.GetClass())
	if err != nil {
		return err
	}
	b := bound{}
	if hd.GetClass() == "announcement" {
		a.h.mu.Lock()
		d := a.h.policy.MaxAnnouncement.D()
		a.h.mu.Unlock()
		b = bound{frames: int64(d.Seconds() * float64(hd.GetRate())),
			why: fmt.Sprintf("stopped by the host: an announcement plays at most %s (plugins.audio.max_announcement)", d)}
	}
	defer a.h.release(sl)
	defer a.hold()() // busy while it plays: no idle stop
	source := "plugin:" + a.name
	if hd.GetName() != "" {
		source += "/" + urlmask.InText(hd.GetName()) // for the log and status: no URL's token
	}
	f := audio.Format{Rate: int(hd.GetRate()), Channels: int(hd.GetChannels())}
	st, err := a.h.out.Open(source, hd.GetClass(), f)
	if err != nil {
		return status.Errorf(codes.Unavailable, "the host's output did not take the stream: %v", err)
	}
	// Events come from Pause as well as from here; one sender keeps them
	// in order (a gRPC stream's Send is not for concurrent use).
	events := make(chan *pluginv1.AudioEvent, 4)
	id := a.h.nextID.Add(1)
	a.h.mu.Lock()
	a.h.streams[id] = &playing{plugin: a.name, st: st, events: events, slot: sl}
	a.h.mu.Unlock()
	sent := make(chan error, 1)
	go func() {
		for ev := range events {
			if err := s.Send(ev); err != nil {
				sent <- err
				for range events { // drain until closed
				}
				return
			}
		}
		sent <- nil
	}()
	log := a.h.log.With("plugin", a.name, "source", source, "class", hd.GetClass(), "format", f.String())
	log.Info("plugin plays")
	// The plugin gone (its process or its cancel) stops the sound at once.
	stopOnCancel := context.AfterFunc(s.Context(), st.Stop)
	fin := a.pump(s, st, events, id, f.Channels, b)
	stopOnCancel()
	a.h.mu.Lock()
	delete(a.h.streams, id) // Pause sends under mu, so none comes after this
	a.h.mu.Unlock()
	select { // a plugin that reads no events, and fills its window with Pause, holds only itself
	case events <- &pluginv1.AudioEvent{Event: &pluginv1.AudioEvent_Finished{Finished: fin}}:
	case <-s.Context().Done():
	}
	close(events)
	log.Info("plugin's stream ended", "played_out", fin.GetPlayedOut(), "reason", fin.GetReason())
	if err := <-sent; err != nil && s.Context().Err() == nil {
		return err
	}
	return nil
}

// bound is how many frames a stream may play (an announcement's), and what
// its end says; frames 0: no bound.
type bound struct {
	frames int64
	why    string
}

// pump writes the plugin's PCM to st until the plugin closes its side (the
// sound plays out), the stream is stopped, the plugin goes, or it has
// played b's frames.
func (a *pluginAudio) pump(s pluginv1.HostAudio_PlayServer, st AudioStream, events chan<- *pluginv1.AudioEvent, id uint64, channels int, b bound) *pluginv1.AudioFinished {
	events <- &pluginv1.AudioEvent{Event: &pluginv1.AudioEvent_Started{Started: &pluginv1.AudioStarted{StreamId: id}}}
	if h, ok := st.(AudioHolder); ok {
		h.OnHeld(func(state string) {
			a.h.mu.Lock() // as Pause: none is sent once the stream left a.h.streams
			defer a.h.mu.Unlock()
			if _, ok := a.h.streams[id]; !ok {
				return
			}
			select {
			case events <- &pluginv1.AudioEvent{Event: &pluginv1.AudioEvent_Held{Held: &pluginv1.AudioHeld{State: state}}}:
			default: // the plugin reads no events
			}
		})
	}
	var buf []int16
	var frames int64
	for {
		msg, err := s.Recv()
		if errors.Is(err, io.EOF) {
			if err := st.Close(); err != nil {
				return &pluginv1.AudioFinished{Reason: fmt.Sprintf("stopped by the host: %v", err)}
			}
			return &pluginv1.AudioFinished{PlayedOut: true}
		}
		if err != nil {
			st.Stop()
			return &pluginv1.AudioFinished{Reason: "the plugin ended it (or went away)"}
		}
		pcm := msg.GetPcm()
		if len(pcm) > pluginv1.MaxAudioChunk || len(pcm)%(2*channels) != 0 {
			st.Stop()
			return &pluginv1.AudioFinished{Reason: fmt.Sprintf("stopped: a chunk of %d bytes is not whole frames of at most %d bytes", len(pcm), pluginv1.MaxAudioChunk)}
		}
		last := false // the chunk that reaches an announcement's bound
		if b.frames > 0 {
			if left := b.frames - frames; int64(len(pcm)/(2*channels)) >= left {
				pcm, last = pcm[:left*int64(2*channels)], true
			}
			frames += int64(len(pcm) / (2 * channels))
		}
		buf = slices.Grow(buf[:0], len(pcm)/2)[:len(pcm)/2]
		for i := range buf {
			buf[i] = int16(binary.LittleEndian.Uint16(pcm[2*i:]))
		}
		if _, err := st.Write(buf); err != nil {
			st.Stop()
			return &pluginv1.AudioFinished{Reason: fmt.Sprintf("stopped by the host: %v", err)}
		}
		if last { // what it sent up to the bound plays out; nothing more is taken
			st.Close()
			return &pluginv1.AudioFinished{Reason: b.why}
		}
	}
}

// Pause implements pluginv1.HostAudioServer.
func (a *pluginAudio) Pause(_ context.Context, req *pluginv1.PauseAudioRequest) (*pluginv1.PauseAudioResponse, error) {
	a.h.mu.Lock()
	defer a.h.mu.Unlock()
	p, ok := a.h.streams[req.GetStreamId()]
	if !ok || p.plugin != a.name {
		return nil, status.Errorf(codes.NotFound, "no stream %d of this plugin plays", req.GetStreamId())
	}
	p.st.Pause(req.GetPaused())
	select {
	case p.events <- &pluginv1.AudioEvent{Event: &pluginv1.AudioEvent_Paused{Paused: &pluginv1.AudioPaused{Paused: req.GetPaused()}}}:
	default: // the plugin reads no events; it knows what it asked
	}
	return &pluginv1.PauseAudioResponse{}, nil
}

// Stop implements pluginv1.HostAudioServer: the stream leaves the mixer
// and gives its slot back before the answer, so that the plugin's next Play
// (its replacement) has the place; its Play ends on its own.
func (a *pluginAudio) Stop(_ context.Context, req *pluginv1.StopAudioRequest) (*pluginv1.StopAudioResponse, error) {
	a.h.mu.Lock()
	p, ok := a.h.streams[req.GetStreamId()]
	a.h.mu.Unlock()
	if !ok || p.plugin != a.name {
		return nil, status.Errorf(codes.NotFound, "no stream %d of this plugin plays", req.GetStreamId())
	}
	p.st.Stop() // not under mu: the stream's watcher tells the plugin its hold under it
	a.h.release(p.slot)
	return &pluginv1.StopAudioResponse{}, nil
}

// holdPlugin keeps the plugin called name from an idle stop until release.
func (m *Manager) holdPlugin(name string) (release func()) {
	m.mu.Lock()
	p := m.plugins[name]
	m.mu.Unlock()
	if p != nil {
		if release, ok := p.sup.Hold(); ok {
			return release
		}
	}
	return func() {}
}

// pluginSet is the go-plugin plugin set for the plugin called name: with a
// HostAudio server when the host has an output for plugins.
func (m *Manager) pluginSet(name string) goplugin.PluginSet {
	if m.audio == nil || m.audio.out == nil {
		return pluginv1.PluginSet()
	}
	return pluginv1.PluginSetWithAudio(m.audio.server(name, func() func() { return m.holdPlugin(name) }))
}
