package mcpclient

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"bufio"
	"bytes"
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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/agenthost/agenthost/internal/childenv"
	"github.com/agenthost/agenthost/internal/clip"
	"github.com/agenthost/agenthost/internal/linewriter"
	"github.com/agenthost/agenthost/internal/proctree"
)

// maxStderrLine caps one forwarded stderr line; longer lines go in pieces.
const maxStderrLine = 2048

// stdoutDelay is how long the server's stdout is read after it exited.
const stdoutDelay = 2 * time.Second

// maxGarbageLogged is how many non-JSON stdout lines are logged one by one;
// after that every hundredth.
const maxGarbageLogged = 5

// process is a running stdio MCP server: its own process group, killed with
// everything it started (its tree, which a setsid grandchild does not leave).
type process struct {
	name string
	cmd  *exec.Cmd
	tree *proctree.Tree
	log  *slog.Logger

	stdin  io.WriteCloser
	rawOut *os.File       // the server's stdout
	stdout *io.PipeReader // JSON lines only, see filterStdout

	exited  chan struct{} // closed once the process is reaped
	waitErr error

	mu        sync.Mutex
	garbage   int      // non-JSON lines seen on stdout
	firstJunk string   // the first of them
	tail      []string // the last stderr lines, for start errors
}

// startProcess starts a stdio server. The process gets its own process
// group (so Kill reaches what it starts, such as npx's node) and dies with
// the host through Pdeathsig. Pdeathsig fires when the thread that forked
// the process exits, so the process is started, and waited for, from a
// goroutine locked to its thread.
func startProcess(o Options, log *slog.Logger) (*process, error) {
	name, c, maxLine := o.Name, o.Server, o.MaxMessage
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = childenv.Environ()
	policy := sandbox.Policy{Read: c.Sandbox.Read, Write: c.Sandbox.Write}
	if o.Home != "" {
		if err := os.MkdirAll(o.Home, 0o700); err != nil {
			return nil, fmt.Errorf("its folder: %w", err)
		}
		cmd.Env = append(cmd.Env, "HOME="+o.Home, "TMPDIR="+o.Home)
		policy.Write = append(policy.Write, o.Home)
	}
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	tree := proctree.New()
	cmd.Env = append(cmd.Env, tree.Env())
	cmd.Dir = c.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := o.Jail.Confine(cmd, policy); err != nil {
		return nil, fmt.Errorf("it cannot be started in its sandbox: %w", err)
	}
	// A descendant that left the process group may hold stderr open after
	// the server exited; Wait must not wait for it for ever.
	cmd.WaitDelay = 2 * time.Second
	p := &process{name: name, cmd: cmd, tree: tree, log: log, exited: make(chan struct{})}
	stderr := linewriter.New(maxStderrLine, func(line []byte) {
		s := string(line)
		p.mu.Lock()
		p.tail = append(p.tail, s)
		if len(p.tail) > 5 {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
		log.Info(s, "stream", "stderr")
	})
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipe, not StdoutPipe: Wait, called as soon as the server
	// exits, closes that one, and what it wrote just before could be lost.
	// This one ends in EOF once every holder of the write end is gone; a
	// descendant that left the group may hold it, so it is closed anyway
	// stdoutDelay after the exit, and when the session ends.
	rawOut, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	p.rawOut = rawOut
	err = proctree.StartLocked(cmd, tree.Started, func(err error) {
		stderr.Flush()
		p.waitErr = err
		close(p.exited)
		time.AfterFunc(stdoutDelay, func() { rawOut.Close() })
	})
	w.Close() // the server has its own
	if err != nil {
		rawOut.Close()
		return nil, startError(c, err)
	}
	p.stdin = stdin
	pr, pw := io.Pipe()
	p.stdout = pr
	go p.filterStdout(rawOut, pw, maxLine)
	return p, nil
}

// startError says why a command did not start and what to do.
func startError(c ServerConfig, err error) error {
	var ee *exec.Error
	switch {
	case errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound):
		return fmt.Errorf("command %q was not found (check command, and PATH, or give an absolute path): %w", c.Command, err)
	case errors.Is(err, os.ErrNotExist):
		if c.Cwd != "" {
			if _, serr := os.Stat(c.Cwd); serr != nil {
				return fmt.Errorf("cwd %q does not exist: %w", c.Cwd, err)
			}
		}
		return fmt.Errorf("command %q does not exist: %w", c.Command, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("command %q is not executable (chmod +x it?): %w", c.Command, err)
	}
	return fmt.Errorf("starting %q: %w", c.Command, err)
}

// filterStdout passes JSON lines on to w and logs anything else a server
// prints on stdout (banners, debug output) instead of letting it break
// the JSON-RPC stream. A line longer than maxLine ends the connection.
func (p *process) filterStdout(r io.ReadCloser, w *io.PipeWriter, maxLine int) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > maxLine {
				err := tooLarge(maxLine, "a line on stdout")
				p.log.Error("closing the connection", "err", err)
				w.CloseWithError(err)
				io.Copy(io.Discard, br) // let the process finish writing
				return
			}
			continue
		}
		if len(line) > 0 {
			p.line(line, w)
			line = line[:0]
			if cap(line) > 256<<10 {
				line = nil // one large result does not keep its buffer for the session's life
			}
		}
		if err != nil {
			w.Close()
			return
		}
	}
}

// line forwards one stdout line or logs it as junk.
func (p *process) line(line []byte, w io.Writer) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return
	}
	msgs, why := messages(t)
	if why == "" {
		for _, m := range msgs {
			if _, err := w.Write(append(m, '\n')); err != nil {
				return // the connection is closed; drain
			}
		}
		return
	}
	p.mu.Lock()
	p.garbage++
	n := p.garbage
	if n == 1 {
		p.firstJunk = clip.String(string(t), 200)
	}
	p.mu.Unlock()
	if n <= maxGarbageLogged || n%100 == 0 {
		p.log.Warn("the server printed a line that is not JSON-RPC on stdout; ignored (an MCP stdio server must write only JSON-RPC there, and log to stderr)",
			"line", clip.String(string(t), 200), "why", why, "count", n)
	}
}

// messages returns the JSON-RPC messages of a stdout line: the line itself,
// or each member of a batch (passed on one by one: the go-sdk ends the
// session at a batch on protocols from 2025-06-18 on). Anything the go-sdk
// could not read as JSON-RPC, which would end the session, is junk: why
// says what is wrong with it.
func messages(line []byte) (msgs [][]byte, why string) {
	if !json.Valid(line) { // also one value followed by more, which the go-sdk's decoder would not notice
		return nil, "not one JSON value"
	}
	switch line[0] {
	case '{':
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			return nil, clip.String(err.Error(), 200)
		}
		return [][]byte{line}, ""
	case '[':
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil {
			return nil, clip.String(err.Error(), 200)
		}
		if len(batch) == 0 {
			return nil, "an empty batch"
		}
		for i, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return nil, fmt.Sprintf("batch member %d: %s", i+1, clip.String(err.Error(), 200))
			}
			msgs = append(msgs, m)
		}
		return msgs, ""
	}
	return nil, "not a JSON-RPC message (an object) nor a batch (an array)"
}

// explain adds what the process did to a start error: its exit, the junk
// it printed, its last stderr lines.
func (p *process) explain(err error) error {
	var parts []string
	select {
	case <-p.exited:
		if p.waitErr != nil {
			parts = append(parts, "it exited: "+p.waitErr.Error())
		} else {
			parts = append(parts, "it exited with status 0")
		}
	default:
	}
	p.mu.Lock()
	if p.garbage > 0 {
		parts = append(parts, fmt.Sprintf("it printed %d line(s) on stdout that are not JSON-RPC, the first %q: an MCP stdio server must write only JSON-RPC to stdout", p.garbage, p.firstJunk))
	}
	if len(p.tail) > 0 {
		parts = append(parts, "its last stderr: "+strings.Join(p.tail, " | "))
	}
	p.mu.Unlock()
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(parts, "; "))
}

// kill ends the process group: SIGTERM, then SIGKILL after grace, and
// waits until the process is reaped; then every process of its tree left
// (one that left the group). It may be called more than once.
func (p *process) kill(grace time.Duration) {
	p.stdin.Close()
	pgid := p.cmd.Process.Pid
	select {
	case <-p.exited:
	default:
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
	}
	// What the server started may outlive it, in its group or not.
	syscall.Kill(-pgid, syscall.SIGKILL)
	if n := p.tree.Kill(); n > 0 {
		p.log.Info("killed what the server left running", "processes", n)
	}
	p.stdout.Close()
	p.rawOut.Close()
}

func (p *process) pid() int { return p.cmd.Process.Pid }
