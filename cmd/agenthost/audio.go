package main

import (
	"fmt"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/host/speaker"
)

func init() {
	commands["devices"] = command{"list audio input and output devices (index, channels, default rate, default)", cmdDevices}
	commands["talk"] = command{"push-to-talk through the running daemon: agenthost talk start|stop", cmdTalk}
}

func cmdDevices(e *env, args []string) error {
	fs := e.flags("devices")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	devs, err := audio.Devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		fmt.Fprintln(e.stdout, "no audio devices (is the user in the audio group? is a sound card present?)")
	}
	for _, d := range devs {
		fmt.Fprintln(e.stdout, d.String())
	}
	return nil
}

func cmdTalk(e *env, args []string) error {
	fs := e.flags("talk")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "start" && fs.Arg(0) != "stop") {
		return usageErr("usage: agenthost talk start|stop")
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	var out struct{ Task, Stopped string }
	if err := e.ask(cfg, "POST /v1/talk", speaker.TalkRequest{Action: fs.Arg(0)}, &out); err != nil {
		return err
	}
	if out.Stopped != "" { // the press stopped a ringing timer
		fmt.Fprintf(e.stdout, "talk %s: stopped the %s\n", fs.Arg(0), out.Stopped)
		return nil
	}
	fmt.Fprintf(e.stdout, "talk %s on task %s\n", fs.Arg(0), out.Task)
	return nil
}
