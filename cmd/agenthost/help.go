package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// help is a command's manual: what `agenthost help CMD`, `CMD -h` and the
// man page agenthost(1) show.
type help struct {
	usage    string   // the synopsis, after "agenthost "
	text     string   // what it does and its arguments; paragraphs split by a blank line
	examples []string // command lines, after "agenthost "
}

// helps holds every command's help, by name; TestEveryCommandHasHelp
// keeps it complete.
var helps = map[string]help{
	"run": {"run [flags]",
		"Runs the daemon: keeps one link to the voice server (server.address), streams the microphone to it, plays its answers, and lends it the services of the built-ins, the plugins (plugins.dirs) and the MCP servers (mcp.servers). It serves the control socket the other commands talk to (plugins.runtime_dir). SIGHUP (systemctl reload agenthost) reloads the configuration; SIGINT or SIGTERM stops it. A configuration with problems exits with status 78.",
		[]string{"run --config /etc/agenthost/agenthost.yaml", "run --set server.address=127.0.0.1:8009 --log-level debug"}},
	"check": {"check [flags] [--offline]",
		"Validates the configuration, prints every problem at once (status 78) or the effective settings with secrets masked, checks the wake word when it is on, and tries the voice server (connect and AUTH) unless --offline.",
		[]string{"check --config my.yaml", "check --offline"}},
	"call": {"call [flags] SERVICE ['{json params}']",
		"Calls one service (a built-in, a plugin's or an MCP server's) as the owner and prints its outcome as JSON. SERVICE is its name as `agenthost status` lists it; the optional second argument is its parameters as one JSON object. Through the running daemon when one answers; otherwise the services run in this process for the one call. Ctrl-C ends the call. The status is 1 when the service failed.",
		[]string{`call get_current_time`, `call get_current_time '{"format":"detailed"}'`}},
	"say": {"say [flags] [--no-wait] [--timeout D] TEXT",
		"Sends TEXT (the words of all arguments) to the voice server as the owner's text turn through the running daemon, waits for the reply, and prints its text and the services the server called while it was answered; the reply also plays on the speaker. --timeout bounds the wait (the status is then 1; the reply still plays when it comes); --no-wait prints the turn's task and returns at once.",
		[]string{`say "What time is it?"`, `say --no-wait "set a timer for ten minutes"`}},
	"status": {"status [flags]",
		"Prints the running daemon's state as JSON: the link to the server, the conversation, the wake word, the microphone, the plugins and services, what the last reload applied.",
		[]string{"status"}},
	"plugins": {"plugins [flags] [--json]",
		"Lists the running daemon's plugins: name, version, state, process, restarts, path, services and the last error.",
		[]string{"plugins", "plugins --json"}},
	"devices": {"devices [flags]",
		"Lists the audio input and output devices this user can open (index, channels, default rate, which is the default): the names audio.input and audio.output take. Runs without the daemon.",
		[]string{"devices"}},
	"talk": {"talk [flags] start|stop",
		"Push-to-talk through the running daemon: start opens a turn (the microphone streams to the server), stop ends it and the server answers. A press while a timer or alarm rings stops the ring instead.",
		[]string{"talk start", "talk stop"}},
	"volume": {"volume [flags] [0-100|+N|-N|mute|unmute]",
		"Shows the speaker's volume, or sets it: a number from 0 to 100, a step up (+N) or down (-N), mute or unmute.",
		[]string{"volume", "volume 60", "volume -10", "volume mute"}},
	"mic": {"mic [flags] [on|off]",
		"Shows whether the microphone is on, or turns it on or off. Off is privacy: nothing is sent to the server, and the wake word does not listen. The state survives restarts.",
		[]string{"mic", "mic off"}},
	"timers": {"timers [flags]",
		"Lists the speaker's timers and alarms, and those ringing now.",
		[]string{"timers"}},
	"stop": {"stop [flags]",
		"Stops what sounds, one thing a call: a ringing timer or alarm, else an announcement, else the music.",
		[]string{"stop"}},
	"mcp": {"mcp [flags] [--http ADDR [--token-env VAR]]",
		"Serves the speaker's services to a desktop MCP client: on stdio (the client's `command`), or with --http as Streamable HTTP at http://ADDR/mcp, where clients send the bearer token held in the variable --token-env names. Through the running daemon when one answers; otherwise the services run in this process. Logs go to stderr.",
		[]string{"mcp", "mcp --http 127.0.0.1:8765 --token-env AGENTHOST_MCP_TOKEN"}},
	"play": {"play [flags] [--room ROOM|all] FILE|URL",
		"Plays music or radio through the running daemon's media plugin (its play_media service): a file (made absolute) or an http(s) URL. Replies and announcements duck it; `agenthost stop` stops it. With --room, a URL plays on every speaker of the household in that room (all: in every room), starting together.",
		[]string{"play ~/Music/song.mp3", "play https://radio.example/stream.mp3", "play --room kitchen https://radio.example/stream.mp3"}},
	"announce": {"announce [flags] [--room ROOM|all] FILE|URL",
		"Plays an announcement through the running daemon's media plugin, over the music, which is ducked while it plays. With --room, a URL is announced on every speaker of the household in that room (all: in every room), together.",
		[]string{"announce /usr/share/sounds/alsa/Front_Center.wav", "announce --room all http://nas.lan/dinner.ogg"}},
	"wakeword": {"wakeword enroll [flags] [--model NAME] [--takes N] [--phrase FILE... --other FILE...]",
		"Trains the owner's verifier of a wake model (by default the first of conversation.wake_word.models), so that the model answers its owner's voice. At the microphone (audio.backend portaudio; stop the daemon first) it asks for the phrase --takes times, then for each prompt below, then for five seconds of the room. Or give recordings (WAV, or raw 16 kHz s16le): --phrase for each take of the phrase, --other for each prompt and the room. The daemon takes the verifier at its next reload.\n\nThe prompts:\n" + promptList(),
		[]string{"wakeword enroll", "wakeword enroll --model hey_jarvis --phrase take1.wav --phrase take2.wav --phrase take3.wav --other martin.wav --other room.wav"}},
	"household": {"household [flags] create | join CODE | code | leave",
		"Makes this speaker one of several in a home that answer a wake phrase once: the one that heard it best answers, the others stay silent. `create` makes a household and prints the code to type into the others; `join CODE` joins one; `code` prints the household's code again; `leave` leaves it. Run it as the user that owns the state folder (sudo -u agenthost on an installed speaker); the daemon takes it at its next restart. The household's settings (room, priority, peers) are under household: in the configuration; see docs/household.md.",
		[]string{"household create", "household join ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23", "household code"}},
	"version": {"version",
		"Prints the version, the Go version, the platform, and the protocols it speaks.",
		[]string{"version"}},
}

// promptList is wakeword.EnrollPrompts, one a line.
func promptList() string {
	var b strings.Builder
	for i, p := range wakeword.EnrollPrompts {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, p)
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeHelp writes name's help, with fs's flags when fs is not nil.
func writeHelp(w io.Writer, name string, fs *flag.FlagSet) {
	h := helps[name]
	fmt.Fprintf(w, "usage: agenthost %s\n\n%s\n", h.usage, wrap(h.text, 72))
	if fs != nil {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprintln(w, "\nexamples:")
	for _, x := range h.examples {
		fmt.Fprintf(w, "  agenthost %s\n", x)
	}
}

// wrap breaks each paragraph of s at width; lines that start with a space
// are kept as they are.
func wrap(s string, width int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, " ") || line == "" {
			out = append(out, line)
			continue
		}
		cur := ""
		for _, word := range strings.Fields(line) {
			if cur != "" && len(cur)+1+len(word) > width {
				out = append(out, cur)
				cur = ""
			}
			if cur != "" {
				cur += " "
			}
			cur += word
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}

// cmdHelp is `agenthost help [COMMAND]`.
func cmdHelp(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stdout)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		printUsage(stderr)
		return usageErr("help: unknown command %q", args[0])
	}
	// The command prints its own help, with its flags, on -h.
	err := cmd.run(&env{stdout: stdout, stderr: stdout}, []string{"-h"})
	if err == nil || err == errHelpShown {
		return nil
	}
	return err
}
