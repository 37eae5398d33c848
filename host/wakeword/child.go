package wakeword

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/audio/wakeword"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/childenv"
	"github.com/agenthost/agenthost/internal/linewriter"
	"github.com/agenthost/agenthost/internal/proctree"
)

// stderrLines is how many of a detector's stderr lines are logged per
// life; ONNX Runtime may print hundreds at load (Debian's build prints a
// schema warning per operator), which are counted, not logged.
const stderrLines = 10

// queueChunks bounds the audio waiting for the detector: about 3 s of
// 60 ms frames. Beyond it, audio is dropped (and counted): a detector that
// falls behind never holds up the microphone.
const queueChunks = 50

// item is audio at a position, or a ping (pong != nil).
type item struct {
	pos   int64
	pcm   []int16
	heard wakeword.Heard
	pong  chan int64
}

// child is one life of the detector process.
type child struct {
	cmd    *exec.Cmd
	log    *slog.Logger
	ready  wakeword.Message
	stdin  io.WriteCloser
	queue  chan item
	done   chan struct{} // closed once the process is reaped
	kill   sync.Once
	onWake func(wakeword.Detection)

	mu      sync.Mutex
	pongs   []chan int64
	tail    []string // the last stderr lines, for a start error
	logged  int
	dropped int64
}

// start runs the detector and waits (within ctx) for its first line.
func start(ctx context.Context, jail sandbox.Jail, s Settings, command string, args []string, log *slog.Logger, onWake func(wakeword.Detection)) (*child, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = childenv.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := jail.Confine(cmd, s.policy()); err != nil {
		return nil, fmt.Errorf("the detector cannot be started in its sandbox: %w", err)
	}
	cmd.WaitDelay = 2 * time.Second
	c := &child{cmd: cmd, log: log, queue: make(chan item, queueChunks), done: make(chan struct{}), onWake: onWake}
	stderr := linewriter.New(512, c.stderrLine)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipe, not StdoutPipe: Wait, called as soon as the child
	// exits, closes that one, and a line the child wrote just before (its
	// error at start) could be lost ("file already closed"). This one ends
	// in EOF once the child is gone, and is closed when it has been read,
	// or 2 s after the exit: a process that left the group may hold it.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	c.stdin = stdin
	err = proctree.StartLocked(cmd, nil, func(error) {
		stderr.Flush()
		c.mu.Lock()
		if more := c.logged - stderrLines; more > 0 {
			log.Info("the detector printed more lines on stderr than were logged", "lines", more)
		}
		c.mu.Unlock()
		close(c.done)
		time.AfterFunc(2*time.Second, func() { stdout.Close() })
	})
	w.Close() // the child has its own
	if err != nil {
		stdout.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("the detector %s is not installed (it comes with the package, beside the plugins in /usr/lib/agenthost): %w", command, err)
		}
		return nil, fmt.Errorf("the detector %s does not start: %w", command, err)
	}
	lines := bufio.NewReaderSize(stdout, wakeword.MaxLine)
	first := make(chan error, 1)
	go func() {
		m, err := readMessage(lines)
		if err == nil {
			switch m.Type {
			case wakeword.KindReady:
				c.ready = m
			case wakeword.KindError:
				err = errors.New(m.Error)
			default:
				err = fmt.Errorf("the detector's first line is %q, not ready", m.Type)
			}
		}
		first <- err
	}()
	select {
	case err = <-first:
	case <-ctx.Done():
		err = fmt.Errorf("the detector did not get ready in time (loading ONNX Runtime and the models): %w", ctx.Err())
	}
	if err != nil {
		c.Kill()
		<-c.done
		stdout.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
			err = fmt.Errorf("the detector exited at start (%s)%s", exitOf(cmd), c.tailText())
		}
		return nil, err
	}
	go func() {
		defer stdout.Close()
		c.read(lines)
	}()
	go c.write()
	return c, nil
}

func exitOf(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "no exit status"
	}
	return cmd.ProcessState.String()
}

func (c *child) stderrLine(line []byte) {
	s := string(line)
	c.mu.Lock()
	c.tail = append(c.tail, s)
	if len(c.tail) > 3 {
		c.tail = c.tail[1:]
	}
	c.logged++
	n := c.logged
	c.mu.Unlock()
	if n <= stderrLines {
		c.log.Info(s, "stream", "stderr")
	}
}

func (c *child) tailText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tail) == 0 {
		return ""
	}
	return ": " + strings.Join(c.tail, " | ")
}

// readMessage reads one line; a line too long or not JSON is an error.
func readMessage(r *bufio.Reader) (wakeword.Message, error) {
	var m wakeword.Message
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return m, fmt.Errorf("the detector wrote a line longer than %d bytes", wakeword.MaxLine)
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("the detector wrote something that is not its protocol: %.80q", line)
	}
	return m, nil
}

// read takes the detector's messages until it ends; anything that is not
// the protocol ends it (a process that prints junk is not trusted).
func (c *child) read(r *bufio.Reader) {
	for {
		m, err := readMessage(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Error("the detector broke its protocol; restarting it", "err", err)
				c.Kill()
			}
			return
		}
		switch m.Type {
		case wakeword.KindWake:
			c.onWake(wakeword.Detection{Model: m.Model, Score: m.Score, End: m.End})
		case wakeword.KindPong:
			c.mu.Lock()
			if len(c.pongs) > 0 {
				p := c.pongs[0]
				c.pongs = c.pongs[1:]
				p <- m.Pos
			}
			c.mu.Unlock()
		}
	}
}

// write sends queued audio and pings to the detector.
func (c *child) write() {
	var buf []byte
	var err error
	for {
		select {
		case <-c.done:
			return
		case it := <-c.queue:
			if it.pong != nil {
				c.mu.Lock()
				c.pongs = append(c.pongs, it.pong)
				c.mu.Unlock()
				err = wakeword.WritePing(c.stdin)
			} else {
				buf, err = wakeword.WriteChunk(c.stdin, it.pos, it.pcm, it.heard, buf)
			}
			if err != nil {
				c.Kill() // the process is gone or stuck: Done follows
				return
			}
		}
	}
}

// feed queues audio without waiting; a full queue drops it.
func (c *child) feed(pos int64, pcm []int16, heard wakeword.Heard) bool {
	select {
	case c.queue <- item{pos: pos, pcm: pcm, heard: heard}:
		return true
	default:
		c.mu.Lock()
		c.dropped += int64(len(pcm))
		c.mu.Unlock()
		return false
	}
}

// Health implements supervise.Healther: a ping answered after all audio
// queued before it was processed.
func (c *child) Health(ctx context.Context) error {
	p := make(chan int64, 1)
	select {
	case c.queue <- item{pong: p}:
	case <-ctx.Done():
		return errors.New("the detector takes no audio (its queue stays full)")
	}
	select {
	case <-p:
		return nil
	case <-c.done:
		return errors.New("the detector exited")
	case <-ctx.Done():
		return errors.New("the detector does not answer (it hangs)")
	}
}

// Services implements supervise.Child: the detector offers none.
func (c *child) Services() []services.Service { return nil }

// Call implements supervise.Child.
func (c *child) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("the wake-word detector has no services")
}

// Done implements supervise.Child.
func (c *child) Done() <-chan struct{} { return c.done }

// Changed implements supervise.Child.
func (c *child) Changed() <-chan struct{} { return nil }

// Kill implements supervise.Child: stdin closes (the detector ends at end
// of input) and the process group is killed.
func (c *child) Kill() {
	c.kill.Do(func() {
		c.stdin.Close()
		if c.cmd.Process != nil {
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
}

// Info implements supervise.Child.
func (c *child) Info() supervise.Info {
	i := supervise.Info{Version: "onnxruntime " + c.ready.ONNXRuntime, Transport: "pipes"}
	if c.cmd.Process != nil {
		i.PID = c.cmd.Process.Pid
	}
	return i
}
