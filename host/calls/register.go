package calls

import (
	"bytes"
	"context"
	"errors"

	"github.com/agenthost/agenthost/internal/memtrim"
	"github.com/agenthost/agenthost/internal/stall"
	"github.com/agenthost/agenthost/proto/voice"
)

// Serve hands back idle memory from now on (internal/memtrim) and sends a
// register on each change of the set until ctx ends.
func (c *Calls) Serve(ctx context.Context) {
	// GC at 200%, not Go's default 100 nor the plugins' 50: the host's live
	// heap is small (2-3 MB) and a plugin call leaves ~6.4 kB of garbage,
	// most of it go-plugin's gRPC. At 100 a collection came every ~400 calls
	// and overlapped one in eight of the slowest 1% of calls; at 200 it comes
	// every ~900, the host's p99 for a plugin call is ~12% lower, for a heap
	// goal ~3 MB higher while calls flow, which the idle trim hands back
	// (BenchmarkPluginCall, BenchmarkPluginCallAllocs, BenchmarkPluginRSS).
	c.trim.Store(memtrim.Start(memtrim.Options{GCPercent: 200, MemoryLimit: 64 << 20, IdleAfter: idleTrim}))
	for {
		select {
		case <-c.reg.Changes():
			c.sendRegister(0)
		case <-ctx.Done():
			return
		}
	}
}

// LinkUp sends the register on a new connection. It carries the whole
// set: the next change is sent at once, not paced after the changes that
// came before it.
func (c *Calls) LinkUp(conn int) {
	c.mu.Lock()
	c.conn, c.registered = conn, nil
	c.mu.Unlock()
	c.sendRegister(conn)
	c.reg.Sent()
}

// LinkDown forgets the connection that ended.
func (c *Calls) LinkDown(conn int) {
	c.mu.Lock()
	if c.conn == conn {
		c.conn, c.registered = 0, nil
	}
	c.mu.Unlock()
}

// Registers is how many registers were sent since start.
func (c *Calls) Registers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registers
}

// Check implements part.Checker: the dispatcher, and the register's lock.
func (c *Calls) Check(ctx context.Context) error {
	if err := c.disp.Check(ctx); err != nil {
		return err
	}
	if err := stall.Lock(ctx, &c.mu); err != nil {
		return errors.New("the host's register lock is held and not released")
	}
	return nil
}

// sendRegister sends the whole service set on the current connection unless
// that connection already has exactly this set. conn 0 means "whatever is up".
func (c *Calls) sendRegister(conn int) {
	c.mu.Lock() // held while reading the set, so an older set never overtakes a newer one
	defer c.mu.Unlock()
	payload := c.reg.Canonical()
	if conn == 0 {
		conn = c.conn
	}
	if conn == 0 || conn != c.conn || bytes.Equal(payload, c.registered) {
		return
	}
	if err := c.link.Send(voice.MCPFrame(payload)); err != nil {
		c.log.Warn("could not send the register message", "err", err)
		return
	}
	c.registered = payload
	c.registers++
	c.log.Info("registered services with the voice server", "conn", conn, "services", len(c.reg.Names()))
}
