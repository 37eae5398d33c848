package conversation

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agenthost/agenthost/audio/mixer"

	"github.com/agenthost/agenthost/audio/vad"
	"github.com/agenthost/agenthost/proto/voice"
)

// WakeOptions turn the wake word on: the microphone is streamed only in
// turns that a wake phrase (or speech in the follow-up window after the
// reply to the owner's turn) starts, never before.
type WakeOptions struct {
	// Feed hands every microphone frame, with its stream position, to the
	// detector, and whether the capture chain took all of it for the
	// speaker's own sound alone (no voice in the room; see
	// capture.Chain.TakeVoiced); it must not block.
	Feed func(pos int64, pcm []int16, ownSound bool)
	// PreRoll is how much audio from before the point of detection is sent
	// with the turn, so that a command said in the same breath arrives
	// whole (0: none; the configuration's default is 300 ms: the models
	// fire within about 200 ms of the phrase's end, and no phrase is
	// shorter than about 500 ms, so nothing from before the phrase is ever
	// sent).
	PreRoll time.Duration
	// FollowUp: after the reply to a turn the owner started (the wake
	// word, the talk button, Say, a follow-up turn), speech within this
	// long starts a turn without the wake word (0: off). A reply the
	// server pushes unasked opens no window, nor does a failed turn.
	FollowUp time.Duration
	// MaxTurn ends a turn that the end of speech has not ended (30 s).
	MaxTurn time.Duration
	// Earcon is played on a detection ("" none).
	Earcon string
}

// Detection is a wake phrase heard at a stream position.
type Detection struct {
	Model string
	Score float32
	End   int64 // the stream position after the audio the model had heard
}

const (
	// listenFor: a turn in which nothing is said within this long after
	// the wake phrase ends (push-to-talk mode, where the host ends turns).
	listenFor = 5 * time.Second
	// ringSpan is the microphone audio kept for a pre-roll, beyond
	// PreRoll: how late a detection may arrive.
	ringSpan = 3 * time.Second
	// followPreRoll is sent from before speech that starts a follow-up turn.
	followPreRoll = 200 * time.Millisecond
)

// waker is the wake-word state. Its fields, but for pending, belong to the
// capture goroutine.
type waker struct {
	o    WakeOptions
	rate int

	mu      sync.Mutex
	pending *Detection
	follow  bool // a reply is over: open the follow-up window
	off     bool // no microphone is read: a detection is stale

	pos       int64   // stream position after the last frame read
	ring      []int16 // the last samples read; ring[0] is at ringStart
	ringStart int64
	lastEnd   int64 // where the last turn ended: older detections are stale
	// where the stream last began (device opened, microphone unmuted):
	// detections in audio from before it are stale too
	streamStart int64

	turn      bool  // a turn this waker started streams
	turnStart int64 // where it started (the detection, or the speech)
	local     bool  // push-to-talk mode: the local end of speech ends it
	vad       *vad.Detector
	vadAt     int64 // stream position of the vad's sample 0
	spoke     bool

	followFrom, followTill int64 // the open follow-up window; followTill 0: none
	earcon                 []int16
}

func newWaker(o WakeOptions, rate int) (*waker, error) {
	o.PreRoll = max(o.PreRoll, 0) // 0 is the owner's: none
	if o.MaxTurn <= 0 {
		o.MaxTurn = 30 * time.Second
	}
	w := &waker{o: o, rate: rate, off: true}
	var err error
	if w.earcon, err = loadEarcon(o.Earcon, rate); err != nil {
		return nil, fmt.Errorf("conversation.earcons.wake: %w", err)
	}
	if w.vad, err = vad.New(vad.Config{Rate: rate}); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *waker) samples(d time.Duration) int64 { return int64(d.Seconds() * float64(w.rate)) }

// Wake takes a detection from the detector (from any goroutine); the
// microphone's next frame starts the turn. One that comes while the
// microphone is muted or not read is stale.
func (c *Conversation) Wake(d Detection) {
	if c.wk == nil {
		return
	}
	if c.o.MicMuted != nil && c.o.MicMuted() {
		c.log.Debug("wake word heard while the microphone is muted; ignored", "model", d.Model)
		return
	}
	c.wk.mu.Lock()
	off := c.wk.off
	if !off {
		c.wk.pending = &d
	}
	c.wk.mu.Unlock()
	if off {
		c.log.Debug("wake word heard while no microphone is read; ignored", "model", d.Model)
		return
	}
	c.o.Output.SetActive(true) // at once: the media goes down while the turn starts
}

// wakePending reports whether a detection waits for the microphone's next
// frame.
func (c *Conversation) wakePending() bool {
	if c.wk == nil {
		return false
	}
	c.wk.mu.Lock()
	defer c.wk.mu.Unlock()
	return c.wk.pending != nil
}

// dropWake drops a detection not yet taken (the microphone is muted, or
// stops being read: off), and gives the media back if it was all that
// ducked it.
func (c *Conversation) dropWake(off bool) {
	w := c.wk
	w.mu.Lock()
	had := w.pending != nil
	w.pending = nil
	w.off = w.off || off
	w.mu.Unlock()
	if had || off {
		c.syncActive()
	}
}

// wakeReplyOver is called when a reply is over: the follow-up window
// opens if it was the reply to the owner's turn (owned). A reply the
// server pushed unasked never opens the microphone.
func (c *Conversation) wakeReplyOver(owned bool) {
	c.mu.Lock()
	c.stopWaitLocked()
	c.mu.Unlock()
	if owned && c.wk.o.FollowUp > 0 {
		c.wk.mu.Lock()
		c.wk.follow = true
		c.wk.mu.Unlock()
	}
}

// wakeReset starts a new stream (the microphone was opened again, or is
// on again after a mute): a gap for the detector, no old audio in a
// pre-roll, and no detection of the old stream left to start a turn.
func (c *Conversation) wakeReset() {
	w := c.wk
	w.pos += int64(w.rate)
	w.ring, w.ringStart, w.streamStart = w.ring[:0], w.pos, w.pos
	w.followTill = 0
	w.mu.Lock()
	w.pending, w.follow, w.off = nil, false, false
	w.mu.Unlock()
	c.syncActive()
}

// wakeFrame takes one microphone frame: it feeds the detector, keeps the
// pre-roll, starts and ends turns, and returns the frames to send now if
// a turn streams (the pre-roll and buf when one starts).
func (c *Conversation) wakeFrame(buf []int16, ownSound bool) [][]int16 {
	w := c.wk
	from := w.pos
	w.pos += int64(len(buf))
	if w.o.Feed != nil {
		w.o.Feed(from, buf, ownSound)
	}
	w.ring = append(w.ring, buf...)
	if keep := int(w.samples(w.o.PreRoll + ringSpan)); len(w.ring) > keep {
		cut := len(w.ring) - keep
		w.ring = append(w.ring[:0], w.ring[cut:]...)
		w.ringStart += int64(cut)
	}
	w.mu.Lock()
	d, follow := w.pending, w.follow
	w.pending, w.follow = nil, false
	w.mu.Unlock()

	c.mu.Lock()
	talking := c.talking && !c.waitReply
	c.mu.Unlock()
	if w.turn && !talking {
		w.endTurn() // ended by the server (LISTEN stop), a push-to-talk stop or the link
	}
	if follow && !w.turn {
		w.followFrom, w.followTill = w.pos, w.pos+w.samples(w.o.FollowUp)
		w.restartVAD(w.pos)
		c.log.Debug("follow-up window open", "follow_up", w.o.FollowUp)
	}
	switch {
	case d != nil && d.End < w.streamStart:
		c.log.Debug("wake word heard in audio from before a mute or a device change; ignored", "model", d.Model)
		c.syncActive()
	case d != nil && !talking && d.End >= w.lastEnd:
		return c.wakeTurn(*d, buf)
	case d != nil:
		c.log.Debug("wake word heard during a turn; ignored", "model", d.Model)
		c.syncActive()
	}
	if w.turn {
		c.wakeTurnFrame(buf)
		return [][]int16{buf}
	}
	if w.followTill > 0 {
		return c.followFrame(buf)
	}
	return [][]int16{buf}
}

func (w *waker) restartVAD(at int64) {
	w.vad.Reset()
	w.vadAt, w.spoke = at, false
}

func (w *waker) endTurn() {
	w.turn, w.lastEnd = false, w.pos
}

// wakeTurn starts a turn for detection d, with the audio from PreRoll
// before it (in whole frames) as its first frames.
func (c *Conversation) wakeTurn(d Detection, buf []int16) [][]int16 {
	w := c.wk
	c.log.Info("wake word", "model", d.Model, "score", fmt.Sprintf("%.2f", d.Score), "late_ms", (w.pos-d.End)*1000/int64(w.rate))
	c.play.cue(w.earcon, mixer.Earcon)
	task, err := c.startTurn()
	if err != nil {
		c.log.Warn("wake word heard, but no turn can start", "err", err)
		c.syncActive()
		return nil
	}
	c.hook.run("wake", map[string]string{"TASK": task, "MODEL": d.Model, "SCORE": strconv.FormatFloat(float64(d.Score), 'f', 3, 32)})
	w.turn, w.turnStart, w.followTill = true, w.pos, 0
	w.restartVAD(w.pos)
	return w.preRoll(d.End-w.samples(w.o.PreRoll), len(buf))
}

// preRoll is the ring from about from (moved back to a whole number of
// frames of n samples before now, not before the ring nor the last turn's
// end) to now, in frames.
func (w *waker) preRoll(from int64, n int) [][]int16 {
	k := (w.pos - from + int64(n) - 1) / int64(n)
	start := w.pos - k*int64(n)
	for start < w.ringStart || start < w.lastEnd {
		start += int64(n)
	}
	var out [][]int16
	for p := start; p < w.pos; p += int64(n) {
		i := int(p - w.ringStart)
		out = append(out, append([]int16(nil), w.ring[i:min(i+n, len(w.ring))]...))
	}
	return out
}

// startTurn opens a turn as push-to-talk does (manual), or a LISTEN cycle
// (VAD modes, where the server's VAD ends it); any reply playing stops.
func (c *Conversation) startTurn() (string, error) {
	if !c.vad() {
		c.wk.local = true
		return c.TalkStart()
	}
	c.wk.local = false
	c.mu.Lock()
	up := c.up && c.src != nil
	c.mu.Unlock()
	if !up {
		return "", fmt.Errorf("not connected to the voice server")
	}
	task := c.listen()
	c.mu.Lock()
	c.replyTask, c.owned = task, task
	c.mu.Unlock()
	c.play.flush(task) // whatever still plays is over
	return task, nil
}

// wakeTurnFrame watches a turn's audio: in push-to-talk mode the local end
// of speech (or nothing said) ends it; any turn ends after MaxTurn.
func (c *Conversation) wakeTurnFrame(buf []int16) {
	w := c.wk
	if w.pos-w.turnStart > w.samples(w.o.MaxTurn) {
		c.log.Info("the turn is longer than conversation.wake_word.max_turn; ending it", "max_turn", w.o.MaxTurn)
		c.endWakeTurn()
		return
	}
	if !w.local {
		return
	}
	for _, e := range w.vad.Process(buf) {
		switch e.Kind {
		case vad.SpeechStart:
			w.spoke = true
		case vad.SpeechEnd:
			c.log.Debug("end of speech; ending the turn")
			c.endWakeTurn()
			return
		}
	}
	if !w.spoke && w.pos-w.turnStart > w.samples(listenFor) {
		c.log.Info("nothing said after the wake word; ending the turn", "waited", listenFor)
		c.endWakeTurn()
	}
}

// endWakeTurn ends the turn from this side: END (push-to-talk) or a
// client LISTEN stop (VAD modes).
func (c *Conversation) endWakeTurn() {
	w := c.wk
	w.endTurn()
	if w.local {
		if _, err := c.TalkStop(); err != nil {
			c.log.Debug("ending the wake turn", "err", err)
		}
		return
	}
	c.mu.Lock()
	task := c.task
	c.talking, c.waitReply = false, true
	c.mu.Unlock()
	c.out.Send(voice.ListenFrame(task, voice.ListenStop, ""))
	c.listenStopped(task)
	c.watchTurn(task, "the turn ended", true)
}

// followFrame watches the follow-up window: speech starts a turn, with a
// little audio from before it; the window closes after FollowUp.
func (c *Conversation) followFrame(buf []int16) [][]int16 {
	w := c.wk
	for _, e := range w.vad.Process(buf) {
		if e.Kind != vad.SpeechStart {
			continue
		}
		w.followTill = 0
		c.log.Info("speech in the follow-up window; a turn starts")
		if _, err := c.startTurn(); err != nil {
			c.log.Warn("no turn can start", "err", err)
			return nil
		}
		w.turn, w.turnStart = true, w.pos
		since := max(w.vadAt+e.Since-w.samples(followPreRoll), w.followFrom)
		w.restartVAD(w.pos)
		w.spoke = true // speech is under way
		return w.preRoll(since, len(buf))
	}
	if w.pos >= w.followTill {
		w.followTill = 0
		c.log.Debug("follow-up window over; waiting for the wake word")
	}
	return [][]int16{buf}
}

// WakeWouldStart reports whether a detection now would start a turn: the
// microphone is on and read, and no turn streams. A speaker asks before it
// claims a phrase from its household (a claim it then ignored would leave
// the phrase unanswered).
func (c *Conversation) WakeWouldStart() bool {
	if c.wk == nil || (c.o.MicMuted != nil && c.o.MicMuted()) {
		return false
	}
	c.wk.mu.Lock()
	off := c.wk.off
	c.wk.mu.Unlock()
	c.mu.Lock()
	busy := c.talking && !c.waitReply
	c.mu.Unlock()
	return !off && !busy
}
