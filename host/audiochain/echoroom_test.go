package audiochain

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/conversation"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// The echo room in virtual time: the daemon's microphone and speaker
// (devices with audio.backend echo_room, the capture chain audio.capture
// asks for), its conversation and the simulator's VAD, all in one process
// inside a synctest bubble. Each part takes the time it would on the
// device, and none waits for the machine: the figures are the same on an
// idle machine and a busy one. (The daemon's own binary in the same room,
// in real time, is cmd/agenthost's TestEchoRoomBargeInsThroughTheDaemon;
// its figures under load are BenchmarkEchoRoomBargeIns there.)

// TestEchoRoomBargeIns: the conversation in VAD mode with AEC, its
// microphone and speaker in the echo room (the reply comes back 6 dB down
// after 60 ms and a 150 ms reverberation) through the capture chain,
// streaming continuously to the simulator, whose VAD interrupts a reply at
// the first 20 ms of sound on the listening turn; in virtual time, so the
// figures are exact. With the canceller: 20 spoken replies and no near
// speech bring no barge-in; a person who says "stop" 800 ms into each of
// 20 replies interrupts every one, the first too (the canceller holds
// its output down while it learns the room, but lets near speech through),
// each answered "okay". Without the canceller, the speaker
// interrupts itself. The quiet room again (10 replies) with the speaker
// at 48 kHz stereo (the mixer mixes at it, the room hears it converted, the
// tap records it mono at 16 kHz): the reference is still what the room
// plays.
func TestEchoRoomBargeIns(t *testing.T) {
	if testing.Short() {
		t.Skip("several minutes of replies in virtual time: about a minute of CPU under -race")
	}
	clips := newRoomClips(t)
	cases := []struct {
		name      string
		cancel    bool
		interrupt bool
		stereo    bool
		replies   int
		check     func(t *testing.T, interrupted, bargeIns int)
	}{
		{"quiet room", true, false, false, 20, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted != 0 || bargeIns != 0 {
				t.Errorf("%d of 20 replies were interrupted, %d barge-ins in all, with nobody speaking: the speaker heard itself", interrupted, bargeIns)
			}
		}},
		{"stop during each reply", true, true, false, 20, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted != 20 || bargeIns != 20 {
				t.Errorf("%d of 20 replies were interrupted by the near-end \"stop\" (%d barge-ins in all), want 20: the first too, while the canceller learns the room", interrupted, bargeIns)
			}
		}},
		{"quiet room on a 48 kHz stereo speaker", true, false, true, 10, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted != 0 || bargeIns != 0 {
				t.Errorf("%d of 10 replies were interrupted, %d barge-ins in all, with nobody speaking: the speaker at 48 kHz stereo heard itself", interrupted, bargeIns)
			}
		}},
		{"quiet room without the canceller", false, false, false, 1, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted != 1 {
				t.Errorf("the reply was not interrupted without the canceller: the room does not test it (the echo is below the VAD's threshold)")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Each reply is the weather; a turn the simulator's VAD
				// heard (a barge-in) is answered "okay".
				r := newRoomRig(t, voicetest.Options{ReplyPCM: clips.okay, Pace: true, VADHang: 300 * time.Millisecond, ForgetAudio: true}, func(a *config.Audio) {
					a.EchoRoom.Delay, a.EchoRoom.Gain, a.EchoRoom.Noise = config.Duration(60*time.Millisecond), -6, -65
					a.Capture.EchoCancel = tc.cancel
					if tc.stereo {
						a.OutputRate, a.OutputChannels = 48000, 2
					}
					if tc.interrupt {
						a.EchoRoom.Interrupt, a.EchoRoom.InterruptAfter = clips.stopPath, config.Duration(800*time.Millisecond)
					}
				})
				interrupted := r.replies(t, clips.weather, tc.replies, !tc.cancel)
				bargeIns := len(r.detections())
				t.Logf("%d replies: %d interrupted, %d barge-ins in all (%d outside the replies)", tc.replies, interrupted, bargeIns, bargeIns-interrupted)
				tc.check(t, interrupted, bargeIns)
			})
		})
	}
}

// roomRig is a conversation in the echo room, talking to the simulator
// over an in-memory connection.
type roomRig struct {
	sim  *voicetest.Server
	conv *conversation.Conversation
	stop func()
}

// newRoomRig starts the rig inside the current synctest bubble (t is the
// bubble's, whose cleanup stops it); set changes the audio section (the
// room, the capture chain).
func newRoomRig(t *testing.T, so voicetest.Options, set func(a *config.Audio)) *roomRig {
	t.Helper()
	ln := newPipeListener()
	so.Listener = ln
	sim, err := voicetest.NewServer(so)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	a := cfg.Audio
	a.Backend = "echo_room"
	set(&a)
	openSource, openSink := Devices(a, slog.New(slog.DiscardHandler), nil, nil)
	lk := &pipeLink{queue: make(chan voice.Frame, 1<<12), done: make(chan struct{})}
	co := conversation.Options{Mode: "vad", AEC: true, Rate: a.Rate, Frame: a.Frame.D(),
		JitterLead: cfg.Conversation.JitterLead.D(), ReplyTimeout: cfg.Conversation.ReplyTimeout.D(),
		OpenSource: openSource, OpenSink: openSink}
	ctx, cancel := context.WithCancel(context.Background())
	mixed := make(chan struct{})
	if rate, ch := a.OutputFormat(); rate != a.Rate || ch != 1 {
		// A speaker of its own format: a mixer at it, as the daemon's.
		slot := mixer.NewSlotFormat(audio.Format{Rate: rate, Channels: ch})
		out := mixer.New(slot, mixer.Options{Rate: rate, Channels: ch, Frame: a.Frame.D()})
		co.Output, co.Attach = out, func(s audio.Sink) { slot.Set(s) }
		go func() { out.Run(ctx); close(mixed) }()
	} else {
		close(mixed)
	}
	conv, err := conversation.New(co, lk)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ran := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer close(ran)
		conv.Run(ctx, func() { close(ready) })
	}()
	<-ready
	lk.start(ln.dial(), conv)
	auth, err := voice.Auth{Token: "t", Params: []voice.Param{{Key: "mode", Value: "vad"}}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	lk.Send(voice.Frame{Type: voice.TypeAuth, Task: voice.SystemTask, Payload: auth})
	conv.LinkUp()
	r := &roomRig{sim: sim, conv: conv}
	r.stop = func() {
		cancel()
		<-ran
		<-mixed
		conv.LinkDown(nil)
		lk.close()
		sim.Close()
	}
	t.Cleanup(r.stop)
	r.waitFor(t, "the conversation to listen", 5*time.Second, func() bool {
		for _, rc := range sim.Received() {
			if rc.Frame.Type == voice.TypeListen && bytes.Contains(rc.Frame.Payload, []byte(`"state":"`+voice.ListenStart+`"`)) {
				return true
			}
		}
		return false
	})
	return r
}

// waitFor waits (in virtual time) until cond holds, at most d.
func (r *roomRig) waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	if err := r.waitUpTo(d, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (r *roomRig) waitUpTo(d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return r.sim.WaitFor(ctx, cond)
}

// detections are the LISTEN detecting frames the simulator sent: each is
// its VAD hearing speech on the listening turn, which interrupts a reply.
func (r *roomRig) detections() []string {
	var out []string
	for _, s := range r.sim.Sent() {
		if s.Frame.Type == voice.TypeListen && bytes.Contains(s.Frame.Payload, []byte(`"state":"`+voice.ListenDetecting+`"`)) {
			out = append(out, s.Frame.Task)
		}
	}
	return out
}

// ended reports whether the simulator finished streaming task's reply.
func (r *roomRig) ended(task string) bool {
	for _, s := range r.sim.Sent() {
		if s.Frame.Type == voice.TypeEnd && s.Frame.Task == task {
			return true
		}
	}
	return false
}

// replies has the simulator say pcm n times, each once the room is quiet
// again, and counts the replies a barge-in cut short (stopping at the
// first when stopEarly). Every turn the VAD heard is answered and over,
// and the room quiet (the speaker's buffer, the reverberation, the VAD's
// hang), before the next reply, so that its near-end speech starts a turn
// of its own.
func (r *roomRig) replies(t *testing.T, pcm []byte, n int, stopEarly bool) (interrupted int) {
	t.Helper()
	for i := range n {
		before := len(r.detections())
		task, err := r.sim.SayAudio("reply", pcm)
		if err != nil {
			t.Fatal(err)
		}
		ended := false
		r.waitFor(t, "the reply to end or be interrupted", 30*time.Second, func() bool {
			ended = r.ended(task)
			return ended || len(r.detections()) > before
		})
		if !ended {
			interrupted++
			if stopEarly {
				return interrupted
			}
		}
		for range 5 {
			heard := r.detections()
			if err := r.waitUpTo(15*time.Second, func() bool {
				for _, turn := range heard {
					if !r.ended(turn) {
						return false
					}
				}
				return true
			}); err != nil {
				t.Logf("after reply %d: an answer to a barge-in never ended (interrupted in turn); going on", i+1)
			}
			time.Sleep(time.Second)
			if len(r.detections()) == len(heard) {
				break
			}
		}
	}
	return interrupted
}

// pipeListener is an in-memory net.Listener: its connections are net.Pipe
// ends, whose reads and writes block in virtual time as a socket's would
// block in real time.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client's end of a new connection.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeLink stands in for host/link on an in-memory connection: frames
// sent are queued for one writer (a net.Pipe has no buffer, and the
// conversation sends from the goroutine that reads its frames), frames
// read go to the conversation.
type pipeLink struct {
	conn  net.Conn
	queue chan voice.Frame
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

var errPipeClosed = errors.New("the in-memory link is closed")

func (p *pipeLink) Send(f voice.Frame) error {
	f.Payload = append([]byte(nil), f.Payload...) // a Sender keeps no audio payload
	select {
	case p.queue <- f:
		return nil
	case <-p.done:
		return errPipeClosed
	}
}

func (p *pipeLink) start(conn net.Conn, conv *conversation.Conversation) {
	p.conn = conn
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		enc := voice.NewEncoder(conn)
		for {
			select {
			case f := <-p.queue:
				if enc.Encode(f) != nil {
					return
				}
			case <-p.done:
				return
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		dec := voice.NewDecoder(conn)
		for {
			f, err := dec.Decode()
			if err != nil {
				return
			}
			conv.Frame(f)
		}
	}()
}

func (p *pipeLink) close() {
	p.once.Do(func() { close(p.done) })
	if p.conn != nil {
		p.conn.Close()
	}
	p.wg.Wait()
}

// roomClips are the room's sounds, made (by espeak-ng) outside the bubble.
type roomClips struct {
	weather, okay []byte
	stopPath      string
}

func newRoomClips(t *testing.T) roomClips {
	t.Helper()
	reply := audiotest.Speech(t, "Here is the weather for today. It will be sunny and mild, with a light breeze from the west.")
	okay := audiotest.Speech(t, "Okay.")
	stop := audiotest.SpeechVoice(t, "en-gb+f3", "Stop.")
	c := roomClips{weather: audiotest.SamplesToBytes(reply.Samples[:reply.Words]), okay: audiotest.SamplesToBytes(okay.Samples[:okay.Words])}
	c.stopPath = t.TempDir() + "/stop.s16"
	if err := audiotest.WriteRaw(c.stopPath, stop.Samples[:stop.Words]); err != nil {
		t.Fatal(err)
	}
	return c
}
