package link

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// A link whose server stopped answering looks alive to TCP when the path
// died without a FIN (a Wi-Fi roam, a NAT reset, a proxy that stopped
// forwarding). The host asks, with a ##PING whose answer is due within
// server.liveness.answer_timeout, when it matters: right after connecting,
// when a turn starts, while a reply is awaited and the server is silent,
// and after keepalive of silence. Only the PONG answers: another frame may
// have been on its way before the path died. A missing answer ends the
// connection with a NoAnswerError; Run then makes a new one.

// NoAnswerError ends a connection whose server did not answer a PING in time.
type NoAnswerError struct {
	Why   string        // when the PING went out: "a turn started", ...
	After time.Duration // server.liveness.answer_timeout
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("the voice server did not answer within %s after %s (server.liveness.answer_timeout); the connection is dropped and made again", e.After, e.Why)
}

// IsNoAnswer reports whether err is (or wraps) a NoAnswerError.
func IsNoAnswer(err error) bool {
	var na *NoAnswerError
	return errors.As(err, &na)
}

// Occasions of a PING, for NoAnswerError.Why.
const (
	whyConnected = "connecting"
	whyIdle      = "the keepalive PING"
	whyAwaiting  = "silence while a reply was awaited"
)

// liveness is a connection's state of asking; conn.mu guards it.
type liveness struct {
	pending  bool      // a PING waits for its answer
	why      string    // the occasion of the pending PING
	due      time.Time // when the pending answer is due
	waiters  []chan error
	answered bool // the server answered on this connection at least once
	warned   bool // said that a PING went unanswered by a server that never answered one
}

// ask sends a PING unless one is pending; an answer (or the end of the
// connection) is then reported on w, if not nil. c.mu must not be held.
func (c *conn) ask(why string, w chan error) {
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		if w != nil {
			w <- ErrDown
		}
		return
	default:
	}
	if w != nil {
		c.live.waiters = append(c.live.waiters, w)
	}
	if c.live.pending {
		c.mu.Unlock()
		return
	}
	c.live.pending, c.live.why, c.live.due = true, why, time.Now().Add(c.o.answerTimeout)
	c.mu.Unlock()
	c.log.Debug("PING", "conn", c.id, "because", why)
	c.send(voice.StatusFrame(voice.StatusPing))
	c.kick()
}

// answeredLocked settles a pending PING: the PONG came; c.mu held.
func (c *conn) answeredLocked() {
	c.live.answered = true
	if !c.live.pending {
		return
	}
	c.live.pending = false
	for _, w := range c.live.waiters {
		w <- nil
	}
	c.live.waiters = nil
}

// ended tells whoever waits for an answer that the connection ended first.
func (c *conn) ended(err error) {
	if err == nil {
		err = ErrDown
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.live.waiters {
		w <- err
	}
	c.live.waiters = nil
}

func (c *conn) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// watchLoop sends the PINGs that keep the link alive and proven: after
// keepalive without traffic, and, while l is attended, whenever the server
// has been silent for answer_timeout; it fails the connection when an
// answer does not come in time.
func (c *conn) watchLoop(l *Link) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait, why, err := c.watch(time.Now(), l.attending.Load() > 0, l.pongSeen.Load())
		if err != nil {
			c.failed(err)
			return
		}
		if why != "" {
			c.ask(why, nil)
			continue
		}
		t.Reset(max(wait, time.Millisecond))
		select {
		case <-c.done:
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// watch decides, at now, what the watch loop does: fail the connection
// (err), send a PING (why), or wait.
func (c *conn) watch(now time.Time, attended, serverPongs bool) (wait time.Duration, why string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	answer := c.o.answerTimeout
	if c.live.pending {
		if now.Before(c.live.due) {
			return c.live.due.Sub(now), "", nil
		}
		if serverPongs {
			return 0, "", &NoAnswerError{Why: c.live.why, After: answer}
		}
		// This server has never answered a PING: it may not at all. Dead
		// paths are then found by TCP (tcp_user_timeout) and the read
		// deadline only.
		if !c.live.warned {
			c.live.warned = true
			c.log.Warn("the voice server did not answer ##PING, and has not answered one since the host started; if it never does, a dead link is found only by TCP (server.liveness.tcp_user_timeout) or after the read deadline", "conn", c.id, "answer_timeout", answer)
		}
		c.live.pending = false
		for _, w := range c.live.waiters {
			w <- nil
		}
		c.live.waiters = nil
	}
	next := c.lastWrite.Add(c.keep)
	if r := c.lastRead.Add(c.keep); r.Before(next) {
		next = r
	}
	if !now.Before(next) {
		return 0, whyIdle, nil
	}
	if attended {
		if silent := c.lastRead.Add(answer); !now.Before(silent) {
			return 0, whyAwaiting, nil
		} else if silent.Before(next) {
			next = silent
		}
	}
	return next.Sub(now), "", nil
}

// Attention is a turn's claim on the link's liveness (Link.Attend).
type Attention struct {
	l      *Link
	answer chan error
	once   sync.Once
}

// Attend makes sure the server is there, because a turn starts or awaits
// its reply: a ##PING now, and, until Release, another whenever the server
// has been silent for server.liveness.answer_timeout. Each PING must be
// answered (a PONG) within answer_timeout, or the connection
// is dropped (a NoAnswerError) and made again. why names the occasion in
// that error.
func (l *Link) Attend(why string) *Attention {
	a := &Attention{l: l, answer: make(chan error, 1)}
	l.attending.Add(1)
	l.mu.Lock()
	c := l.cur
	l.mu.Unlock()
	if c == nil {
		a.answer <- ErrDown
		return a
	}
	c.ask(why, a.answer)
	return a
}

// Answer reports the server's answer to the PING sent when the attention
// began: nil once the server answered, or the error that ended the
// connection first (a NoAnswerError when it did not answer in time).
func (a *Attention) Answer() <-chan error { return a.answer }

// Release ends the attention; it may be called more than once.
func (a *Attention) Release() {
	a.once.Do(func() {
		a.l.attending.Add(-1)
		a.l.mu.Lock()
		if c := a.l.cur; c != nil {
			c.kick()
		}
		a.l.mu.Unlock()
	})
}
