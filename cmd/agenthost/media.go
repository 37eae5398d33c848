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
	"github.com/agenthost/agenthost/host/talk"
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
		room := fs.String("room", "", "play it on the household's speakers in this room (all: in every room), together; a URL only")
		if err := e.parse(fs, args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usageErr("usage: agenthost %s [--room ROOM|all] FILE|URL", name)
		}
		what := fs.Arg(0)
		if *room != "" {
			return playInRooms(e, name, class, *room, what)
		}
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

// playInRooms plays a URL on the household's speakers in room ("all":
// every room), this one among them when it stands there.
func playInRooms(e *env, name, class, room, what string) error {
	if u, err := url.Parse(what); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return usageErr("--room plays a URL (http or https) that every speaker can fetch; %q is not one", what)
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	if room == "all" {
		room = ""
	}
	ctx, stop := signalContext()
	defer stop()
	var out talk.RoomPlayed
	err = e.client(cfg).Do(ctx, "POST /v1/household/play", talk.RoomPlay{URL: what, Class: class, Room: room}, &out)
	if errors.Is(err, control.ErrNotRunning) {
		return fmt.Errorf("the daemon is not running; %s plays through the household's speakers", name)
	}
	if err != nil {
		return err
	}
	where := "every room"
	if room != "" {
		where = "room " + room
	}
	fmt.Fprintf(e.stdout, "playing %s (%s) on %d other speaker(s) in %s", what, class, out.Members, where)
	if out.Here {
		fmt.Fprint(e.stdout, " and here")
	}
	fmt.Fprintln(e.stdout)
	if out.Outcome != nil && !out.Outcome.Success {
		return &exitError{1, fmt.Errorf("%s %s here: %s", name, what, out.Outcome.Error)}
	}
	return nil
}
