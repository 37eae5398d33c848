package conversation

import (
	"context"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/opus"
	"github.com/agenthost/agenthost/proto/voice"
)

// The microphone side of a turn: reading the capture chain, ending a turn
// at a mute, and sending the encoded frames.

func (c *Conversation) hasMic() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.src != nil
}

// capture reads the microphone frame by frame and sends what the turn needs.
func (c *Conversation) capture(ctx context.Context) {
	c.mu.Lock()
	src := c.src // runDevices clears c.src once capture returns
	c.mu.Unlock()
	go func() { <-ctx.Done(); src.Close() }()
	n := int(c.o.Frame.Seconds() * float64(c.o.Rate))
	buf := make([]int16, n)
	if c.wk != nil {
		c.wakeReset()
		defer c.dropWake(true)
	}
	muted := false
	voiced, _ := src.(interface{ TakeVoiced() bool }) // the capture chain, when there is one
	for ctx.Err() == nil {
		if _, err := audio.ReadFull(src, buf); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("the microphone stopped; no more audio will be sent", "err", err)
			}
			return
		}
		ownSound := voiced != nil && !voiced.TakeVoiced()
		if c.o.MicMuted != nil && c.o.MicMuted() {
			if c.o.Withheld != nil {
				c.o.Withheld()
			}
			if !muted {
				c.muteEndsTurn()
			}
			if c.wk != nil {
				c.dropWake(false) // privacy: no detection from before the mute starts a turn
			}
			muted = true
			continue // privacy: nothing from the microphone leaves
		}
		if c.wk == nil {
			c.sendMic(buf)
			continue
		}
		if muted {
			c.wakeReset() // nothing from before the mute is pre-roll
		}
		muted = false
		for _, f := range c.wakeFrame(buf, ownSound) {
			c.sendMic(f)
		}
	}
}

// muteEndsTurn ends the turn that streams the microphone when it is
// muted, as if its speech had ended (END, or a LISTEN stop), so that none
// resumes at the unmute: a new one needs a new trigger, and the reply to
// the owner's turn opens no follow-up window. A VAD mode without the wake
// word listens whenever the microphone is on, by design.
func (c *Conversation) muteEndsTurn() {
	c.mu.Lock()
	c.owned = ""
	c.mu.Unlock()
	if c.wk != nil && c.wk.turn {
		c.log.Info("the microphone is muted; the turn ends")
		c.endWakeTurn()
		return
	}
	c.mu.Lock()
	talk := c.talking && !c.waitReply && (c.wk != nil || !c.vad())
	c.mu.Unlock()
	if talk {
		c.log.Info("the microphone is muted; the turn ends")
		if _, err := c.TalkStop(); err != nil {
			c.log.Debug("ending the turn at the mute", "err", err)
		}
	}
}

// sendMic sends one microphone frame if a turn streams.
func (c *Conversation) sendMic(buf []int16) {
	c.mu.Lock()
	send, task := c.up && c.talking && !c.waitReply, c.task
	if send {
		c.seq++
	}
	seq := c.seq
	enc := c.codec.Load().enc // the format of task's connection
	c.mu.Unlock()
	if !send {
		return
	}
	payload, err := c.encode(enc, buf)
	if err != nil {
		c.log.Warn("could not encode audio", "err", err)
		return
	}
	if err := c.out.Send(voice.Frame{Type: voice.TypeAudio, Task: task, Seq: seq, Payload: payload}); err != nil {
		c.log.Debug("audio frame not sent", "err", err)
		return
	}
	c.framesOut.Add(1)
}

// Stats are the conversation's counters since it was made, for metrics.
type Stats struct {
	FramesIn  int64 // reply audio frames from the server
	FramesOut int64 // microphone frames sent
	Underruns int64 // frames of silence played because the reply was late
	BargeIns  int64 // replies cut short by a new turn
}

// encode encodes pcm with enc (nil: PCM) into c.payload, which the next
// frame reuses.
func (c *Conversation) encode(enc *opus.Encoder, pcm []int16) ([]byte, error) {
	if enc != nil {
		b, err := enc.AppendEncodeFramed(c.payload[:0], pcm, opus.BigEndian)
		c.payload = b[:0]
		return b, err
	}
	b := c.payload[:0]
	for _, s := range pcm {
		b = append(b, byte(s), byte(uint16(s)>>8))
	}
	c.payload = b[:0]
	voice.SanitizeAudio(b)
	return b, nil
}
