package conversation

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/capture"
	"github.com/agenthost/agenthost/proto/voice"
)

// counter is a microphone whose sample i is loud(i) ? a value that says i
// (1000 + i%30000) : 0, so that a frame sent tells where it came from.
type counter struct {
	mu     sync.Mutex
	i      int64
	loud   func(i int64) bool
	closed atomic.Bool
}

func (c *counter) Read(p []int16) (int, error) {
	if c.closed.Load() {
		return 0, audio.ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range p {
		p[k] = 0
		if c.loud(c.i) {
			p[k] = int16(1000 + c.i%30000)
		}
		c.i++
	}
	return len(p), nil
}

func (c *counter) Close() error { c.closed.Store(true); return nil }

func (c *counter) read() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.i }

// index is the source index a sample of a counter stands for, -1 for silence.
func index(s int16, near int64) int64 {
	if s == 0 {
		return -1
	}
	v := int64(s) - 1000
	return near - (near-v)%30000 // the index ≡ v (mod 30000) at or below near
}

type wakeRig struct {
	*rig
	mic *counter
}

// newWakeRig runs a conversation with the wake word on over a counter
// microphone (paced) and a paced WAV speaker.
func newWakeRig(t *testing.T, o Options, loud func(int64) bool, fed *atomic.Int64) *wakeRig {
	t.Helper()
	mic := &counter{loud: loud}
	o.Wake.Feed = func(pos int64, pcm []int16, _ bool) { fed.Store(pos + int64(len(pcm))) }
	o.OpenSource = func(context.Context) (audio.Source, error) { return audio.Paced(mic, 16000), nil }
	r := newRig(t, o)
	eventually(t, "the microphone to be read", func() bool { return mic.read() > 0 })
	if o.MicMuted == nil {
		eventually(t, "the detector to be fed", func() bool { return fed.Load() > 0 })
	}
	return &wakeRig{rig: r, mic: mic}
}

func audioFrames(fs []voice.Frame) []voice.Frame {
	var out []voice.Frame
	for _, f := range fs {
		if f.Type == voice.TypeAudio {
			out = append(out, f)
		}
	}
	return out
}

// TestWakeTurnPushToTalk: with the wake word on, nothing is sent until a
// detection; then the turn starts with the pre-roll (whole frames from
// PreRoll before the detection's position, nothing older), streams on,
// and is ended by the local end of speech with END.
func TestWakeTurnPushToTalk(t *testing.T) {
	speechEnd := int64(6 * 16000) // the "command" ends 6 s into the stream
	var fed atomic.Int64
	r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{PreRoll: 300 * time.Millisecond}},
		func(i int64) bool { return i < speechEnd }, &fed)
	r.c.LinkUp()
	eventually(t, "3 s of audio", func() bool { return r.mic.read() > 3*16000 })
	if n := len(r.out.all()); n != 0 {
		t.Fatalf("%d frames were sent before the wake word", n)
	}
	// The detector saw the phrase end 0.5 s ago.
	end := fed.Load() - 8000
	r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: end})
	eventually(t, "the turn's END", func() bool {
		fs := r.out.all()
		return len(fs) > 0 && fs[len(fs)-1].Type == voice.TypeEnd
	})
	fs := r.out.all()
	task := fs[0].Task
	for i, f := range fs {
		if f.Task != task || f.Seq != i {
			t.Fatalf("frame %d is %v", i, f)
		}
	}
	frames := audioFrames(fs)
	first := audiotest.BytesToSamples(frames[0].Payload)
	// Stream positions are source indexes + 16000 (the gap the conversation
	// leaves for the detector when a microphone opens).
	got := index(first[0], end-16000) + 16000
	from := end - 4800
	if got > from || got <= from-960 {
		t.Fatalf("the turn's audio starts at %d; the detection was at %d, so want within a frame before %d", got, end, from)
	}
	prev := got - 16000 - 1 // source indexes
	for _, f := range frames {
		for _, s := range audiotest.BytesToSamples(f.Payload) {
			if s == 0 {
				continue
			}
			if want := int16(1000 + (prev+1)%30000); s != want {
				t.Fatalf("the turn's audio is not contiguous: %d after index %d, want %d", s, prev, want)
			}
			prev++
		}
	}
	if prev != speechEnd-1 {
		t.Fatalf("the turn's audio ends at %d; the speech ended at %d", prev, speechEnd-1)
	}
	t.Logf("sent %d frames from %d (detection at %d), ended by the end of speech", len(frames), got, end)
	// A second detection of audio from inside the turn is stale.
	r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: end + 16000})
	time.Sleep(300 * time.Millisecond)
	if n := len(r.out.all()); n != len(fs) {
		t.Fatalf("a stale detection started a turn: %d frames", n-len(fs))
	}
}

// TestWakeVADModeWaitsForTheWakeWord: in VAD mode with the wake word, no
// LISTEN cycle starts by itself (at link up, after a reply); a detection
// starts one with its pre-roll; after the reply the speaker waits for the
// wake word again, or, with a follow-up window, for speech.
func TestWakeVADModeWaitsForTheWakeWord(t *testing.T) {
	for _, followUp := range []time.Duration{0, 3 * time.Second} {
		t.Run("follow_up="+followUp.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var loudFrom atomic.Int64
				loudFrom.Store(1 << 40)
				var fed atomic.Int64
				r := newWakeRig(t, Options{Mode: "vad", Wake: &WakeOptions{FollowUp: followUp}},
					func(i int64) bool { return i >= loudFrom.Load() }, &fed)
				r.c.LinkUp()
				time.Sleep(500 * time.Millisecond)
				if n := len(r.out.all()); n != 0 {
					t.Fatalf("%d frames sent before the wake word", n)
				}
				r.c.Wake(Detection{Model: "alexa", Score: 0.8, End: fed.Load()})
				eventually(t, "LISTEN start and audio", func() bool { return len(audioFrames(r.out.all())) >= 3 })
				a := r.out.all()[0]
				if a.Type != voice.TypeListen || listenOf(t, a).State != voice.ListenStart {
					t.Fatalf("first frame %v", a)
				}
				r.c.Frame(voice.ListenFrame(a.Task, voice.ListenStop, "vad"))
				r.c.Frame(reply(a.Task, 1, 180*time.Millisecond))
				r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: a.Task, Seq: 2})
				n := len(r.out.all())
				eventually(t, "the reply to play", func() bool { return r.sink.count() >= 3 })
				time.Sleep(time.Second)
				if followUp == 0 {
					if m := len(r.out.all()); m > n+1 { // one frame may have been on its way
						t.Fatalf("%d frames sent after the reply without a wake word", m-n)
					}
					return
				}
				// Speech in the follow-up window starts a turn without the wake word.
				loudFrom.Store(r.mic.read())
				eventually(t, "a follow-up turn", func() bool {
					for _, f := range r.out.all()[n:] {
						if f.Type == voice.TypeListen && f.Task != a.Task && listenOf(t, f).State == voice.ListenStart {
							return true
						}
					}
					return false
				})
			})
		})
	}
}

// TestWakeEarconAndHook: a detection plays the wake earcon and runs the
// wake hook with the model's name.
func TestWakeEarconAndHook(t *testing.T) {
	dir := t.TempDir()
	earcon := filepath.Join(dir, "ding.s16")
	if err := audiotest.WriteRaw(earcon, audiotest.Tone(1500, 16000, 60*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hook.txt")
	var fed atomic.Int64
	r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{Earcon: earcon},
		Hooks: map[string]string{"wake": `printf '%s|%s' "$AGENTHOST_EVENT" "$AGENTHOST_MODEL" > ` + out}},
		func(int64) bool { return false }, &fed)
	r.c.LinkUp()
	r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: fed.Load()})
	eventually(t, "the wake hook", func() bool { b, _ := readFile(out); return b == "wake|hey_jarvis" })
	eventually(t, "the earcon", func() bool {
		for _, w := range r.sink.since(0) {
			if f := audiotest.PeakFrequency(w, 16000, 500, 3000, 10); loud(w) && f > 1450 && f < 1550 {
				return true
			}
		}
		return false
	})
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// TestWakeDuringAReplyInterruptsIt: the wake phrase said while a reply
// plays stops the reply at once and starts a new turn.
func TestWakeDuringAReplyInterruptsIt(t *testing.T) {
	var fed atomic.Int64
	r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{}}, func(int64) bool { return false }, &fed)
	r.c.LinkUp()
	playingReply(t, r.rig)
	r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: fed.Load()})
	eventually(t, "a new turn's audio", func() bool { return len(audioFrames(r.out.all())) >= 2 })
	if st := r.c.Stats(); st.BargeIns != 1 {
		t.Fatalf("barge-ins %d, want the reply cut short once", st.BargeIns)
	}
}

// TestMutedMicrophoneStartsNoWakeTurn: while the microphone is muted the
// detector is fed nothing and a detection starts no turn, not even one
// that arrived just before the mute and is taken after it ends.
func TestMutedMicrophoneStartsNoWakeTurn(t *testing.T) {
	var fed atomic.Int64
	var muted atomic.Bool
	muted.Store(true)
	r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{}, MicMuted: muted.Load}, func(int64) bool { return true }, &fed)
	r.c.LinkUp()
	before := r.mic.read()
	eventually(t, "the microphone to be read while muted", func() bool { return r.mic.read() > before+16000 })
	if n := fed.Load(); n != 0 {
		t.Fatalf("the detector was fed up to sample %d while the microphone was muted", n)
	}
	r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: 0})
	time.Sleep(300 * time.Millisecond)
	muted.Store(false)
	eventually(t, "the detector to be fed again", func() bool { return fed.Load() > 0 })
	r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: 0}) // the detector's late word on audio from before
	time.Sleep(500 * time.Millisecond)
	if fs := r.out.all(); len(fs) != 0 {
		t.Fatalf("%d frames sent after a detection taken while muted (first %v), want none", len(fs), fs[0].Type)
	}
}

// TestAWakeThatStartsNoTurnLeavesTheMediaAlone: a detection ducks the media
// at once (Wake), so one that the microphone never takes must not leave
// it ducked: one dropped because a new stream began (a reopened
// microphone, an unmute), one that comes while the microphone is muted,
// and one that comes after the microphone failed.
func TestAWakeThatStartsNoTurnLeavesTheMediaAlone(t *testing.T) {
	t.Run("new stream", func(t *testing.T) {
		c, err := New(Options{Mode: "manual", Rate: 16000, Frame: 20 * time.Millisecond, Wake: &WakeOptions{}}, &sent{})
		if err != nil {
			t.Fatal(err)
		}
		c.wakeReset() // the microphone opens
		c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: 1})
		c.wakeReset() // the microphone is on again after a mute, before its next frame
		if c.o.Output.Active() {
			t.Fatal("no turn started and none will, yet the mixer still ducks the media (active)")
		}
	})
	t.Run("muted", func(t *testing.T) {
		var fed atomic.Int64
		var muted atomic.Bool
		muted.Store(true)
		r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{}, MicMuted: muted.Load}, func(int64) bool { return true }, &fed)
		r.c.LinkUp()
		r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: 0}) // the detector's late word on audio from before the mute
		if r.c.o.Output.Active() {
			t.Fatal("a detection while the microphone is muted ducks the media until the unmute")
		}
	})
	t.Run("failed microphone", func(t *testing.T) {
		var fed atomic.Int64
		r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{}}, func(int64) bool { return true }, &fed)
		r.c.LinkUp()
		r.mic.Close() // the microphone fails: capture ends
		eventually(t, "the capture to end", func() bool { return !r.c.hasMic() })
		r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: fed.Load()}) // on its last audio
		if r.c.o.Output.Active() {
			t.Fatal("a detection after the microphone failed ducks the media until it is opened again")
		}
	})
}

// TestWakePreRollZeroSendsNothingFromBeforeTheDetection:
// conversation.wake_word.pre_roll may be 0 (0…1s), which the owner sets to
// send nothing from before the point of detection; the conversation must
// not put its own 300 ms back (the configuration's default is 300 ms).
func TestWakePreRollZeroSendsNothingFromBeforeTheDetection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fed atomic.Int64
		r := newWakeRig(t, Options{Mode: "manual", Wake: &WakeOptions{PreRoll: 0}}, func(int64) bool { return true }, &fed)
		r.c.LinkUp()
		time.Sleep(time.Second)
		end := fed.Load() - 8000 // the phrase ended 0.5 s ago
		r.c.Wake(Detection{Model: "hey_jarvis", Score: 0.9, End: end})
		eventually(t, "the turn's audio", func() bool { return len(audioFrames(r.out.all())) > 0 })
		first := audiotest.BytesToSamples(audioFrames(r.out.all())[0].Payload)
		// Stream positions are source indexes + 16000 (the gap left when the
		// microphone opens); a pre-roll starts at a whole frame (960).
		got := index(first[0], end-16000) + 16000
		if got <= end-960 {
			t.Fatalf("with pre_roll 0 the turn's audio starts at %d, %d ms before the detection at %d", got, (end-got)/16, end)
		}
	})
}

// ownSoundStage takes the frames of a counter microphone's silence for the
// speaker's own sound alone (a test's stand-in for the echo canceller's
// verdict, which audio/capture tests).
type ownSoundStage struct{}

func (ownSoundStage) Name() string             { return "own" }
func (ownSoundStage) Process(f *capture.Frame) { f.OwnSound = f.PCM[0] == 0 }
func (ownSoundStage) Close() error             { return nil }

// TestTheDetectorIsToldWhatTheChainTookForTheSpeakersOwnSound: frames the
// capture chain took for the speaker's own sound alone reach the detector
// marked so, and the others unmarked.
func TestTheDetectorIsToldWhatTheChainTookForTheSpeakersOwnSound(t *testing.T) {
	mic := &counter{loud: func(i int64) bool { return i/9600%2 == 0 }} // ten frames loud, ten silent
	var own, voiced atomic.Int64
	o := Options{Mode: "manual", Wake: &WakeOptions{Feed: func(pos int64, pcm []int16, ownSound bool) {
		if ownSound != (pcm[0] == 0) {
			t.Errorf("a frame starting with %d was fed with ownSound %v", pcm[0], ownSound)
		}
		if ownSound {
			own.Add(1)
		} else {
			voiced.Add(1)
		}
	}}}
	o.OpenSource = func(context.Context) (audio.Source, error) {
		return capture.NewChain(audio.Paced(mic, 16000), 16000, ownSoundStage{})
	}
	newRig(t, o)
	eventually(t, "frames of both kinds", func() bool { return own.Load() > 2 && voiced.Load() > 2 })
}
