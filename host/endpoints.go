package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/mcpendpoint"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/proto/voice"
)

// SayRequest is the body of POST /v1/say.
type SayRequest struct {
	Text string `json:"text"`
}

// ControlServer returns the control socket with the host's endpoints; the
// caller may add more before running it.
func (h *Host) ControlServer() *control.Server {
	s := control.NewServer(h.cfg.ControlSocketPath(), h.log)
	control.HandleJSON(s, "GET /v1/status", func(context.Context, struct{}) (any, error) { return h.Status(), nil })
	h.calls.Endpoints(s)
	control.HandleJSON(s, "GET /v1/plugins", func(context.Context, struct{}) (any, error) {
		if h.plugins == nil {
			return []any{}, nil
		}
		return h.plugins.Status(), nil
	})
	control.HandleJSON(s, "POST /v1/say", func(ctx context.Context, in SayRequest) (any, error) {
		task, err := h.SayText(ctx, in.Text)
		return map[string]string{"task": task}, err
	})
	h.speaker.Endpoints(s)
	mcpendpoint.Endpoints(s, h.reg) // for `agenthost mcp`
	return s
}

// CallLocal runs one call through the same dispatch as the server's calls,
// with a budget of calls in flight of its own (calls.Calls.Local).
func (h *Host) CallLocal(ctx context.Context, service string, params json.RawMessage) voice.Outcome {
	return h.calls.Local(ctx, service, params)
}

// SayText starts a text turn: TEXT then END_FRAME on a new task. It
// returns once the server answered the PING sent with the turn, or with an
// error when it did not within server.liveness.answer_timeout (the link is
// then made again, and the owner told).
func (h *Host) SayText(ctx context.Context, text string) (string, error) {
	text = strings.NewReplacer(voice.EndMarker, "", voice.StartMarker, "").Replace(strings.TrimSpace(text))
	if text == "" {
		return "", errors.New("nothing to say: the text is empty")
	}
	if h.conv == nil {
		return "", errors.New("no conversation: the daemon runs without one")
	}
	task, answer, err := h.conv.Say(text)
	if err != nil {
		return "", err
	}
	h.log.Info("text turn sent", "task", task)
	h.log.Debug("text turn", "task", task, "text", text)
	if answer != nil {
		select {
		case err = <-answer:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		return task, fmt.Errorf("the turn on task %s failed: %w", task, err)
	}
	return task, nil
}

// MCPEndpoint returns the part serving the services over MCP on addr
// (mcp.serve.listen).
func (h *Host) MCPEndpoint(addr, version string, o mcpserver.HTTPOptions) Component {
	return mcpendpoint.New(h.Config(), h.calls, h.log, addr, version, o)
}
