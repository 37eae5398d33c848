package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sent records what the conversation sends; it stands in for the link.
type sent struct {
	mu     sync.Mutex
	frames []voice.Frame
	down   bool // Send fails, as the link's does while it is down
}

func (s *sent) Send(f voice.Frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("the link is down")
	}
	if f.Type == voice.TypeAudio { // a Sender keeps no audio payload (see Sender)
		f.Payload = append([]byte(nil), f.Payload...)
	}
	s.frames = append(s.frames, f)
	return nil
}

func (s *sent) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *sent) all() []voice.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]voice.Frame(nil), s.frames...)
}

// tap counts what reaches a real (paced WAV) sink, write by write.
type tap struct {
	inner  audio.Sink
	mu     sync.Mutex
	writes [][]int16
}

func (t *tap) Write(p []int16) (int, error) {
	t.mu.Lock()
	t.writes = append(t.writes, append([]int16(nil), p...))
	t.mu.Unlock()
	return t.inner.Write(p)
}
func (t *tap) Close() error { return t.inner.Close() }
func (t *tap) count() int   { t.mu.Lock(); defer t.mu.Unlock(); return len(t.writes) }
func (t *tap) since(i int) [][]int16 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]int16(nil), t.writes[i:]...)
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type rig struct {
	c    *Conversation
	out  *sent
	sink *tap
	stop func()
}

// newRig runs a conversation with a looping silent microphone file (or
// o.OpenSource) and a paced WAV speaker, both real audio backends.
func newRig(t testing.TB, o Options) *rig {
	t.Helper()
	dir := t.TempDir()
	if o.OpenSource == nil {
		mic := filepath.Join(dir, "mic.s16")
		if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
			t.Fatal(err)
		}
		o.OpenSource = func(context.Context) (audio.Source, error) {
			src, err := audio.OpenFileSource(mic, audio.Options{Loop: true})
			if err != nil {
				return nil, err
			}
			return audio.Paced(src, 16000), nil
		}
	}
	r := &rig{out: &sent{}}
	o.OpenSink = func(context.Context) (audio.Sink, error) {
		w, err := audio.CreateWAVSink(filepath.Join(dir, "speaker.wav"), 16000)
		if err != nil {
			return nil, err
		}
		r.sink = &tap{inner: audio.PacedSink(w, 16000)}
		return r.sink, nil
	}
	c, err := New(o, r.out)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, func() {}); close(done) }()
	r.stop = func() { cancel(); <-done }
	t.Cleanup(r.stop)
	eventually(t, "the devices to open", func() bool { return c.hasMic() && r.sinkReady() })
	return r
}

func (r *rig) sinkReady() bool {
	r.c.play.mu.Lock()
	defer r.c.play.mu.Unlock()
	return r.c.play.speaker
}

func reply(task string, seq int, d time.Duration) voice.Frame {
	return voice.Frame{Type: voice.TypeAudio, Task: task, Seq: seq, Payload: audiotest.SamplesToBytes(audiotest.Tone(880, 16000, d))}
}

// playingReply asks a question and has 3 s of its reply arrive; it
// returns the reply's task once the speaker plays it.
func playingReply(t testing.TB, r *rig) string {
	t.Helper()
	task, _, err := r.c.Say("a question")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		r.c.Frame(reply(task, i+1, 60*time.Millisecond))
	}
	eventually(t, "the reply to play", func() bool { return r.sink.count() >= 5 })
	return task
}

func loud(w []int16) bool { return audiotest.RMS(w) > 0.01 }

func TestBargeInStopsTheReplyWithinOneFrame(t *testing.T) {
	r := newRig(t, Options{Mode: "manual"})
	r.c.LinkUp()
	replyA, _, err := r.c.Say("hello")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 { // 3 s of an 880 Hz reply
		r.c.Frame(reply(replyA, i+1, 60*time.Millisecond))
	}
	eventually(t, "the reply to play", func() bool { return r.sink.count() >= 5 })
	task, err := r.c.TalkStart() // the new turn
	if err != nil {
		t.Fatal(err)
	}
	mark := r.sink.count()
	r.c.Frame(reply(replyA, 51, 60*time.Millisecond)) // a late frame of the interrupted turn
	// The new turn's reply (440 Hz) plays next; whatever of A still came out
	// did so before it.
	for seq := 1; seq <= 3; seq++ {
		r.c.Frame(voice.Frame{Type: voice.TypeAudio, Task: task, Seq: seq, Payload: audiotest.SamplesToBytes(audiotest.Tone(440, 16000, 60*time.Millisecond))})
	}
	var leaked int
	eventually(t, "the new turn's reply", func() bool {
		leaked = 0
		for _, w := range r.sink.since(mark) {
			if !loud(w) {
				continue
			}
			if f := audiotest.PeakFrequency(w, 16000, 200, 2000, 10); f > 420 && f < 460 {
				return true
			}
			leaked += len(w)
		}
		return false
	})
	if leaked > 960 {
		t.Fatalf("%d samples of the interrupted reply played after the barge-in; allowed one 60 ms frame (960)", leaked)
	}
}

func TestPushToTalk(t *testing.T) {
	r := newRig(t, Options{Mode: "manual"})
	if _, err := r.c.TalkStart(); err == nil {
		t.Fatal("a turn started while the link is down")
	}
	r.c.LinkUp()
	task, err := r.c.TalkStart()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "audio frames", func() bool { return len(r.out.all()) >= 3 })
	if _, err := r.c.TalkStop(); err != nil {
		t.Fatal(err)
	}
	fs := r.out.all()
	last := fs[len(fs)-1]
	if last.Type != voice.TypeEnd || last.Task != task {
		t.Fatalf("last frame %v", last)
	}
	for i, f := range fs {
		if f.Task != task || f.Seq != i {
			t.Fatalf("frame %d is %v: want task %s seq %d", i, f, task, i)
		}
		if f.Type == voice.TypeAudio && len(f.Payload) != 1920 {
			t.Fatalf("audio frame of %d bytes", len(f.Payload))
		}
	}
	if _, err := r.c.TalkStop(); err == nil {
		t.Fatal("a second stop was accepted")
	}
}

func listenOf(t *testing.T, f voice.Frame) voice.Listen {
	l, err := voice.ParseListen(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestVADWithoutEchoCancellation(t *testing.T) {
	r := newRig(t, Options{Mode: "vad"})
	r.c.LinkUp()
	eventually(t, "LISTEN start and audio", func() bool { return len(r.out.all()) >= 3 })
	first := r.out.all()[0]
	if first.Type != voice.TypeListen || listenOf(t, first).State != voice.ListenStart {
		t.Fatalf("first frame %v", first)
	}
	a := first.Task
	r.c.Frame(voice.ListenFrame(a, voice.ListenStop, "vad"))
	n := len(r.out.all())
	r.c.Frame(reply(a, 1, 180*time.Millisecond))
	r.c.Frame(voice.Frame{Type: voice.TypeEnd, Task: a, Seq: 2})
	next := -1
	eventually(t, "a new LISTEN cycle after the reply played", func() bool {
		for k, f := range r.out.all() {
			if k >= n && f.Type == voice.TypeListen && f.Task != a {
				next = k
				return true
			}
		}
		return false
	})
	var streamed int
	for _, f := range r.out.all()[n:next] {
		if f.Type == voice.TypeAudio && f.Task == a {
			streamed++
		}
	}
	if streamed > 1 { // one frame may have been on its way
		t.Fatalf("the microphone sent %d frames on %s between LISTEN stop and the next cycle", streamed, a)
	}
	if r.sink.count() < 3 {
		t.Fatal("the reply did not play before listening again")
	}
}

func TestVADWithEchoCancellationKeepsListening(t *testing.T) {
	r := newRig(t, Options{Mode: "vad", AEC: true})
	r.c.LinkUp()
	eventually(t, "LISTEN start", func() bool { return len(r.out.all()) >= 1 })
	a := r.out.all()[0].Task
	r.c.Frame(voice.ListenFrame(a, voice.ListenStop, "vad"))
	eventually(t, "LISTEN start on a new task, and its audio", func() bool {
		var b string
		for _, f := range r.out.all() {
			if f.Type == voice.TypeListen && f.Task != a {
				b = f.Task
			}
			if b != "" && f.Type == voice.TypeAudio && f.Task == b {
				return true
			}
		}
		return false
	})
	// A's reply still plays while B listens.
	r.c.Frame(reply(a, 1, 240*time.Millisecond))
	eventually(t, "A's reply to play", func() bool { return r.sink.count() >= 2 })
}

func TestHooksAndEarcons(t *testing.T) {
	dir := t.TempDir()
	earcon := filepath.Join(dir, "beep.s16")
	if err := audiotest.WriteRaw(earcon, audiotest.Tone(1500, 16000, 60*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hook.txt")
	r := newRig(t, Options{Mode: "manual", EarconStart: earcon,
		Hooks: map[string]string{"text": `printf '%s|%s' "$AGENTHOST_EVENT" "$AGENTHOST_TEXT" > ` + out}})
	r.c.Frame(voice.Frame{Type: voice.TypeText, Task: "t1", Payload: []byte("it is noon")})
	eventually(t, "the text hook", func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == "text|it is noon"
	})
	r.c.LinkUp()
	if _, err := r.c.TalkStart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the earcon", func() bool {
		for _, w := range r.sink.since(0) {
			if f := audiotest.PeakFrequency(w, 16000, 500, 3000, 10); loud(w) && f > 1450 && f < 1550 {
				return true
			}
		}
		return false
	})
	if _, err := New(Options{EarconEnd: filepath.Join(dir, "missing.wav")}, &sent{}); err == nil || !strings.Contains(err.Error(), "listen_end") {
		t.Fatalf("a missing earcon: %v", err)
	}
}

// TestCheckFindsAHeldLock: the watchdog's check fails while the
// conversation's or the player's lock is never released.
func TestCheckFindsAHeldLock(t *testing.T) {
	c, err := New(Options{}, &sent{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mu := range []*sync.Mutex{&c.mu, &c.play.mu} {
		mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if err := c.Check(ctx); err == nil {
			t.Fatal("check passed with a lock held")
		}
		cancel()
		mu.Unlock()
		if err := c.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
