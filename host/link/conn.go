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

// writeTimeout bounds one write to the server.
const writeTimeout = 30 * time.Second

// conn is one connection: its socket and its writer.
type conn struct {
	id      int
	nc      net.Conn
	o       *settings // the link's settings when the connection started
	log     *slog.Logger
	keep    time.Duration
	skipped int64

	audio    chan voice.Frame
	control  chan voice.Frame
	queued   chan struct{} // wakes the writer; a buffer of one
	wake     chan struct{} // wakes the watch loop; a buffer of one
	wmu      sync.Mutex    // held for each write to the socket
	done     chan struct{}
	writeErr chan error
	ackCh    chan struct{}

	closing   atomic.Bool // set once we said DISCONNECT: a close is expected
	closeOnce sync.Once
	ackOnce   sync.Once
	mu        sync.Mutex
	lastWrite time.Time
	lastRead  time.Time
	live      liveness
	enc       *voice.Encoder
	deadline  time.Time   // when the write deadline was last moved (under wmu)
	withheld  func() bool // Options.Withheld, or nil
}

func newConn(id int, nc net.Conn, o *settings, log *slog.Logger) *conn {
	now := time.Now()
	return &conn{id: id, nc: nc, o: o, log: log, keep: o.keepalive,
		audio: make(chan voice.Frame, audioQueue), control: make(chan voice.Frame, controlQueue), queued: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		done: make(chan struct{}), writeErr: make(chan error, 1), ackCh: make(chan struct{}),
		lastWrite: now, lastRead: now, enc: voice.NewEncoder(socketWriter(nc))}
}

// send queues f; audio is dropped with an error when its queue is full rather
// than delaying what is live. An audio frame with no audio queued ahead of it
// and no write in progress is written by the caller itself: one hand-off to
// the writer fewer for every frame of a stream.
func (c *conn) send(f voice.Frame) error {
	select {
	case <-c.done:
		return ErrDown
	default:
	}
	if f.Type == voice.TypeAudio && c.wmu.TryLock() {
		if len(c.audio) == 0 {
			err := c.writeNow(f)
			c.wmu.Unlock()
			if err != nil {
				c.failed(err)
			}
			return err
		}
		c.wmu.Unlock()
	}
	q := c.control
	if f.Type == voice.TypeAudio {
		q = c.audio
		f.Payload = append([]byte(nil), f.Payload...) // its sender reuses it
	}
	select {
	case q <- f:
	case <-c.done:
		return ErrDown
	default:
		if f.Type == voice.TypeAudio {
			return errors.New("link: audio queue full; the connection is too slow for the audio")
		}
		select {
		case q <- f:
		case <-c.done:
			return ErrDown
		}
	}
	select {
	case c.queued <- struct{}{}:
	default:
	}
	return nil
}

// flush waits, up to d, until nothing is queued and no write is in
// progress.
func (c *conn) flush(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c.wmu.Lock()
		empty := len(c.audio) == 0 && len(c.control) == 0
		c.wmu.Unlock()
		if empty {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failed reports a write that failed; the session then ends.
func (c *conn) failed(err error) {
	select {
	case c.writeErr <- err:
	default:
	}
}

// writeLoop writes what is queued, audio first, so that audio never waits
// behind queued MCP results (the watch loop queues the PINGs). It takes
// frames from the queues only while it holds wmu, so a frame written by its
// sender (see send) never overtakes one already taken.
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.queued:
		case <-c.done:
			return
		}
		for {
			c.wmu.Lock()
			var f voice.Frame
			select {
			case f = <-c.audio:
			default:
				select {
				case f = <-c.audio:
				case f = <-c.control:
				default:
					c.wmu.Unlock()
					goto drained
				}
			}
			err := c.writeNow(f)
			c.wmu.Unlock()
			if err != nil {
				c.failed(err)
				return
			}
		}
	drained:
	}
}

// writeNow writes f under a write deadline 29–30 s away: moving it
// moves a runtime timer, so it moves at most once a second, not every frame.
func (c *conn) writeNow(f voice.Frame) error {
	if f.Type == voice.TypeAudio && c.withheld != nil && c.withheld() {
		return nil // the microphone is muted: dropped at the last door
	}
	if now := time.Now(); now.Sub(c.deadline) >= time.Second {
		c.nc.SetWriteDeadline(now.Add(writeTimeout))
		c.deadline = now
	}
	if err := c.enc.Encode(f); err != nil {
		return err
	}
	c.mu.Lock()
	c.lastWrite = time.Now()
	c.mu.Unlock()
	return nil
}

// touchRead notes that the server spoke.
func (c *conn) touchRead() {
	c.mu.Lock()
	c.lastRead = time.Now()
	c.mu.Unlock()
}

func (c *conn) gotDisconnectAck() { c.ackOnce.Do(func() { close(c.ackCh) }) }

func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}
