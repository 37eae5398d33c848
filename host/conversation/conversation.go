// Package conversation owns the turns between the speaker and the voice
// server: it streams the microphone on the current task (push-to-talk or
// server-VAD LISTEN cycles, with or without echo cancellation), plays the
// reply of the current task through a jitter buffer onto the speaker's
// mixer (ducking its media while a turn is under way), drops stale tasks,
// flushes at once on barge-in, and turns TEXT, EMOJI and LISTEN frames into
// events that can run configured commands. It watches every turn until the
// server answers it, and tells the owner (an earcon, a hook) when a turn
// fails because the server cannot be reached or does not answer.
package conversation

import (
	"github.com/agenthost/agenthost/internal/sandbox"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/audio/opus"
	"github.com/agenthost/agenthost/internal/stall"
	"github.com/agenthost/agenthost/proto/voice"
)

// Sender writes frames to the voice server (the link). It keeps nothing of
// an audio frame's Payload once Send returns (as an io.Writer keeps nothing
// of p): the microphone's encoder reuses it for the next frame.
type Sender interface {
	Send(voice.Frame) error
}

// Options configure a conversation.
type Options struct {
	Mode       string // manual, vad or auto
	AEC        bool   // VAD modes: keep listening while the reply plays
	Rate       int    // wire rate, default 16000
	Frame      time.Duration
	JitterLead time.Duration
	// ReplyTimeout: a turn that gets no frame for this long while its reply
	// is awaited is over (failed, when nothing of it came at all); a
	// microphone waiting for the reply (VAD without AEC) listens again.
	ReplyTimeout time.Duration
	// Attend asks the link to make sure the server is there (link.Attend):
	// a PING whose answer is due soon, and more while the server is silent,
	// until release. answer says whether the first one was answered. Nil
	// means no such check.
	Attend     func(why string) (answer <-chan error, release func())
	InputOpus  bool // send Opus (input_audio_format:opus)
	OutputOpus bool // the server sends Opus (format:opus)
	Hooks      map[string]string
	// Jail confines the hooks (config.Config.Jail); HookDir is their own
	// folder, their TMPDIR.
	Jail    sandbox.Jail
	HookDir string
	Log     *slog.Logger
	// OpenSource and OpenSink open the microphone and the speaker; either may
	// be nil. They may block (retrying a missing device) until ctx ends.
	OpenSource func(ctx context.Context) (audio.Source, error)
	OpenSink   func(ctx context.Context) (audio.Sink, error)
	// Output is the speaker's mixer, which replies and earcons play through
	// and whose media the turns duck (SetActive); Attach plugs the speaker
	// OpenSink opened into it (nil: unplugs it). Without them the
	// conversation mixes on a mixer of its own.
	Output *mixer.Mixer
	Attach func(audio.Sink)
	// Earcons: WAV (or raw 16 kHz) files played when listening starts and
	// ends, and when a turn fails because the server cannot be reached or
	// does not answer it (config.EarconBuiltin: a generated sound).
	EarconStart, EarconEnd, EarconUnreachable string
	// MicMuted, when set, is asked before every microphone frame is sent:
	// while it says true, no AUDIO frame leaves, whatever started the turn
	// (Withheld counts each one held back), and a push-to-talk turn is
	// refused. The wake-word detector hears nothing either.
	MicMuted func() bool
	Withheld func()
	// Wake, when set, turns the wake word on (wake.go): turns start on a
	// detection, and the VAD modes no longer listen by themselves.
	Wake *WakeOptions
}

// Conversation runs turns over a microphone source and a speaker sink.
type Conversation struct {
	o    Options
	src  audio.Source
	out  Sender
	log  *slog.Logger
	play *player
	hook *hooks
	mix  *mixer.Mixer // the conversation's own mixer (no Options.Output), run by Run

	earconStart, earconEnd, earconUnreachable []int16

	// codec is the audio formats of the connection up (or of the next
	// one, while none is): SetFormats changes them.
	codec atomic.Pointer[codecs]
	// payload is the microphone frame's encoding, reused frame after
	// frame (capture's goroutine only).
	payload []byte
	wk      *waker // the wake word; nil when off

	mu        sync.Mutex
	up        bool
	talking   bool   // audio flows on task
	task      string // the turn the microphone feeds
	spoken    string // the task on which the server detected speech (LISTEN detecting)
	seq       int
	replyTask string    // the task whose reply plays
	waitReply bool      // VAD without AEC: the mic pauses until the reply ends
	owned     string    // the last turn the owner started: only its reply opens the follow-up window
	notice    string    // the speaker's last notice (Notify)
	hushed    [4]string // the last notices whose replies are not played
	hushN     int
	watch     *turnWatch         // the turn whose answer is awaited
	watchGen  int                // counts watches, so a stale reply timer does nothing
	devCancel context.CancelFunc // closes the devices open now (SetDevices)
	nextCodec *codecs            // SetFormats' while a connection with the old formats is up; LinkDown applies it

	framesIn, framesOut atomic.Int64
	mode                atomic.Pointer[string] // Options.Mode, as SetMode last set it
}

// New returns a conversation that sends on out.
func New(o Options, out Sender) (*Conversation, error) {
	if o.Rate <= 0 {
		o.Rate = audio.WireRate
	}
	if o.Frame <= 0 {
		o.Frame = 60 * time.Millisecond
	}
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	c := &Conversation{o: o, out: out, log: o.Log.With("component", "conversation")}
	c.mode.Store(&o.Mode)
	var err error
	cd := &codecs{}
	if o.InputOpus {
		if cd.enc, err = newEncoder(c.o); err != nil {
			return nil, err
		}
	}
	if o.OutputOpus {
		if cd.dec, err = newDecoder(c.o); err != nil {
			return nil, err
		}
	}
	c.codec.Store(cd)
	c.hook = newHooks(o.Hooks, c.log)
	c.hook.jail, c.hook.dir = o.Jail, o.HookDir
	if c.earconStart, err = loadEarcon(o.EarconStart, o.Rate); err != nil {
		return nil, fmt.Errorf("conversation.earcons.listen_start: %w", err)
	}
	if c.earconEnd, err = loadEarcon(o.EarconEnd, o.Rate); err != nil {
		return nil, fmt.Errorf("conversation.earcons.listen_end: %w", err)
	}
	if c.earconUnreachable, err = loadEarcon(o.EarconUnreachable, o.Rate); err != nil {
		return nil, fmt.Errorf("conversation.earcons.unreachable: %w", err)
	}
	if o.Wake != nil {
		if c.wk, err = newWaker(*o.Wake, o.Rate); err != nil {
			return nil, err
		}
	}
	if o.Output == nil {
		slot := mixer.NewSlot(o.Rate)
		c.mix = mixer.New(slot, mixer.Options{Rate: o.Rate, Frame: o.Frame, Logger: c.log})
		c.o.Output = c.mix
		c.o.Attach = func(s audio.Sink) { slot.Set(s) }
	}
	c.play = newPlayer(c.o.Output, o.Rate, o.Frame, o.JitterLead, c.log, c.replyDone)
	return c, nil
}

// Check reports whether the conversation makes progress (neither its lock
// nor its player's is held for good), for the watchdog. Device I/O is not
// watched: waiting for an unplugged microphone is not a fault of the host.
func (c *Conversation) Check(ctx context.Context) error {
	if err := stall.Lock(ctx, &c.mu); err != nil {
		return fmt.Errorf("the conversation: %w", err)
	}
	if err := stall.Lock(ctx, &c.play.mu); err != nil {
		return fmt.Errorf("the player: %w", err)
	}
	return nil
}

func (c *Conversation) vad() bool { m := *c.mode.Load(); return m == "vad" || m == "auto" }

// autoListen: a VAD mode without the wake word listens by itself.
func (c *Conversation) autoListen() bool { return c.vad() && c.wk == nil }

// Name implements part.Part.
func (c *Conversation) Name() string { return "conversation" }

// Run opens the devices, captures and plays until ctx ends.
func (c *Conversation) Run(ctx context.Context, ready func()) error {
	if c.mix != nil {
		mctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.mix.Run(mctx); close(done) }()
		defer func() { cancel(); <-done }() // after the player: it plays out on it
	}
	var once sync.Once
	for ctx.Err() == nil {
		devCtx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		c.devCancel = cancel
		openSource, openSink := c.o.OpenSource, c.o.OpenSink
		c.mu.Unlock()
		c.runDevices(devCtx, openSource, openSink, func() { once.Do(ready) })
		cancel()
	}
	once.Do(ready)
	c.mu.Lock()
	c.stopWaitLocked()
	release := c.unwatchLocked("")
	c.mu.Unlock()
	release()
	return nil
}

// SetDevices replaces the microphone and speaker (a configuration reload):
// the ones open now are closed and the new ones opened, while the link and
// the turns' state stay.
func (c *Conversation) SetDevices(openSource func(context.Context) (audio.Source, error), openSink func(context.Context) (audio.Sink, error)) {
	c.mu.Lock()
	c.o.OpenSource, c.o.OpenSink = openSource, openSink
	cancel := c.devCancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// SetMode changes the turn mode (a reload of server.params.mode, which
// the link's next connection sends). A speaker that no longer listens by
// itself (vad to manual) ends the LISTEN cycle it streams now: from here
// on only a trigger opens the microphone.
func (c *Conversation) SetMode(mode string) {
	c.mu.Lock()
	was := c.autoListen()
	c.mode.Store(&mode)
	task := c.task
	stop := was && !c.autoListen() && c.talking && !c.waitReply && c.owned != task
	if stop {
		c.talking = false
	}
	c.mu.Unlock()
	if stop {
		c.out.Send(voice.ListenFrame(task, voice.ListenStop, ""))
		c.listenStopped(task)
	}
}

// codecs are the microphone's Opus encoder and the reply's Opus decoder;
// nil is PCM. The encoder is the capture goroutine's alone, the decoder
// the link's read loop's; SetFormats and LinkDown swap in a new codecs,
// never change one.
type codecs struct {
	enc *opus.Encoder
	dec *opus.Decoder
}

// newEncoder is the microphone's Opus encoder: frames of o.Frame at o.Rate.
func newEncoder(o Options) (*opus.Encoder, error) {
	enc, err := opus.NewEncoder(opus.EncoderOptions{Rate: o.Rate, Frame: o.Frame, Complexity: opus.SpeechComplexity})
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	return enc, nil
}

// newDecoder is the reply's Opus decoder: audio at o.Rate.
func newDecoder(o Options) (*opus.Decoder, error) {
	dec, err := opus.NewDecoder(opus.DecoderOptions{Rate: o.Rate})
	if err != nil {
		return nil, fmt.Errorf("opus decoder: %w", err)
	}
	return dec, nil
}

// SetFormats changes the audio formats (a reload of
// server.params.input_audio_format, the microphone's, and
// server.params.format, the reply's), which the link's next connection
// sends in AUTH. While a connection is up it keeps the formats it was
// opened with, to its end: the turn it streams and the reply it plays
// are not cut into two formats; the new ones apply when it goes down
// (LinkDown), before the next one comes up. With none up they apply at
// once. A codec that cannot be made is an error, and that direction
// keeps its old format.
func (c *Conversation) SetFormats(inputOpus, outputOpus bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.codec.Load()
	if c.nextCodec != nil {
		cur = c.nextCodec
	}
	next := *cur
	var errs []error
	if inputOpus != (cur.enc != nil) {
		next.enc = nil
		if inputOpus {
			enc, err := newEncoder(c.o)
			if err != nil {
				errs = append(errs, fmt.Errorf("the microphone stays PCM: %w", err))
				enc = cur.enc
			}
			next.enc = enc
		}
	}
	if outputOpus != (cur.dec != nil) {
		next.dec = nil
		if outputOpus {
			dec, err := newDecoder(c.o)
			if err != nil {
				errs = append(errs, fmt.Errorf("the reply is still read as PCM: %w", err))
				dec = cur.dec
			}
			next.dec = dec
		}
	}
	if next != *cur {
		if c.up {
			c.nextCodec = &next
		} else {
			c.codec.Store(&next)
		}
	}
	return errors.Join(errs...)
}

// SetHooks replaces the event hooks (a configuration reload).
func (c *Conversation) SetHooks(cmds map[string]string) { c.hook.set(cmds) }

// runDevices opens the devices, captures and plays until ctx ends.
func (c *Conversation) runDevices(ctx context.Context, openSource func(context.Context) (audio.Source, error), openSink func(context.Context) (audio.Sink, error), ready func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if openSink != nil {
			sink, err := openSink(ctx)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Error("no speaker: replies will not be heard", "err", err)
				}
			} else {
				if c.o.Attach != nil {
					c.o.Attach(sink)
				}
				c.play.setSpeaker(true)
				defer func() {
					c.play.setSpeaker(false)
					if c.o.Attach != nil {
						c.o.Attach(nil)
					}
					sink.Close()
				}()
			}
		}
		c.play.run(ctx)
	}()
	ready()
	if openSource != nil {
		src, err := openSource(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("no microphone: nothing will be heard", "err", err)
			}
		} else {
			c.mu.Lock()
			c.src = src
			c.mu.Unlock()
			if c.autoListen() {
				c.mu.Lock()
				up := c.up
				c.mu.Unlock()
				if up {
					c.listen()
				}
			}
			c.capture(ctx)
			c.mu.Lock()
			c.src = nil
			c.mu.Unlock()
		}
	}
	<-ctx.Done()
	wg.Wait()
}

// Stats reports the conversation's counters.
func (c *Conversation) Stats() Stats {
	c.play.mu.Lock()
	defer c.play.mu.Unlock()
	return Stats{FramesIn: c.framesIn.Load(), FramesOut: c.framesOut.Load(), Underruns: c.play.underruns, BargeIns: c.play.bargeIns}
}

// LinkUp starts listening in VAD modes, and runs the link_up hook.
func (c *Conversation) LinkUp() {
	c.mu.Lock()
	c.up = true
	c.mu.Unlock()
	c.hook.run("link_up", nil)
	if c.autoListen() && c.hasMic() {
		c.listen()
	}
}

// LinkDown forgets the turn. err is why the link went down, nil when the
// host ended it (shutdown, new settings); an outage runs the link_down
// hook, and a turn that was under way fails with the owner told.
func (c *Conversation) LinkDown(err error) {
	c.mu.Lock()
	c.stopWaitLocked()
	task := c.task
	if c.watch != nil {
		task = c.watch.task
	}
	busy := c.talking || c.watch != nil
	release := c.unwatchLocked("")
	if c.nextCodec != nil {
		c.codec.Store(c.nextCodec) // the next connection's formats (SetFormats)
		c.nextCodec = nil
	}
	c.up, c.talking, c.task, c.replyTask, c.owned = false, false, "", "", ""
	c.mu.Unlock()
	release()
	c.play.flush("")
	c.syncActive()
	if err == nil {
		return
	}
	c.hook.run("link_down", map[string]string{"REASON": err.Error()})
	if busy {
		c.turnFailed(task, "the voice server cannot be reached: "+err.Error())
	}
}

// listen starts a LISTEN cycle on a new task.
func (c *Conversation) listen() string {
	task := voice.NewTaskID()
	c.mu.Lock()
	c.stopWaitLocked()
	c.task, c.seq, c.talking = task, 0, true
	c.mu.Unlock()
	c.out.Send(voice.ListenFrame(task, voice.ListenStart, ""))
	c.log.Info("listening", "task", task)
	if c.o.Attend != nil {
		// One PING: listening may last long with nothing to answer; the
		// turn is watched again once its reply is awaited.
		_, release := c.o.Attend("listening started")
		release()
	}
	c.listenStarted(task)
	return task
}

func (c *Conversation) listenStarted(task string) {
	c.syncActive()
	c.play.cue(c.earconStart, mixer.Earcon)
	c.hook.run("listen_start", map[string]string{"TASK": task})
}

func (c *Conversation) listenStopped(task string) {
	c.syncActive()
	c.play.cue(c.earconEnd, mixer.Earcon)
	c.hook.run("listen_stop", map[string]string{"TASK": task})
}

// TalkStart begins a push-to-talk turn: a new task, and any reply playing stops.
func (c *Conversation) TalkStart() (string, error) {
	if !c.hasMic() {
		return "", errors.New("no microphone (audio.backend is none, or the device is not open yet)")
	}
	if c.o.MicMuted != nil && c.o.MicMuted() {
		return "", errors.New("the microphone is muted for privacy; turn it on with `agenthost mic on` (or the speaker's button)")
	}
	task := voice.NewTaskID()
	c.mu.Lock()
	if !c.up {
		c.mu.Unlock()
		err := errors.New("not connected to the voice server")
		c.turnFailed("", err.Error())
		return "", err
	}
	c.task, c.seq, c.talking, c.replyTask, c.owned = task, -1, true, task, task
	c.mu.Unlock()
	c.play.flush(task)
	c.log.Info("talk started", "task", task)
	c.listenStarted(task)
	c.watchTurn(task, "a turn started", false)
	return task, nil
}

// TalkStop ends a push-to-talk turn with END_FRAME.
func (c *Conversation) TalkStop() (string, error) {
	c.mu.Lock()
	if !c.talking {
		c.mu.Unlock()
		return "", errors.New("no turn is open: call talk start first")
	}
	task := c.task
	c.seq++
	seq := c.seq
	c.talking = false
	if c.watch != nil && c.watch.task == task {
		c.armLocked() // the reply is awaited from now
	}
	c.mu.Unlock()
	c.log.Info("talk stopped", "task", task)
	c.listenStopped(task)
	return task, c.out.Send(voice.Frame{Type: voice.TypeEnd, Task: task, Seq: seq})
}

// Cue plays pcm (a timer's ring) on the speaker ahead of any reply, as a
// Ring stream (above everything else on the mixer); without a speaker it
// is dropped.
func (c *Conversation) Cue(pcm []int16) { c.play.cue(pcm, mixer.Ring) }

// Event runs the hook of an event that is not the conversation's own (the
// device's mute, timer, alarm), with fields as AGENTHOST_<FIELD>.
func (c *Conversation) Event(name string, fields map[string]string) { c.hook.run(name, fields) }

// Frame takes a frame from the server.
func (c *Conversation) Frame(f voice.Frame) {
	c.heard(f)
	switch f.Type {
	case voice.TypeAudio:
		pcm, err := c.decode(f.Payload)
		if err != nil {
			c.log.Warn("undecodable reply audio", "task", f.Task, "err", err)
			return
		}
		c.framesIn.Add(1)
		if c.isHushed(f.Task) {
			return
		}
		c.play.push(f.Task, pcm)
		c.syncActive()
	case voice.TypeEnd:
		c.log.Info("reply ended", "task", f.Task)
		c.endWatch(f.Task)
		if !c.play.end(f.Task) {
			c.replyDone(f.Task) // a reply without audio is over now
		}
		c.hook.run("turn_end", map[string]string{"TASK": f.Task})
	case voice.TypeStatus:
		if voice.ClassifyStatus(f.Payload) == voice.StatusKindError {
			c.log.Warn("the server reports an error for a turn; the turn is over", "task", f.Task, "status", string(f.Payload))
			if c.endWatch(f.Task) {
				c.turnFailed(f.Task, "the voice server reports an error: "+string(f.Payload))
			}
			if !c.play.end(f.Task) {
				c.replyDone(f.Task)
			}
		}
	case voice.TypeText:
		c.hook.run("text", map[string]string{"TASK": f.Task, "TEXT": string(f.Payload)})
	case voice.TypeEmoji:
		e, err := voice.ParseEmoji(f.Payload)
		if err == nil {
			c.log.Debug("emoji", "task", f.Task, "emoji", e.Emoji)
			c.hook.run("emoji", map[string]string{"TASK": f.Task, "EMOJI": e.Emoji})
		}
	case voice.TypeSpeak:
		c.hook.run("speak", map[string]string{"TASK": f.Task, "TEXT": string(f.Payload)})
	case voice.TypeListen:
		c.listenEvent(f)
	}
}

func (c *Conversation) listenEvent(f voice.Frame) {
	l, err := voice.ParseListen(f.Payload)
	if err != nil {
		c.log.Warn("unreadable LISTEN", "err", err)
		return
	}
	task := l.TaskID
	if task == "" {
		task = f.Task
	}
	switch l.State {
	case voice.ListenDetecting:
		// Speech on the turn being listened to: whatever still plays is over.
		c.mu.Lock()
		current := c.task == task
		if current {
			c.replyTask, c.spoken = task, task
		}
		c.mu.Unlock()
		if current {
			c.play.flush(task)
			c.syncActive() // a turn is heard: the media goes down
		}
	case voice.ListenStop:
		c.mu.Lock()
		if c.task != task {
			c.mu.Unlock()
			return
		}
		c.replyTask = task
		if c.o.AEC && c.wk == nil {
			c.mu.Unlock()
			c.listenStopped(task)
			c.listen() // keep listening on a new task while the reply plays
			c.mu.Lock()
			c.replyTask = task
			c.mu.Unlock()
			c.watchTurn(task, "the turn ended", true)
			return
		}
		c.talking, c.waitReply = false, true
		c.mu.Unlock()
		c.listenStopped(task)
		c.watchTurn(task, "the turn ended", true)
	}
}

// syncActive tells the mixer whether the assistant is active (a wake
// word starts a turn, a turn listens, its answer is awaited, or a reply
// plays): media is ducked, or paused, while it is. A VAD mode without the
// wake word listens all the time: its listening counts once the server
// hears speech on it, not while it listens to a silent room.
func (c *Conversation) syncActive() {
	c.mu.Lock()
	idle := c.autoListen() && c.task != c.owned && c.spoken != c.task
	on := (c.talking && !idle) || c.watch != nil
	c.mu.Unlock()
	c.o.Output.SetActive(on || c.wakePending() || c.play.busy())
}

// stopWaitLocked ends the microphone's pause for a reply; c.mu held.
func (c *Conversation) stopWaitLocked() { c.waitReply = false }

// replyDone is called when a reply is over: played out, ended without
// audio, failed, or given up on. Any reply that ends frees the speaker, so
// a microphone waiting for one listens again, even when the reply that
// ended was on another task than the turn's; only the reply to the
// owner's turn opens the follow-up window.
func (c *Conversation) replyDone(task string) {
	defer c.syncActive()
	c.mu.Lock()
	next := c.autoListen() && !c.o.AEC && c.waitReply && c.up
	owned := task != "" && task == c.owned
	if owned {
		c.owned = ""
	}
	c.mu.Unlock()
	if c.wk != nil {
		c.wakeReplyOver(owned)
		return
	}
	if next {
		c.log.Debug("reply over; listening again", "task", task)
		c.listen()
	}
}

func (c *Conversation) decode(p []byte) ([]int16, error) {
	if dec := c.codec.Load().dec; dec != nil {
		return dec.AppendDecodePayload(nil, p)
	}
	pcm := make([]int16, len(p)/2)
	for i := range pcm {
		pcm[i] = int16(uint16(p[2*i]) | uint16(p[2*i+1])<<8)
	}
	return pcm, nil
}
