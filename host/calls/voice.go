package calls

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/proto/voice"
)

// Frame takes an MCP frame of the voice server's.
func (c *Calls) Frame(conn int, f voice.Frame) {
	v, err := voice.ParseMCP(f.Payload)
	if err != nil {
		c.log.Warn("ignored an MCP message the host cannot read", "err", err)
		// A call readable enough to carry a call_id still gets its one answer.
		var m struct {
			Type string `json:"type"`
			Data struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		if json.Unmarshal(f.Payload, &m) == nil && m.Type == voice.MCPCall && m.Data.CallID != "" {
			c.calls.Add(1)
			go c.answer(conn, voice.Call{CallID: m.Data.CallID}, voice.Outcome{Error: "malformed call: " + err.Error()})
		}
		return
	}
	switch m := v.(type) {
	case *voice.Call:
		c.calls.Add(1)
		c.runCall(conn, *m)
	default:
		c.log.Info("ignored an MCP message of a kind the server does not send", "kind", fmt.Sprintf("%T", m))
	}
}

// callWork is one call for a worker.
type callWork struct {
	conn int
	c    voice.Call
}

// workerIdle is how long a call worker waits for another call.
const workerIdle = 10 * time.Second

// runCall hands a call to an idle worker, or to a new one. A worker serves
// call after call: its stack keeps the depth a call needs (gRPC's is deep),
// which a goroutine per call grew anew each time; in the profile that
// copying was a third of the host's own work per plugin call.
func (c *Calls) runCall(conn int, call voice.Call) {
	select {
	case c.work <- callWork{conn, call}:
	default:
		c.workers.Add(1)
		go c.worker(callWork{conn, call})
	}
}

func (c *Calls) worker(w callWork) {
	defer c.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		c.handleCall(w.conn, w.c)
		idle.Reset(workerIdle)
		select {
		case w = <-c.work:
		case <-idle.C:
			return
		case <-c.callCtx.Done():
			return
		}
	}
}

// handleCall runs one MCP call and answers it with exactly one result.
func (c *Calls) handleCall(conn int, call voice.Call) {
	start := time.Now()
	out := c.disp.Dispatch(c.voiceCtx, call)
	c.answer(conn, call, out)
	took := time.Since(start)
	c.trim.Load().Busy()
	for _, f := range c.observers {
		f(Record{Method: call.Method, Caller: services.CallerVoiceServer, Took: took, Success: out.Success})
	}
	// Debug: a line per call would be most of a call's cost on a Pi; the
	// dispatcher logs failures at info, and metrics count every call. Its
	// attributes are not even built at info.
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("call answered", "method", call.Method, "call_id", call.CallID, "success", out.Success, "took", took.Round(time.Microsecond))
	}
}

func (c *Calls) answer(conn int, call voice.Call, out voice.Outcome) {
	defer c.calls.Done()
	payload, err := resultPayload(call.CallID, out)
	if err != nil {
		payload, _ = voice.MarshalMCP(voice.MCPResult, voice.Result{CallID: call.CallID, Result: voice.Outcome{Error: "the result could not be encoded: " + err.Error()}})
	}
	if up, cur := c.link.Up(); !up || cur != conn {
		c.log.Warn("the result of a call was lost: the connection it came on has closed", "method", call.Method, "call_id", call.CallID)
		return
	}
	if err := c.link.Send(voice.MCPFrame(payload)); err != nil {
		c.log.Warn("could not send a call result", "method", call.Method, "call_id", call.CallID, "err", err)
	}
}
