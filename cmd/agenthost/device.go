package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/speaker"
)

func init() {
	commands["volume"] = command{"show or set the speaker's volume: agenthost volume [0-100|+N|-N|mute|unmute]", cmdVolume}
	commands["mic"] = command{"show the microphone's state, or turn it on or off (privacy): agenthost mic [on|off]", cmdMic}
	commands["timers"] = command{"list the speaker's timers and alarms", cmdTimers}
	commands["stop"] = command{"stop what sounds, one at a time: a ringing timer or alarm, else an announcement, else the music", cmdStop}
}

// deviceCall runs one device endpoint of the running daemon.
func (e *env) deviceCall(endpoint string, in, out any) error {
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	return e.do(context.Background(), cfg, endpoint, in, out)
}

func cmdVolume(e *env, args []string) error {
	fs := e.flags("volume")
	// "-10" is a step down, not a flag: it goes after "--".
	var step []string
	for i, a := range args {
		if _, err := strconv.Atoi(a); err == nil && strings.HasPrefix(a, "-") {
			step = []string{a}
			args = append(append([]string(nil), args[:i]...), args[i+1:]...)
			break
		}
	}
	if err := e.parse(fs, append(args, append([]string{"--"}, step...)...)); err != nil {
		return err
	}
	var st device.Status
	switch arg := fs.Arg(0); {
	case fs.NArg() > 1:
		return usageErr("usage: agenthost volume [0-100|+N|-N|mute|unmute]")
	case arg == "":
		if err := e.deviceCall("GET /v1/device", nil, &st); err != nil {
			return err
		}
	default:
		var req speaker.VolumeRequest
		switch {
		case arg == "mute" || arg == "unmute":
			m := arg == "mute"
			req.Mute = &m
		case strings.HasPrefix(arg, "+") || strings.HasPrefix(arg, "-"):
			n, err := strconv.Atoi(arg)
			if err != nil {
				return usageErr("volume step %q is not a number like +10 or -10", arg)
			}
			req.Step = &n
		default:
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 || n > 100 {
				return usageErr("volume %q is not a number from 0 to 100 (or +N, -N, mute, unmute)", arg)
			}
			req.Volume = &n
		}
		if err := e.deviceCall("POST /v1/device/volume", req, &st); err != nil {
			return err
		}
	}
	muted := ""
	if st.SpeakerMuted {
		muted = " (muted)"
	}
	fmt.Fprintf(e.stdout, "volume %d%s\n", st.Volume, muted)
	return nil
}

func cmdMic(e *env, args []string) error {
	fs := e.flags("mic")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	var st device.Status
	switch arg := fs.Arg(0); {
	case fs.NArg() > 1:
		return usageErr("usage: agenthost mic [on|off]")
	case arg == "":
		if err := e.deviceCall("GET /v1/device", nil, &st); err != nil {
			return err
		}
	case arg == "on" || arg == "off":
		if err := e.deviceCall("POST /v1/device/mic", speaker.MicRequest{On: arg == "on"}, &st); err != nil {
			return err
		}
	default:
		return usageErr("usage: agenthost mic [on|off] (got %q)", arg)
	}
	if st.MicrophoneMuted {
		fmt.Fprintln(e.stdout, "microphone off (muted for privacy: nothing is sent)")
	} else {
		fmt.Fprintln(e.stdout, "microphone on")
	}
	return nil
}

func cmdTimers(e *env, args []string) error {
	fs := e.flags("timers")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	var l device.TimerList
	if err := e.deviceCall("GET /v1/device/timers", nil, &l); err != nil {
		return err
	}
	for _, v := range l.Ringing {
		fmt.Fprintf(e.stdout, "RINGING  %s %s %s (stop it with `agenthost stop`)\n", v.ID, v.Kind, v.Label)
	}
	if len(l.Timers) == 0 {
		fmt.Fprintf(e.stdout, "no timers or alarms (%s, %s)\n", l.Now, l.TimeZone)
	}
	for _, v := range l.Timers {
		what := v.Length + " timer"
		if v.Kind == "alarm" {
			what = "alarm " + v.At
			if len(v.Days) > 0 {
				what += " every " + strings.Join(v.Days, ",")
			} else if v.Date != "" {
				what += " on " + v.Date
			}
		}
		label := ""
		if v.Label != "" {
			label = fmt.Sprintf(" %q", v.Label)
		}
		fmt.Fprintf(e.stdout, "%-4s %s%s  rings %s (in %s)\n", v.ID, what, label, v.RingsAt, v.In)
	}
	for _, ev := range l.Recent {
		if ev.State == "missed" {
			fmt.Fprintf(e.stdout, "missed: %s %s %q came due at %s while the speaker was off\n", ev.Kind, ev.ID, ev.Label, ev.Due)
		}
	}
	return nil
}

func cmdStop(e *env, args []string) error {
	fs := e.flags("stop")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	var out struct {
		Stopped int
		What    string
		Names   []string
		Message string
	}
	if err := e.deviceCall("POST /v1/device/stop", struct{}{}, &out); err != nil {
		return err
	}
	switch {
	case out.What == "ringing":
		fmt.Fprintf(e.stdout, "stopped %d ringing: %s\n", out.Stopped, strings.Join(out.Names, ", "))
	case out.Message != "":
		fmt.Fprintln(e.stdout, out.Message)
	case out.Stopped == 0: // a daemon from before the stop order
		fmt.Fprintln(e.stdout, "nothing was ringing")
	default:
		fmt.Fprintf(e.stdout, "stopped %d ringing\n", out.Stopped)
	}
	return nil
}
