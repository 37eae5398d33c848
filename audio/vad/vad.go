// Package vad measures audio levels and detects speech by energy: the RMS
// level of each short frame is compared with a threshold, speech starts
// after a minimum run of loud frames and ends after a hang time of quiet
// ones. All durations are counted in samples, never on the wall clock, so
// the detector behaves the same on a paced device, an unpaced headless
// device, or a file. Pure Go; not safe for concurrent use.
package vad

import (
	"fmt"
	"math"
	"time"
)

// RMS is the root mean square of p as a fraction of full scale (a
// full-scale square wave is 1, a full-scale sine about 0.707).
func RMS(p []int16) float64 {
	if len(p) == 0 {
		return 0
	}
	var sum float64
	for _, s := range p {
		v := float64(s)
		sum += v * v
	}
	return math.Sqrt(sum/float64(len(p))) / 32768
}

// Floor is the level reported for digital silence, in dBFS.
const Floor = -120.0

// DBFS is RMS in decibels relative to full scale, at least Floor.
func DBFS(p []int16) float64 {
	r := RMS(p)
	if r <= 0 {
		return Floor
	}
	return max(Floor, 20*math.Log10(r))
}

// Config of a Detector. Zero fields take the defaults shown.
type Config struct {
	Rate      int           // samples per second; 16000
	Frame     time.Duration // analysis frame; 20 ms
	Threshold float64       // a frame louder than this (dBFS) is speech; -40
	MinSpeech time.Duration // loud run needed to start speech; 60 ms
	Hang      time.Duration // quiet run needed to end speech; 700 ms
}

// Kind of an Event.
type Kind int

const (
	// SpeechStart: a run of loud frames at least MinSpeech long.
	SpeechStart Kind = iota + 1
	// SpeechEnd: after speech, a run of quiet frames at least Hang long.
	SpeechEnd
)

func (k Kind) String() string {
	switch k {
	case SpeechStart:
		return "speech-start"
	case SpeechEnd:
		return "speech-end"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is a change of state. Positions count samples since New or Reset.
type Event struct {
	Kind Kind
	// At is where the detector decided: the end of the frame that
	// completed MinSpeech or Hang.
	At int64
	// Since is where the run that caused it began: the first loud sample
	// of the speech (SpeechStart) or the first quiet one after it
	// (SpeechEnd). At - Since is MinSpeech or Hang rounded up to frames.
	Since int64
}

// Detector is an energy voice activity detector and level meter.
type Detector struct {
	cfg                        Config
	frame, minSpeech, hangSamp int64

	buf      []int16
	pos      int64 // samples consumed into complete frames
	speaking bool
	runStart int64 // start of the current loud (or quiet) run, -1 if none
	level    float64
}

// New makes a detector.
func New(c Config) (*Detector, error) {
	if c.Rate == 0 {
		c.Rate = 16000
	}
	if c.Frame == 0 {
		c.Frame = 20 * time.Millisecond
	}
	if c.Threshold == 0 {
		c.Threshold = -40
	}
	if c.MinSpeech == 0 {
		c.MinSpeech = 60 * time.Millisecond
	}
	if c.Hang == 0 {
		c.Hang = 700 * time.Millisecond
	}
	samples := func(d time.Duration) int64 { return int64(c.Rate) * int64(d) / int64(time.Second) }
	d := &Detector{cfg: c, frame: samples(c.Frame), minSpeech: samples(c.MinSpeech), hangSamp: samples(c.Hang)}
	switch {
	case c.Rate < 0:
		return nil, fmt.Errorf("vad: invalid rate %d", c.Rate)
	case d.frame <= 0:
		return nil, fmt.Errorf("vad: frame %v is shorter than one sample at %d Hz", c.Frame, c.Rate)
	case c.MinSpeech < 0 || c.Hang < 0:
		return nil, fmt.Errorf("vad: negative MinSpeech %v or Hang %v", c.MinSpeech, c.Hang)
	case c.Threshold > 0:
		return nil, fmt.Errorf("vad: threshold %.1f dBFS is above full scale", c.Threshold)
	}
	d.Reset()
	return d, nil
}

// Config returns the configuration with defaults filled in.
func (d *Detector) Config() Config { return d.cfg }

// Reset forgets all state and restarts sample counting at 0.
func (d *Detector) Reset() {
	d.buf = d.buf[:0]
	d.pos = 0
	d.speaking = false
	d.runStart = -1
	d.level = Floor
}

// Speaking reports whether the detector is inside speech.
func (d *Detector) Speaking() bool { return d.speaking }

// Level is the dBFS level of the last complete frame.
func (d *Detector) Level() float64 { return d.level }

// Position is the number of samples analysed so far (complete frames).
func (d *Detector) Position() int64 { return d.pos }

// Process analyses p (any length; partial frames are kept for the next
// call) and returns the events it caused, in order, or nil.
func (d *Detector) Process(p []int16) []Event {
	var events []Event
	for len(p) > 0 {
		need := int(d.frame) - len(d.buf)
		if len(d.buf) == 0 && len(p) >= int(d.frame) {
			// Whole frame straight from p, no copy.
			if e, ok := d.frameDone(p[:d.frame]); ok {
				events = append(events, e)
			}
			p = p[d.frame:]
			continue
		}
		n := min(need, len(p))
		d.buf = append(d.buf, p[:n]...)
		p = p[n:]
		if len(d.buf) == int(d.frame) {
			if e, ok := d.frameDone(d.buf); ok {
				events = append(events, e)
			}
			d.buf = d.buf[:0]
		}
	}
	return events
}

func (d *Detector) frameDone(f []int16) (Event, bool) {
	start := d.pos
	d.pos += int64(len(f))
	d.level = DBFS(f)
	loud := d.level > d.cfg.Threshold
	if !d.speaking {
		if !loud {
			d.runStart = -1
			return Event{}, false
		}
		if d.runStart < 0 {
			d.runStart = start
		}
		if d.pos-d.runStart >= max(d.minSpeech, 1) {
			d.speaking = true
			e := Event{Kind: SpeechStart, At: d.pos, Since: d.runStart}
			d.runStart = -1
			return e, true
		}
		return Event{}, false
	}
	if loud {
		d.runStart = -1
		return Event{}, false
	}
	if d.runStart < 0 {
		d.runStart = start
	}
	if d.pos-d.runStart >= max(d.hangSamp, 1) {
		d.speaking = false
		e := Event{Kind: SpeechEnd, At: d.pos, Since: d.runStart}
		d.runStart = -1
		return e, true
	}
	return Event{}, false
}
