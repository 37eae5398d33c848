// Package host is the daemon as a composition of parts: New builds each
// part (each in a package below this one) and joins it to the parts it
// needs; Run starts them in order, then the link; Apply gives each part
// its slice of a reloaded configuration. Nothing below calls back up here.
package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/mcpendpoint"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/metrics"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/pluginsound"
	"github.com/agenthost/agenthost/host/preflight"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/speaker"
	"github.com/agenthost/agenthost/host/talk"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
	"github.com/agenthost/agenthost/internal/statefile"
	"github.com/agenthost/agenthost/proto/voice"
)

// Version is the daemon's version, told to MCP servers and in
// agenthost_build_info (cmd sets it).
var Version = "dev"

// Component is a part of the daemon that runs beside the link (host/part).
type Component = part.Part

// Options say which daemon New composes.
type Options struct {
	// Standalone: this process is not the daemon (`agenthost mcp` or
	// `agenthost call` with no daemon running): it runs the plugins and MCP
	// servers only, and the device's services touch no state and answer
	// that the daemon is not running.
	Standalone bool
	// Watch: the plugin manager follows its folders (hot reload).
	Watch bool
	// Level is the logger's level, which a reload sets (nil: none).
	Level *slog.LevelVar
	// MCP, when set, serves the services over MCP on mcp.serve.listen.
	MCP *mcpserver.HTTPOptions
	// Version is the MCP endpoint's version.
	Version string
}

// Host is a configured daemon.
type Host struct {
	log     *slog.Logger
	cfg     atomic.Pointer[config.Config] // the configuration applied last
	link    *link.Link
	calls   *calls.Calls        // the registry, the dispatcher, the register
	mcp     *mcpservers.Servers // the MCP servers
	speaker *speaker.Speaker    // the device and its buttons
	talk    *talk.Talk          // the conversation and the wake word; nil when standalone
	parts   []part.Part         // in the order they start, before the link
	reload  []part.Reloader     // in the order a reload reaches them
	taps    []func(voice.Frame) // conversation taps
	replies replies             // those `agenthost say` waits for
}

// New composes the daemon from a loaded configuration: this function is
// the list of its parts, in the order they start, and of what each needs
// from the others.
func New(cfg *config.Config, log *slog.Logger, o Options) (*Host, error) {
	if _, err := cfg.Plugins.EnsureRuntimeDirectory(); err != nil {
		return nil, err
	}
	if err := cfg.Plugins.CheckStateDirectory(); err != nil {
		return nil, err
	}
	h := &Host{log: log}
	h.cfg.Store(cfg)
	if o.Standalone {
		logSandbox(cfg, log) // the daemon's start says it with the rest (host/preflight)
	} else {
		sweepTemporaries(cfg)
	}
	// The MCP servers the configuration names rank the registry's providers.
	set := mcpservers.NewSet(cfg, log)
	c, err := calls.New(cfg, log, func(cfg *config.Config) (map[string]string, []string) {
		mcp := set.Configs()
		return mcpservers.Prefixes(cfg, mcp), mcpservers.Order(cfg, mcp)
	})
	if err != nil {
		return nil, err
	}
	h.calls = c
	c.OnCall(h.replies.call)
	// The microphone's mute is asked again as each audio frame is written
	// (h.speaker is set below, before the link runs); a frame dropped there
	// counts as withheld, as one the conversation holds back does.
	h.link = link.New(link.Options{Server: cfg.Server, Token: cfg.Token, Log: log,
		Withheld: func() bool {
			d := h.speaker.Device()
			if !d.MicMuted() {
				return false
			}
			d.Withheld()
			return true
		}}, (*linkHandler)(h))
	c.SetLink(h.link)
	h.speaker, err = speaker.New(speaker.Options{Config: cfg, Log: log, Registry: c.Registry(), Standalone: o.Standalone, Current: h.Config,
		Up:           func() bool { up, _ := h.link.Up(); return up },
		Conversation: func() speaker.Conversation { return h.conversation() },
		WakeOn:       func() bool { return talk.WakeStatus(h.talk, h.Config()).On }})
	if err != nil {
		return nil, err
	}
	pc := cfg.Plugins
	var sound pluginmgr.AudioOut // plugins play only in the daemon
	var media *pluginsound.Out
	if m := h.speaker.Output(); m != nil {
		media = pluginsound.New(pluginsound.Options{Mixer: m, Log: log, Hook: func(event string, fields map[string]string) {
			if c := h.conversation(); c != nil {
				c.Event(event, fields)
			}
		}})
		sound = media
	}
	plugins := pluginmgr.New(pluginmgr.Options{Plugins: pc, RuntimeDir: pc.RuntimeDirectory(), Watch: o.Watch, Log: log, Audio: sound, Jail: cfg.Jail()}, c.Registry())
	h.mcp = mcpservers.New(cfg, set, c.Registry(), log, Version)
	h.parts = []part.Part{plugins, h.mcp}
	// A reload: the log level, the MCP set (the prefixes follow it), the
	// registry and dispatcher, the device, the plugins, the conversation,
	// the MCP servers, and the link last.
	h.reload = []part.Reloader{logLevel(o.Level), set, c, h.speaker, pluginSettings(plugins, set)}
	if o.Standalone {
		return h, nil
	}
	if h.talk, err = talk.New(cfg, log, h.link, h.speaker); err != nil {
		return nil, err
	}
	h.reload = append(h.reload, h.talk, h.mcp, serverSettings(h.link, log))
	h.talk.SetPlay(func(ctx context.Context, caller services.Caller, url, class string) voice.Outcome {
		params, _ := json.Marshal(map[string]string{"url": url, "class": class})
		return h.calls.Local(services.WithCaller(ctx, caller), "play_media", params)
	})
	if p := h.talk.HouseholdServices(); p != nil {
		if err := h.calls.Registry().Put(p); err != nil {
			log.Warn("the household's services are not offered", "err", err)
		}
	}
	h.parts = append(h.parts, h.talk.Parts()...) // the household, the wake word, the conversation
	h.parts = append(h.parts, h.speaker)         // timers and alarms
	if b := h.speaker.MicButton(); b != nil {
		h.parts = append(h.parts, b)
	}
	h.parts = append(h.parts, h.speaker.Triggers()...)
	h.parts = append(h.parts, h.controlServer(plugins))
	if addr := cfg.Metrics.Listen; addr != "" {
		h.parts = append(h.parts, metrics.New(addr, cfg.Metrics.Hosts, Version, log, metrics.Sources{Link: h.link, Calls: c, Plugins: plugins, MCP: h.mcp,
			Conversation: h.talk.Conversation(), Wake: h.talk.Detector(), Device: h.speaker.Device(), Mixer: h.speaker.Output(), Media: media}))
	}
	if o.MCP != nil {
		e := mcpendpoint.New(cfg, c, log, cfg.MCP.Serve.Listen, o.Version, *o.MCP)
		h.parts = append(h.parts, e)
		h.reload = append(h.reload, e) // services.max_in_flight_per_provider bounds its clients too
	}
	return h, nil
}

// NewStandalone composes the host of a process that is not the daemon
// (Options.Standalone); watch follows the plugins' folders.
func NewStandalone(cfg *config.Config, log *slog.Logger, watch bool) (*Host, error) {
	return New(cfg, log, Options{Standalone: true, Watch: watch})
}

// controlServer is the control socket with the endpoints of the parts.
func (h *Host) controlServer(plugins *pluginmgr.Manager) *control.Server {
	s := control.NewServer(h.Config().ControlSocketPath(), h.log)
	control.HandleJSON(s, "GET /v1/status", func(context.Context, struct{}) (any, error) { return h.Status(), nil })
	h.calls.Endpoints(s)
	control.HandleJSON(s, "GET /v1/plugins", func(context.Context, struct{}) (any, error) { return plugins.Status(), nil })
	control.HandleJSON(s, "POST /v1/say", func(ctx context.Context, in SayRequest) (any, error) {
		return h.SayAndWait(ctx, in.Text, time.Duration(in.WaitMS)*time.Millisecond)
	})
	h.speaker.Endpoints(s)
	control.HandleJSON(s, "POST /v1/household/play", func(ctx context.Context, in talk.RoomPlay) (any, error) {
		return h.talk.PlayInRooms(ctx, in)
	})
	mcpendpoint.Endpoints(s, h.calls.Registry()) // for `agenthost mcp`
	return s
}

// SayRequest is the body of POST /v1/say.
type SayRequest struct {
	Text string `json:"text"`
	// WaitMS, above zero, waits up to this many milliseconds for the
	// reply (SayAndWait).
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// SayText starts a text turn and waits for the server's answer to it
// (talk.SayText).
func (h *Host) SayText(ctx context.Context, text string) (string, error) {
	return talk.SayText(ctx, h.talk, h.log, text)
}

// conversation is the conversation, nil when there is none.
func (h *Host) conversation() speaker.Conversation {
	if h.talk == nil {
		return nil
	}
	return h.talk.Conversation()
}

// Conversation is the daemon's conversation; nil when standalone.
func (h *Host) Conversation() *conversation.Conversation {
	if h.talk == nil {
		return nil
	}
	return h.talk.Conversation()
}

// Registry is the merged set of services; providers are added to it.
func (h *Host) Registry() *services.Registry { return h.calls.Registry() }

// Link is the connection to the voice server.
func (h *Host) Link() *link.Link { return h.link }

// Config is the configuration the host runs with (the last one applied).
func (h *Host) Config() *config.Config { return h.cfg.Load() }

// Log is the host's logger.
func (h *Host) Log() *slog.Logger { return h.log }

// Add adds a part to run after the composition's own (before systemd's
// notifier, which Run starts last).
func (h *Host) Add(c Component) { h.parts = append(h.parts, c) }

// OnFrame adds a tap that sees every conversation frame from the server
// (TEXT, AUDIO, END, EMOJI, LISTEN, STATUS of a task). Add taps before Run.
func (h *Host) OnFrame(f func(voice.Frame)) { h.taps = append(h.taps, f) }

// CallRecord is one call from the voice server, as observers see it.
type CallRecord = calls.Record

// OnCall adds an observer of every call from the voice server (metrics).
// Add observers before Run; they must not block.
func (h *Host) OnCall(f func(CallRecord)) { h.calls.OnCall(f) }

// CallLocal runs one call through the same dispatch as the server's calls,
// with a budget of calls in flight of its own (calls.Calls.Local).
func (h *Host) CallLocal(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
	return h.calls.Local(ctx, service, params)
}

// logSandbox says once, at the start, how the children will run.
func logSandbox(cfg *config.Config, log *slog.Logger) {
	f := preflight.Sandbox(cfg)
	log.Log(context.Background(), f.Level, f.Msg)
}

// sweepTemporaries removes the temporaries a writer killed mid-write left
// in the state folders the daemon's own writers write (the device's state
// and timers, the owners' verifiers), however young, but not one a writer
// holds now (statefile.Sweep). The plugin manager sweeps its own (the
// description cache, the socket folders) as it starts.
func sweepTemporaries(cfg *config.Config) {
	state := cfg.Plugins.StateDirectory()
	if state == "" {
		return
	}
	for _, dir := range []string{"device", hostwake.VerifierFolder} {
		statefile.Sweep(filepath.Join(state, dir))
	}
}
