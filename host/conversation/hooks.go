package conversation

import (
	"context"
	"log/slog"
	"os/exec"
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
type hooks struct {
	mu      sync.Mutex
	cmds    map[string]string
	log     *slog.Logger
	timeout time.Duration
	slots   chan struct{} // bounds the hooks running at once
}

const (
	maxHooks    = 4
	hookTimeout = 10 * time.Second
	// hookWaitDelay bounds the wait for a hook's output after its shell
	// exited (a background child may hold the pipe).
	hookWaitDelay = 500 * time.Millisecond
)

func newHooks(cmds map[string]string, log *slog.Logger) *hooks {
	return &hooks{cmds: cmds, log: log, timeout: hookTimeout, slots: make(chan struct{}, maxHooks)}
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
	select {
	case h.slots <- struct{}{}:
	default:
		h.log.Warn("event hook skipped: too many hooks still running (a hook should finish quickly)", "event", event, "running", maxHooks)
		return
	}
	go func() {
		defer func() { <-h.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		defer cancel()
		log := h.log.With("hook", event)
		out := linewriter.New(0, func(line []byte) { log.Debug("hook output", "line", string(line)) })
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Env = env
		c.Stdout, c.Stderr = out, out
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
	}()
}
