package voicetest

import (
	"net"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// writer serialises a connection's writes and applies the write faults.
type writer struct {
	conn   net.Conn
	faults Faults
	onSent func(voice.Frame)

	mu      sync.Mutex
	pending []byte // coalesced bytes not yet written
	timer   *time.Timer
	err     error
	silent  bool // a black hole: nothing more is written
}

func newWriter(conn net.Conn, f Faults, onSent func(voice.Frame)) *writer {
	return &writer{conn: conn, faults: f, onSent: onSent}
}

func (w *writer) send(f voice.Frame) error {
	b, err := voice.AppendFrame(nil, f)
	if err != nil {
		return err
	}
	if w.faults.BracketedSeq {
		const at = len(voice.StartMarker) + 1 + voice.TaskLen
		b = slices.Insert(b, at+4, ']')
		b = slices.Insert(b, at, '[')
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.silent {
		return nil
	}
	w.onSent(f)
	if w.faults.Coalesce {
		w.pending = append(w.pending, b...)
		if w.timer == nil {
			w.timer = time.AfterFunc(5*time.Millisecond, func() { w.flush() })
		}
		return nil
	}
	return w.writeLocked(b)
}

func (w *writer) writeRaw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(b)
}

func (w *writer) writeLocked(b []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.silent {
		return nil
	}
	step := len(b)
	if w.faults.SplitWrites > 0 {
		step = w.faults.SplitWrites
	}
	for len(b) > 0 {
		n := min(step, len(b))
		if _, err := w.conn.Write(b[:n]); err != nil {
			w.err = err
			return err
		}
		b = b[n:]
	}
	return nil
}

// silence drops everything from now on, coalesced frames included.
func (w *writer) silence() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.silent, w.pending = true, nil
}

func (w *writer) isSilent() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.silent
}

// flush writes coalesced frames now.
func (w *writer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if len(w.pending) > 0 {
		w.writeLocked(w.pending)
		w.pending = nil
	}
}

func (w *writer) close() {
	w.flush()
	w.mu.Lock()
	if w.err == nil {
		w.err = net.ErrClosed
	}
	w.mu.Unlock()
}
