package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The decoder is Debian's ffmpeg, run as a child of this plugin for each
// sound: it reads a local file itself (only the file protocol is allowed)
// or the network stream this plugin pipes to it (only the pipe protocol is
// allowed: an HLS or concat body cannot make it open file: or http:), and
// writes s16le PCM at outRate × outChannels to its stdout. See README.md
// for why.

const (
	outRate     = 48000
	outChannels = 2
	// firstSound is how much PCM must be decoded before play_media says it
	// plays: a stream that is not sound fails before that.
	firstSound = outRate * outChannels * 2 / 10 // 0.1 s
)

// decoder is one running ffmpeg.
type decoder struct {
	cmd    *exec.Cmd
	out    io.ReadCloser
	log    *ffmpegLog
	stderr *tailBuffer   // its error lines
	memory int64         // its memory bound (bytes)
	piped  bool          // it reads a network stream, whose bytes it may echo
	done   chan struct{} // closed when ffmpeg has exited and been waited for
	err    error         // its exit, once done
	feed   chan error    // the copy of a network stream to stdin ends with this
	stop   sync.Once

	watch      *outputWatch
	hang       time.Duration
	hung       atomic.Bool           // the watchdog ended it
	feedErr    atomic.Pointer[error] // how the feed of a network stream ended, once it has
	inputSince atomic.Int64          // when the feed began waiting for the network (unix ns), or 0
	inputTotal atomic.Int64          // ns the feed waited for the network before that
}

// stereo makes ffmpeg's output two channels (outChannels) at the level the
// sound was made: mono (its centre channel) on both sides at full level,
// where -ac 2 would lower it by 3 dB; left and right as they are; the
// centre of a surround sound shared with the sides.
const stereo = "pan=stereo|FL<FL+FC|FR<FR+FC"

// decode starts ffmpeg on src, under its bounds (limits.go).
func decode(cfg config, src *source) (*decoder, error) {
	input, protocols := "pipe:0", "pipe"
	if src.file != "" {
		input, protocols = "file:"+src.file, "file"
	}
	args := []string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "level+info", "-protocol_whitelist", protocols,
		"-threads", "1", "-probesize", "1M", "-i", input,
		"-map", "0:a:0", "-vn", "-sn", "-dn", "-af", stereo, "-ar", fmt.Sprint(outRate),
		"-f", "s16le", "-acodec", "pcm_s16le", "pipe:1"}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = boundedCommand(cfg.memory, cfg.ffmpeg, args)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	d := &decoder{cmd: cmd, memory: cfg.memory, hang: cfg.hang, piped: src.file == "", done: make(chan struct{}), feed: make(chan error, 1)}
	d.log = newFFmpegLog(d.kill)
	d.stderr = d.log.errors
	cmd.Stderr = d.log
	// Its stdout is a pipe of our own: exec's StdoutPipe is closed by Wait,
	// which would cut off sound not yet read.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	d.watch = &outputWatch{f: out, d: d, hang: cfg.hang}
	d.out = d.watch
	var stdin io.WriteCloser
	if src.body != nil {
		if stdin, err = cmd.StdinPipe(); err != nil {
			out.Close()
			w.Close()
			return nil, err
		}
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("cannot run the decoder %s: %w", cfg.ffmpeg, err)
	}
	if stdin != nil {
		go func() {
			// Only the source's failure counts: ffmpeg may stop reading first.
			r := &readErr{r: &inputClock{r: src.body, d: d}}
			io.Copy(stdin, r)
			d.feedErr.Store(&r.err) // before ffmpeg can see the end
			stdin.Close()
			d.feed <- r.err
		}()
	} else {
		d.feed <- nil
	}
	go func() {
		d.err = cmd.Wait()
		d.log.ended()
		logEnd(cmd.ProcessState, d.err)
		close(d.done)
	}()
	return d, nil
}

// logEnd logs how a decoder ended and what it took: its peak resident
// memory (the kernel's count for the waited child, VmHWM) and CPU time.
func logEnd(ps *os.ProcessState, err error) {
	if ps == nil {
		return
	}
	exit := "0"
	if err != nil {
		exit = err.Error()
	}
	var peak int64
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		peak = int64(ru.Maxrss) // KiB on Linux (an int32 on 32-bit ARM)
	}
	slog.Info("the decoder ended", "exit", exit, "peak_rss_kib", peak, "cpu", (ps.UserTime() + ps.SystemTime()).Round(time.Millisecond))
}

// kill ends ffmpeg (and whatever it started).
func (d *decoder) kill() {
	d.stop.Do(func() {
		if d.cmd.Process != nil {
			syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
}

// end kills ffmpeg, waits for it, and closes its output.
func (d *decoder) end() {
	d.kill()
	<-d.done
	d.out.Close()
}

// failure says why ffmpeg produced no (more) sound, for a person. For a
// network stream that is one of ffmpeg's own error texts, never a line
// that may quote the stream (an HLS entry, a tag).
func (d *decoder) failure() string {
	if _, refused := d.log.verdict(); refused != nil {
		return refused.Error()
	}
	msg := strings.TrimSpace(d.stderr.String())
	if strings.Contains(msg, "Cannot allocate memory") {
		return fmt.Sprintf("the decoder reached its memory bound (%d MiB, plugins.config.media.decoder_memory)", d.memory>>20)
	}
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	msg = strings.TrimPrefix(msg, "pipe:0: ")
	if d.piped && msg != "" && !slices.Contains(ffmpegErrors, msg) {
		msg = "the decoder cannot read it"
	}
	if msg == "" && d.err != nil {
		msg = d.err.Error()
	}
	return msg
}

// feedFailure is how the feed of a network stream failed, if it has; it
// is taken before the source is closed under it.
func (d *decoder) feedFailure() error {
	if err := d.feedErr.Load(); err != nil {
		return *err
	}
	return nil
}

// ending says why the decoder ended a sound early, or "" when it played
// what it was given; feedErr is feedFailure's. Call it after end. A
// SIGKILL is ours (a stop, a hang) and not a failure of the decoder.
func (d *decoder) ending(feedErr error) string {
	var ws syscall.WaitStatus
	if ps := d.cmd.ProcessState; ps != nil {
		ws, _ = ps.Sys().(syscall.WaitStatus)
	}
	switch {
	case d.hung.Load():
		return d.hangError().Error()
	case ws.Signaled() && ws.Signal() != syscall.SIGKILL:
		return fmt.Sprintf("the decoder crashed (signal: %s)", ws.Signal())
	case feedErr != nil:
		return "the stream failed: " + feedErr.Error()
	case ws.Exited() && ws.ExitStatus() != 0:
		if f := d.failure(); strings.HasPrefix(f, "the decoder") {
			return f
		} else if f != "" {
			return "the decoder failed: " + f
		}
		return fmt.Sprintf("the decoder failed (exit status %d)", ws.ExitStatus())
	}
	return ""
}

// ffmpegErrors are the error texts of ffmpeg (av_strerror's, and the
// system's it passes on) that its last line may give for a network stream.
var ffmpegErrors = []string{
	"Invalid data found when processing input", "End of file", "Invalid argument", "Input/output error",
	"Decoder not found", "Demuxer not found", "Stream not found", "Protocol not found", "Not yet implemented",
	"Operation not permitted", "Permission denied", "Cannot allocate memory", "Broken pipe",
	"Unknown error occurred", "Internal bug, should not have happened", "Immediate exit requested",
	"Output file #0 does not contain any stream",
	"Stream map '0:a:0' matches no streams.", "To ignore this, add a trailing '?' to the map.",
}

// first reads the first sound ffmpeg decodes, within timeout: a source that
// is not sound, or is cut off before any, fails here with the reason.
func (d *decoder) first(ctx context.Context, timeout time.Duration) ([]byte, error) {
	buf := make([]byte, firstSound)
	got := make(chan struct{})
	var n int
	var err error
	go func() {
		n, err = io.ReadFull(d.out, buf)
		close(got)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-got:
	case <-t.C:
		d.kill()
		<-got
		return nil, fmt.Errorf("no sound was decoded within %s", timeout)
	case <-ctx.Done():
		d.kill()
		<-got
		return nil, context.Cause(ctx)
	}
	// ffmpeg describes the input before it decodes it: no sound plays
	// before its format is known to be one a speaker plays.
	select {
	case <-d.log.said:
	case <-t.C:
		d.kill()
		return nil, errors.New("the decoder did not say the sound's format")
	case <-ctx.Done():
		d.kill()
		return nil, context.Cause(ctx)
	}
	format, refused := d.log.verdict()
	switch {
	case refused != nil:
		return nil, fmt.Errorf("not playable sound: %w", refused)
	case err == nil && format == nil:
		d.kill()
		return nil, errors.New("the decoder did not say the sound's format")
	case err == nil:
		d.watch.armed.Store(true) // from here a decoder that gives no sound hangs
		return buf, nil
	}
	// Less than firstSound in all: a short sound, unless its stream failed.
	<-d.done
	feedErr := <-d.feed
	d.feed <- feedErr
	switch {
	case feedErr != nil:
		return nil, fmt.Errorf("the stream failed: %v", feedErr)
	case n > 0:
		return buf[:n], nil
	case d.failure() != "":
		return nil, fmt.Errorf("not playable sound: %s", d.failure())
	default:
		return nil, errors.New("not playable sound: it holds no audio")
	}
}

// readErr remembers the error (not EOF) its reader gave.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = bytes.Clone(t.b[over:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
