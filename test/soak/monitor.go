package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// monitor watches the simulator through its log (one line per frame read
// and written, and one per connection), so that counting turns costs no
// copy of the simulator's ever-growing frame record.
type monitor struct {
	mu           sync.Mutex
	listenStarts int       // LISTEN start from the host: a turn began
	vadStops     int       // LISTEN stop from the simulator: its VAD ended a turn
	replyEnds    int       // END from the simulator: a reply was streamed whole
	audioIn      int       // AUDIO frames from the host (the microphone)
	lastStart    time.Time // the last LISTEN start
	maxGap       time.Duration
	gapAt        time.Time // when the longest gap ended
	connects     int
	disconnects  []disconnect
	unexpected   int // results for calls nobody waits for (late or duplicated)
}

type disconnect struct {
	conn   int64
	at     time.Time
	reason string
}

func newMonitor() *monitor { return &monitor{lastStart: time.Now()} }

func (m *monitor) logger() *slog.Logger { return slog.New(m) }

func (m *monitor) Enabled(context.Context, slog.Level) bool { return true }
func (m *monitor) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m *monitor) WithGroup(string) slog.Handler            { return m }

func (m *monitor) Handle(_ context.Context, r slog.Record) error {
	var conn int64
	var frame, reason string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "conn":
			conn = a.Value.Int64()
		case "frame":
			frame = a.Value.String()
		case "reason":
			reason = a.Value.String()
		}
		return true
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	switch r.Message {
	case "recv":
		switch {
		case strings.HasPrefix(frame, "AUDIO "):
			m.audioIn++
		case strings.HasPrefix(frame, "LISTEN ") && strings.Contains(frame, `\"state\":\"start\"`):
			m.listenStarts++
			if gap := r.Time.Sub(m.lastStart); gap > m.maxGap {
				m.maxGap, m.gapAt = gap, r.Time
			}
			m.lastStart = r.Time
		}
	case "send":
		switch {
		case strings.HasPrefix(frame, "END "):
			m.replyEnds++
		case strings.HasPrefix(frame, "LISTEN ") && strings.Contains(frame, `\"state\":\"stop\"`):
			m.vadStops++
		}
	case "client connected":
		m.connects++
	case "client disconnected":
		m.disconnects = append(m.disconnects, disconnect{conn: conn, at: r.Time, reason: reason})
	case "result for a call nobody is waiting for":
		m.unexpected++
	}
	return nil
}

// turns returns the voice figures so far, with the gap since the last turn
// counted as a gap.
func (m *monitor) turns(now time.Time) (starts, stops, ends, audio int, maxGap time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listenStarts, m.vadStops, m.replyEnds, m.audioIn, max(m.maxGap, now.Sub(m.lastStart))
}
