package conversation

import (
	"context"
	"github.com/agenthost/agenthost/internal/childenv"
	"log/slog"
	"os/exec"
	"strings"
	"time"
)

// hooks run the configured command of an event (conversation.hooks), like
// wyoming-satellite's event commands: `sh -c CMD` with AGENTHOST_EVENT and
// the event's fields as AGENTHOST_<FIELD> in the environment.
type hooks struct {
	cmds  map[string]string
	log   *slog.Logger
	slots chan struct{} // bounds the hooks running at once
}

const maxHooks = 4

func newHooks(cmds map[string]string, log *slog.Logger) *hooks {
	return &hooks{cmds: cmds, log: log, slots: make(chan struct{}, maxHooks)}
}

func (h *hooks) run(event string, fields map[string]string) {
	cmd := h.cmds[event]
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
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			h.log.Warn("event hook failed", "event", event, "err", err, "output", strings.TrimSpace(string(out)))
		}
	}()
}
