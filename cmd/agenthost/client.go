package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/talk"
	"github.com/agenthost/agenthost/proto/voice"
)

func init() {
	commands["check"] = command{"validate the configuration, show it with secrets masked, and try the server", cmdCheck}
	commands["call"] = command{"call a service: agenthost call SERVICE ['{json params}']", cmdCall}
	commands["say"] = command{"send a text turn through the running daemon: agenthost say TEXT", cmdSay}
	commands["status"] = command{"show the running daemon's state", cmdStatus}
	commands["plugins"] = command{"list the running daemon's plugins: path, version, state, services, restarts", cmdPlugins}
}

func cmdCheck(e *env, args []string) error {
	fs := e.flags("check")
	offline := fs.Bool("offline", false, "do not try the server")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	src := cfg.Path
	if src == "" {
		src = "built-in defaults (no file)"
	}
	fmt.Fprintf(e.stdout, "configuration: %s: OK\n", src)
	for _, w := range cfg.Warnings {
		fmt.Fprintf(e.stdout, "warning: %s\n", w)
	}
	fmt.Fprintf(e.stdout, "\n# effective settings (secrets masked)\n%s\n", cfg.Redacted())
	if cfg.Audio.Backend == "portaudio" {
		report, warn := audio.SoundReport(os.Getuid(), audio.SoundServers())
		fmt.Fprintf(e.stdout, "sound: %s\n", report)
		if warn != "" {
			fmt.Fprintf(e.stdout, "warning: %s\n", warn)
		}
	}
	if cfg.Conversation.WakeWord.On() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		said, err := talk.CheckWakeWord(ctx, cfg)
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wake word: %s\n", said)
	}
	if *offline {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Server.DialTimeout.D()+cfg.Server.AuthTimeout.D()+2*time.Second)
	defer cancel()
	said, err := link.Probe(ctx, link.Options{Server: cfg.Server, Token: cfg.Token})
	for _, s := range said {
		fmt.Fprintf(e.stdout, "server said: %s\n", s)
	}
	if err != nil {
		return fmt.Errorf("server %s: %w", cfg.Server.Address, err)
	}
	fmt.Fprintf(e.stdout, "server %s: reachable; AUTH accepted (no error within %s)\n", cfg.Server.Address, cfg.Server.AuthTimeout.D())
	return nil
}

func (e *env) client(cfg *config.Config) *control.Client {
	return control.NewClient(cfg.ControlSocketPath())
}

// quickAnswer bounds a request the daemon answers at once (status,
// plugins, say, talk): a daemon that does not answer within it is reported.
// A call has no such bound: the daemon ends it at the service's deadline.
const quickAnswer = 60 * time.Second

// ask sends a request the daemon answers at once to endpoint.
func (e *env) ask(cfg *config.Config, endpoint string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), quickAnswer)
	defer cancel()
	return e.client(cfg).Do(ctx, endpoint, in, out)
}

func cmdCall(e *env, args []string) error {
	fs := e.flags("call")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageErr("usage: agenthost call SERVICE ['{json params}']")
	}
	service, params := fs.Arg(0), json.RawMessage(`{}`)
	if fs.NArg() == 2 {
		params = json.RawMessage(fs.Arg(1))
		if !json.Valid(params) {
			return usageErr("the params are not valid JSON: %s", params)
		}
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	var out voice.Outcome
	ctx, stop := signalContext() // Ctrl-C ends the call in the daemon too
	defer stop()
	err = e.client(cfg).Do(ctx, "POST /v1/call", calls.CallRequest{Service: service, Params: params}, &out)
	if errors.Is(err, control.ErrNotRunning) {
		out, err = callWithoutDaemon(cfg, service, params)
	}
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(e.stdout, string(b))
	if !out.Success {
		return &exitError{1, fmt.Errorf("%s failed: %s", service, out.Error)}
	}
	return nil
}

// callWithoutDaemon starts the host's providers in this process, runs one
// call through the same dispatch, and stops them. The device is the
// daemon's: its services answer that the daemon is not running.
func callWithoutDaemon(cfg *config.Config, service string, params json.RawMessage) (voice.Outcome, error) {
	h, err := host.NewStandalone(cfg, newLogger(cfg, discard{}), false)
	if err != nil {
		return voice.Outcome{}, err
	}
	var out voice.Outcome
	err = h.RunProviders(context.Background(), func(ctx context.Context) {
		out = h.CallLocal(ctx, service, params)
	})
	return out, err
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func cmdSay(e *env, args []string) error {
	fs := e.flags("say")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	if text == "" {
		return usageErr("usage: agenthost say TEXT")
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	var out struct{ Task string }
	if err := e.ask(cfg, "POST /v1/say", host.SayRequest{Text: text}, &out); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "sent on task %s\n", out.Task)
	return nil
}

func cmdStatus(e *env, args []string) error {
	fs := e.flags("status")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	var st host.Status
	if err := e.ask(cfg, "GET /v1/status", nil, &st); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	fmt.Fprintln(e.stdout, string(b))
	return nil
}

func cmdPlugins(e *env, args []string) error {
	fs := e.flags("plugins")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	var list []pluginmgr.Status
	if err := e.ask(cfg, "GET /v1/plugins", nil, &list); err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(e.stdout, "no plugins (folders: %s)\n", strings.Join(cfg.Plugins.Dirs, ", "))
	}
	for _, p := range list {
		proc := fmt.Sprintf("pid %d", p.PID)
		if p.PID == 0 {
			proc = "no process"
			if p.State == "idle" {
				proc += " (lazy: the next call starts it)"
			}
		}
		fmt.Fprintf(e.stdout, "%s %s  %s  %s  restarts %d\n  path: %s\n  services: %s\n", p.Name, p.Version, p.State, proc, p.Restarts, p.Path, strings.Join(p.Services, ", "))
		if p.LastError != "" {
			fmt.Fprintf(e.stdout, "  last error: %s\n", p.LastError)
		}
	}
	return nil
}
