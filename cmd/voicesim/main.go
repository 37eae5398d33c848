// Command voicesim runs the simulated voice server for development, demos and
// end-to-end tests. It logs every frame it receives and takes console commands
// on standard input (type "help").
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/clip"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "voicesim:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("voicesim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o voicetest.Options
	listen := fs.String("listen", "127.0.0.1:8009", "address to listen on, HOST:PORT (port 0 picks a free one)")
	secret := fs.String("secret", "", "accept only HS256 JWTs signed with this secret")
	pcmFile := fs.String("reply-pcm", "", "reply with this raw 16 kHz s16le mono file instead of a tone")
	level := fs.String("log-level", "info", "debug shows sent frames too")
	fs.StringVar(&o.Token, "token", "", "accept only this token (default: any non-empty token)")
	fs.StringVar(&o.ReplyText, "reply-text", "", "fixed reply text (default: echo, or the result of a service the text names)")
	fs.Float64Var(&o.ToneHz, "tone", 880, "reply tone frequency in Hz")
	fs.DurationVar(&o.ReplyDuration, "reply-duration", time.Second, "length of the reply tone")
	fs.BoolVar(&o.Pace, "pace", true, "send reply audio in real time")
	fs.DurationVar(&o.AuthTimeout, "auth-timeout", 5*time.Second, "drop a client that sends no AUTH in time")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 5*time.Minute, "drop a client that sends nothing for this long")
	fs.DurationVar(&o.DisconnectDelay, "disconnect-delay", 3*time.Second, "close this long after ##DISCONNECT")
	fs.Float64Var(&o.VADThreshold, "vad-threshold", 500, "RMS level that counts as speech")
	fs.DurationVar(&o.VADHang, "vad-hang", 700*time.Millisecond, "silence that ends speech")
	fs.IntVar(&o.Faults.SplitWrites, "split-writes", 0, "fault: write frames in pieces of this many bytes")
	fs.BoolVar(&o.Faults.Coalesce, "coalesce", false, "fault: write several frames in one write")
	fs.BoolVar(&o.Faults.BracketedSeq, "bracketed-seq", false, "fault: send seq as [dddd]")
	fs.BoolVar(&o.Faults.Unknown, "unknown", false, "fault: send unknown frame types and STATUS strings")
	fs.BoolVar(&o.Faults.WithholdReplies, "withhold-replies", false, "fault: never answer a turn")
	fs.BoolVar(&o.Faults.WithholdAuthAck, "withhold-auth-ack", false, "fault: never acknowledge AUTH")
	fs.IntVar(&o.Faults.DropAfter, "drop-after", 0, "fault: close a connection after receiving this many frames")
	fs.BoolVar(&o.Faults.IgnoreTurns, "ignore-turns", false, "fault: answer PINGs but never acknowledge a turn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	o.Addr = *listen
	o.Log = slog.New(clip.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}), clip.LogValue))
	if *secret != "" {
		o.Secret = []byte(*secret)
	}
	if *pcmFile != "" {
		b, err := os.ReadFile(*pcmFile)
		if err != nil {
			return fmt.Errorf("--reply-pcm: %w", err)
		}
		o.ReplyPCM = b
	}
	o.Opus = opusCodec()
	srv, err := voicetest.NewServer(o)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "voicesim listening on %s (type \"help\" for commands)\n", srv.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quit := make(chan struct{})
	go console(ctx, srv, stdin, stdout, quit)
	select {
	case <-ctx.Done():
	case <-quit:
	}
	return nil
}

const help = `commands:
  call SERVICE [JSON]   call a registered service on the client and print its result
  say TEXT              speak TEXT to the client on a new task
  services              list the services of the latest register
  drop                  drop every connection, as a server that loses the link
  blackhole             the connections open now fall silent (kept open, nothing
                        answered, not even PING), as a path that died without a
                        FIN; new connections are served
  quit                  stop the simulator`

// console reads commands until stdin ends; an ended stdin leaves the server running.
func console(ctx context.Context, srv *voicetest.Server, in io.Reader, out io.Writer, quit chan<- struct{}) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, rest, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		rest = strings.TrimSpace(rest)
		switch cmd {
		case "":
		case "help":
			fmt.Fprintln(out, help)
		case "call":
			name, params, _ := strings.Cut(rest, " ")
			if name == "" {
				fmt.Fprintln(out, "usage: call SERVICE [JSON]")
				continue
			}
			params = strings.TrimSpace(params)
			if params == "" {
				params = "{}"
			}
			if !json.Valid([]byte(params)) {
				fmt.Fprintf(out, "call %s: params are not valid JSON: %s\n", name, params)
				continue
			}
			go func() {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				res, err := srv.Call(cctx, name, json.RawMessage(params))
				fmt.Fprintln(out, describeResult(name, res, err))
			}()
		case "say":
			if task, err := srv.Say(rest); err != nil {
				fmt.Fprintln(out, "say:", err)
			} else {
				fmt.Fprintf(out, "saying %q on task %s\n", rest, task)
			}
		case "services":
			svcs := srv.Services()
			names := make([]string, 0, len(svcs))
			for n := range svcs {
				names = append(names, n)
			}
			slices.Sort(names)
			fmt.Fprintf(out, "%d services registered\n", len(names))
			for _, n := range names {
				fmt.Fprintf(out, "  %s: %s\n", n, svcs[n].Description)
			}
		case "drop":
			srv.Drop()
			fmt.Fprintln(out, "dropped every connection")
		case "blackhole":
			fmt.Fprintf(out, "%d connections fell silent\n", srv.BlackHole())
		case "quit", "exit":
			close(quit)
			return
		default:
			fmt.Fprintf(out, "unknown command %q\n%s\n", cmd, help)
		}
	}
}

func describeResult(name string, res voice.Outcome, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("call %s: %v", name, err)
	case res.Success:
		return fmt.Sprintf("call %s: success: %s", name, res.Data)
	default:
		return fmt.Sprintf("call %s: failed: %s", name, res.Error)
	}
}
