package conversation

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"context"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/childenv"
	"github.com/agenthost/agenthost/internal/linewriter"
)

// hooks run the configured command of an event (conversation.hooks), like
// wyoming-satellite's event commands: `sh -c CMD` with AGENTHOST_EVENT and
// the event's fields as AGENTHOST_<FIELD> in the environment.
//
// A hook runs in a process group of its own. When its shell exits, or its
// timeout passes, the whole group is killed: nothing a hook starts outlives
// it, and a background child that keeps the output pipe open cannot hold
// the hook's slot. Its output goes to the log at debug (it may carry what
// was said), line by line and bounded.
//
// The owner's cues (cueLine: the microphone's mute, listening, the wake
// word) never wait for other hooks: each line of them runs one hook at a
// time, in order, outside the shared slots. A cue that comes while its
// line is busy waits, and replaces a waiting one of its event, so the
// latest state always runs last (an LED is never left wrong) and a line
// holds one running hook and one waiting per event at most. The other
// events share maxHooks slots and are skipped when those are full; the
// server's frames may hold maxServerHooks of them, so a reply's emoji
// cannot keep a timer's hook from running.
type hooks struct {
	jail    sandbox.Jail
	dir     string // the hooks' own folder (their TMPDIR), "" for none
	mu      sync.Mutex
	cmds    map[string]string
	log     *slog.Logger
	timeout time.Duration
	slots   chan struct{} // bounds the shared hooks running at once
	server  chan struct{} // bounds those of the server's frames
	lines   map[string]*cueQueue
	active  sync.WaitGroup // hooks running or waiting
}

// hookRun is one run of an event's command.
type hookRun struct {
	event, cmd string
	env        []string
}

// cueQueue is a line of the owner's cues: whether one runs, and those that
// wait (one per event, oldest first).
type cueQueue struct {
	running bool
	waiting []hookRun
}

const (
	maxHooks       = 4
	maxServerHooks = 2
	hookTimeout    = 10 * time.Second
	// hookWaitDelay bounds the wait for a hook's output after its shell
	// exited (a background child may hold the pipe).
	hookWaitDelay = 500 * time.Millisecond
)

// cueLine names the line of an owner's cue, "" for other events: the
// hooks that tell a person whether the microphone is muted (per device),
// and whether it is listening (wake, listen_start, listen_stop, and
// turn_failed, the only end a turn cut by an outage has).
func cueLine(event string, fields map[string]string) string {
	switch event {
	case "mute":
		if fields["DEVICE"] == "speaker" {
			return "mute-speaker"
		}
		return "mute-microphone"
	case "wake", "listen_start", "listen_stop", "turn_failed":
		return "listening"
	}
	return ""
}

// serverEvent reports whether the voice server's frames run event.
func serverEvent(event string) bool {
	switch event {
	case "text", "emoji", "speak", "turn_end":
		return true
	}
	return false
}

func newHooks(cmds map[string]string, log *slog.Logger) *hooks {
	return &hooks{cmds: cmds, log: log, timeout: hookTimeout, slots: make(chan struct{}, maxHooks),
		server: make(chan struct{}, maxServerHooks), lines: map[string]*cueQueue{}}
}

// set replaces the commands.
func (h *hooks) set(cmds map[string]string) {
	h.mu.Lock()
	h.cmds = cmds
	h.mu.Unlock()
}

func (h *hooks) run(event string, fields map[string]string) {
	h.mu.Lock()
	cmd := h.cmds[event]
	h.mu.Unlock()
	if cmd == "" {
		return
	}
	env := append(childenv.Environ(), "AGENTHOST_EVENT="+event)
	for k, v := range fields {
		env = append(env, "AGENTHOST_"+strings.ToUpper(k)+"="+v)
	}
	r := hookRun{event: event, cmd: cmd, env: env}
	if line := cueLine(event, fields); line != "" {
		h.cue(line, r)
		return
	}
	if serverEvent(event) {
		select {
		case h.server <- struct{}{}:
		default:
			h.log.Warn("event hook skipped: the hooks of the server's frames still run (a hook should finish quickly)", "event", event, "running", maxServerHooks)
			return
		}
	}
	select {
	case h.slots <- struct{}{}:
	default:
		h.log.Warn("event hook skipped: too many hooks still running (a hook should finish quickly)", "event", event, "running", maxHooks)
		if serverEvent(event) {
			<-h.server
		}
		return
	}
	h.active.Add(1)
	go func() {
		defer h.active.Done()
		defer func() {
			<-h.slots
			if serverEvent(event) {
				<-h.server
			}
		}()
		h.exec(r)
	}()
}

// wait returns once no hook runs or waits.
func (h *hooks) wait() { h.active.Wait() }

// cue runs r on its line now, or after the hook running there (replacing
// a waiting run of the same event).
func (h *hooks) cue(line string, r hookRun) {
	h.mu.Lock()
	q := h.lines[line]
	if q == nil {
		q = &cueQueue{}
		h.lines[line] = q
	}
	if q.running {
		q.waiting = slices.DeleteFunc(q.waiting, func(w hookRun) bool { return w.event == r.event })
		q.waiting = append(q.waiting, r)
		h.mu.Unlock()
		h.log.Debug("event hook waits for the one before it", "event", r.event)
		return
	}
	q.running = true
	h.mu.Unlock()
	h.active.Add(1)
	go func() {
		defer h.active.Done()
		for {
			h.exec(r)
			h.mu.Lock()
			if len(q.waiting) == 0 {
				q.running = false
				h.mu.Unlock()
				return
			}
			r = q.waiting[0]
			q.waiting = q.waiting[1:]
			h.mu.Unlock()
		}
	}()
}

// exec runs one hook to its end (or its timeout).
func (h *hooks) exec(r hookRun) {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	log := h.log.With("hook", r.event)
	out := linewriter.New(0, func(line []byte) { log.Debug("hook output", "line", string(line)) })
	c := exec.CommandContext(ctx, "sh", "-c", r.cmd)
	c.Env = r.env
	c.Stdout, c.Stderr = out, out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The owner's script keeps its reach (devices, its own files), not the
	// daemon's files: it may print what the server sent.
	policy := sandbox.Policy{Devices: true, Everywhere: true}
	if h.dir != "" && os.MkdirAll(h.dir, 0o700) == nil {
		// Beside the daemon's folders a hook cannot make a file: its own is here.
		c.Env = append(c.Env, "TMPDIR="+h.dir)
		policy.Write = []string{h.dir}
	}
	if err := h.jail.Confine(c, policy); err != nil {
		log.Error("event hook not run", "err", err)
		return
	}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = hookWaitDelay
	err := c.Run()
	if c.Process != nil {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // what the hook left behind
	}
	out.Flush()
	switch {
	case ctx.Err() != nil:
		log.Warn("event hook killed: it ran past its timeout", "timeout", h.timeout)
	case err != nil && c.ProcessState != nil && !c.ProcessState.Success():
		log.Warn("event hook failed", "err", err)
	}
}
