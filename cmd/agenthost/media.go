package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/calls"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/proto/voice"
)

func init() {
	commands["play"] = command{"play music or radio through the running daemon's media plugin: agenthost play FILE|URL", cmdPlay("play", "media")}
	commands["announce"] = command{"play an announcement over ducked media: agenthost announce FILE|URL", cmdPlay("announce", "announcement")}
}

// cmdPlay calls the media plugin's play_media service in the running daemon.
func cmdPlay(name, class string) func(e *env, args []string) error {
	return func(e *env, args []string) error {
		fs := e.flags(name)
		if err := e.parse(fs, args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usageErr("usage: agenthost %s FILE|URL", name)
		}
		what := fs.Arg(0)
		if u, err := url.Parse(what); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
			abs, err := filepath.Abs(what) // the plugin takes absolute paths only
			if err != nil {
				return err
			}
			what = abs
		}
		cfg, err := e.loadConfig()
		if err != nil {
			return err
		}
		params, err := json.Marshal(map[string]string{"url": what, "class": class})
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		var out voice.Outcome
		err = e.client(cfg).Do(ctx, "POST /v1/call", calls.CallRequest{Service: "play_media",
			Params: params}, &out)
		if errors.Is(err, control.ErrNotRunning) {
			return fmt.Errorf("the daemon is not running; %s plays through its speaker", name)
		}
		if err != nil {
			return err
		}
		if !out.Success {
			if strings.HasPrefix(out.Error, `unknown service "play_media"`) {
				return &exitError{1, errors.New("no media plugin is loaded (nothing offers play_media): put the media plugin into a folder of plugins.dirs")}
			}
			return &exitError{1, fmt.Errorf("%s %s: %s", name, what, out.Error)}
		}
		fmt.Fprintf(e.stdout, "playing %s (%s)\n", what, class)
		return nil
	}
}
