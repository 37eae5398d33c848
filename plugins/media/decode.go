package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The decoder is Debian's ffmpeg, run as a child of this plugin for each
// sound: it reads a local file itself (only the file protocol is allowed)
// or the network stream this plugin pipes to it, and writes s16le PCM at
// outRate × outChannels to its stdout. See README.md for why.

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
	stderr *tailBuffer
	done   chan struct{} // closed when ffmpeg has exited and been waited for
	err    error         // its exit, once done
	feed   chan error    // the copy of a network stream to stdin ends with this
	stop   sync.Once
}

// stereo makes ffmpeg's output two channels (outChannels) at the level the
// sound was made: mono (its centre channel) on both sides at full level,
// where -ac 2 would lower it by 3 dB; left and right as they are; the
// centre of a surround sound shared with the sides.
const stereo = "pan=stereo|FL<FL+FC|FR<FR+FC"

// decode starts ffmpeg on src.
func decode(ffmpeg string, src *source) (*decoder, error) {
	input := "pipe:0"
	if src.file != "" {
		input = "file:" + src.file
	}
	args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file,pipe",
		"-threads", "1", "-probesize", "1M", "-i", input,
		"-map", "0:a:0", "-vn", "-sn", "-dn", "-af", stereo, "-ar", fmt.Sprint(outRate),
		"-f", "s16le", "-acodec", "pcm_s16le", "pipe:1"}
	cmd := exec.Command(ffmpeg, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	d := &decoder{cmd: cmd, stderr: &tailBuffer{max: 2048}, done: make(chan struct{}), feed: make(chan error, 1)}
	cmd.Stderr = d.stderr
	// Its stdout is a pipe of our own: exec's StdoutPipe is closed by Wait,
	// which would cut off sound not yet read.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	d.out = out
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
		return nil, fmt.Errorf("cannot run the decoder %s: %w", ffmpeg, err)
	}
	if stdin != nil {
		go func() {
			// Only the source's failure counts: ffmpeg may stop reading first.
			r := &readErr{r: src.body}
			io.Copy(stdin, r)
			stdin.Close()
			d.feed <- r.err
		}()
	} else {
		d.feed <- nil
	}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	return d, nil
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

// failure says why ffmpeg produced no (more) sound, for a person.
func (d *decoder) failure() string {
	msg := strings.TrimSpace(d.stderr.String())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	msg = strings.TrimPrefix(msg, "pipe:0: ")
	if msg == "" && d.err != nil {
		msg = d.err.Error()
	}
	return msg
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
	if err == nil {
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
