package link

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// Queue sizes: 2 s of 60 ms audio, and room for a burst of MCP results.
const (
	audioQueue   = 32
	controlQueue = 256
)

// conn is one connection: its socket and its writer.
type conn struct {
	id      int
	nc      net.Conn
	log     *slog.Logger
	keep    time.Duration
	skipped int64

	audio    chan voice.Frame
	control  chan voice.Frame
	done     chan struct{}
	writeErr chan error
	ackCh    chan struct{}

	closing   atomic.Bool // set once we said DISCONNECT: a close is expected
	closeOnce sync.Once
	ackOnce   sync.Once
	mu        sync.Mutex
	lastWrite time.Time
	lastRead  time.Time
	enc       *voice.Encoder
}

func newConn(id int, nc net.Conn, keep time.Duration, log *slog.Logger) *conn {
	now := time.Now()
	return &conn{id: id, nc: nc, log: log, keep: keep,
		audio: make(chan voice.Frame, audioQueue), control: make(chan voice.Frame, controlQueue),
		done: make(chan struct{}), writeErr: make(chan error, 1), ackCh: make(chan struct{}),
		lastWrite: now, lastRead: now, enc: voice.NewEncoder(nc)}
}

// send queues f; audio is dropped with an error when its queue is full rather
// than delaying what is live.
func (c *conn) send(f voice.Frame) error {
	q := c.control
	if f.Type == voice.TypeAudio {
		q = c.audio
	}
	select {
	case <-c.done:
		return ErrDown
	default:
	}
	select {
	case q <- f:
		return nil
	case <-c.done:
		return ErrDown
	default:
		if f.Type == voice.TypeAudio {
			return errors.New("link: audio queue full; the connection is too slow for the audio")
		}
		select {
		case q <- f:
			return nil
		case <-c.done:
			return ErrDown
		}
	}
}

// writeLoop is the connection's only writer. Before each write it empties the
// audio queue first, so audio never waits behind queued MCP results.
func (c *conn) writeLoop() {
	tick := time.NewTicker(min(c.keep/4, 15*time.Second))
	defer tick.Stop()
	for {
		var f voice.Frame
		select {
		case f = <-c.audio:
		default:
			select {
			case f = <-c.audio:
			case f = <-c.control:
			case <-tick.C:
				if !c.idleFor(c.keep) {
					continue
				}
				f = voice.StatusFrame(voice.StatusPing)
				c.log.Debug("PING", "conn", c.id)
			case <-c.done:
				return
			}
		}
		if err := c.writeNow(f); err != nil {
			select {
			case c.writeErr <- err:
			default:
			}
			return
		}
	}
}

func (c *conn) writeNow(f voice.Frame) error {
	c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if err := c.enc.Encode(f); err != nil {
		return err
	}
	c.mu.Lock()
	c.lastWrite = time.Now()
	c.mu.Unlock()
	return nil
}

func (c *conn) touchRead() {
	c.mu.Lock()
	c.lastRead = time.Now()
	c.mu.Unlock()
}

// idleFor reports whether nothing was written, or nothing read, for d.
func (c *conn) idleFor(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastWrite) >= d || time.Since(c.lastRead) >= d
}

func (c *conn) gotDisconnectAck() { c.ackOnce.Do(func() { close(c.ackCh) }) }

func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}
