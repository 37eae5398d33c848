package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/agenthost/agenthost/host/preflight"
	"github.com/agenthost/agenthost/host/talk"
	"github.com/agenthost/agenthost/proto/voice"
)

func init() {
	commands["check"] = command{"say what run would refuse or warn about in the configuration, show it with secrets masked, and try the server", cmdCheck}
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
	// What `agenthost run` would say at its start (host/preflight).
	findings := preflight.Run(context.Background(), cfg, true)
	lines, errs, warns := checkLines(cfg.Warnings, findings)
	switch {
	case errs > 0:
		fmt.Fprintf(e.stdout, "configuration: %s: %d error(s): `agenthost run` refuses to start with it\n", src, errs)
	case warns > 0:
		fmt.Fprintf(e.stdout, "configuration: %s: OK, with %d warning(s)\n", src, warns)
	default:
		fmt.Fprintf(e.stdout, "configuration: %s: OK\n", src)
	}
	fmt.Fprint(e.stdout, lines)
	fmt.Fprintf(e.stdout, "\n# effective settings (secrets masked)\n%s\n", cfg.Redacted())
	if cfg.Audio.Backend == "portaudio" {
		report, warn := audio.SoundReport(os.Getuid(), audio.SoundServers())
		fmt.Fprintf(e.stdout, "sound: %s\n", report)
		if warn != "" {
			fmt.Fprintf(e.stdout, "warning: %s\n", warn)
		}
	}
	if errs > 0 {
		return &exitError{exitConfig, fmt.Errorf("the configuration has %d error(s); see above", errs)}
	}
	if cfg.Conversation.WakeWord.On() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		said, err := talk.CheckWakeWord(ctx, cfg)
		cancel()
		if err != nil {
			return &exitError{exitConfig, err}
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

// checkLines are the configuration's warnings and the start's findings,
// one a line: "error:" (run refuses to start), "warning:", or "note:".
func checkLines(warnings []string, findings []preflight.Finding) (lines string, errs, warns int) {
	var b strings.Builder
	for _, w := range warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
		warns++
	}
	for _, f := range findings {
		switch {
		case f.Fatal:
			fmt.Fprintf(&b, "error: %s\n", f.Msg)
			errs++
		case f.Level >= slog.LevelWarn:
			fmt.Fprintf(&b, "warning: %s\n", f.Msg)
			warns++
		default:
			fmt.Fprintf(&b, "note: %s\n", f.Msg)
		}
	}
	return b.String(), errs, warns
}

func (e *env) client(cfg *config.Config) *control.Client {
	return control.NewClient(cfg.ControlSocketPath())
}

// do sends a request to the daemon; when none answers, the error says
// which file and socket were tried and how to name the daemon's file.
func (e *env) do(ctx context.Context, cfg *config.Config, endpoint string, in, out any) error {
	err := e.client(cfg).Do(ctx, endpoint, in, out)
	if errors.Is(err, control.ErrNotRunning) {
		return fmt.Errorf("%w: nothing answers at %s, the control socket of %s. "+
			"A daemon started with --config FILE is found with the same --config FILE, or AGENTHOST_CONFIG=FILE "+
			"(the CLI takes %s, then AGENTHOST_CONFIG, then --config); conversation.control_socket or plugins.runtime_dir in that file moves the socket",
			control.ErrNotRunning, cfg.ControlSocketPath(), e.configSource(cfg), config.DefaultPath)
	}
	return err
}

// quickAnswer bounds a request the daemon answers at once (status,
// plugins, say, talk): a daemon that does not answer within it is reported.
// A call has no such bound: the daemon ends it at the service's deadline.
const quickAnswer = 60 * time.Second

// ask sends a request the daemon answers at once to endpoint.
func (e *env) ask(cfg *config.Config, endpoint string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), quickAnswer)
	defer cancel()
	return e.do(ctx, cfg, endpoint, in, out)
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
	standalone := ""
	if errors.Is(err, control.ErrNotRunning) {
		standalone = fmt.Sprintf("standalone, on %s", e.configSource(cfg))
		fmt.Fprintf(e.stderr, "no agenthost daemon answers at %s: running %s %s: its plugins and MCP servers, in this process (name the daemon's file with --config or AGENTHOST_CONFIG)\n",
			cfg.ControlSocketPath(), service, standalone)
		out, err = callWithoutDaemon(cfg, service, params)
	}
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(e.stdout, string(b))
	if !out.Success {
		if standalone != "" {
			return &exitError{1, fmt.Errorf("%s failed (%s): %s", service, standalone, out.Error)}
		}
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
	noWait := fs.Bool("no-wait", false, "do not wait for the reply: print the turn's task and return")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for the reply's end")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	if text == "" {
		return usageErr("usage: agenthost say [--no-wait] [--timeout D] TEXT (agenthost help say)")
	}
	if !*noWait && *timeout <= 0 {
		return usageErr("--timeout %s: give a duration above zero (e.g. 30s), or --no-wait", *timeout)
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	if *noWait {
		var out host.SayAnswer
		if err := e.ask(cfg, "POST /v1/say", host.SayRequest{Text: text}, &out); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "sent on task %s\n", out.Task)
		return nil
	}
	// The daemon ends the wait at the timeout and answers with what came;
	// quickAnswer is for sending the turn.
	ctx, cancel := context.WithTimeout(context.Background(), *timeout+quickAnswer)
	defer cancel()
	var out host.SayAnswer
	req := host.SayRequest{Text: text, WaitMS: max(timeout.Milliseconds(), 1)}
	if err := e.do(ctx, cfg, "POST /v1/say", req, &out); err != nil {
		return err
	}
	return printReply(e, out, *timeout)
}

// printReply prints a reply's text and the services called; a reply that
// failed or did not end in time is an error (status 1).
func printReply(e *env, out host.SayAnswer, timeout time.Duration) error {
	if out.Text != "" {
		fmt.Fprintln(e.stdout, out.Text)
	}
	if len(out.Calls) > 0 {
		fmt.Fprintf(e.stdout, "called: %s\n", strings.Join(out.Calls, ", "))
	}
	switch {
	case out.CutBy != "":
		fmt.Fprintf(e.stdout, "(the reply was cut off: the server went on to task %s)\n", out.CutBy)
	case out.Failed != "":
		return fmt.Errorf("the server answered the turn on task %s with %s", out.Task, out.Failed)
	case !out.Ended && out.Text == "":
		return fmt.Errorf("no reply on task %s within %s (the speaker still plays it if it comes): give --timeout a longer time, or --no-wait not to wait", out.Task, timeout)
	case !out.Ended:
		return fmt.Errorf("the reply on task %s did not end within %s (the text above is what came; the speaker plays the rest): give --timeout a longer time", out.Task, timeout)
	case out.Text == "":
		fmt.Fprintf(e.stdout, "(the reply on task %s had no text)\n", out.Task)
	}
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
		if p.ConfigRejected != "" {
			fmt.Fprintf(e.stdout, "  config rejected: %s\n", p.ConfigRejected)
		}
	}
	return nil
}
