package capture

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/echoroom"
)

// recorder is a tap: it keeps a copy of every frame it sees.
type recorder struct {
	mu  sync.Mutex
	pcm []int16
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Process(f *Frame) {
	r.mu.Lock()
	r.pcm = append(r.pcm, f.PCM...)
	r.mu.Unlock()
}
func (r *recorder) Close() error { return nil }

// TestLiveRoomThroughTheChain: with the devices taking their time (the
// live room, in virtual time: the figure does not depend on how busy the
// machine is), the speaker's samples reach the canceller through TapSink
// and the Reference, aligned by the latencies the room's devices report,
// and the chain cancels the echo the room's microphone hears (a room with
// 120 ms more delay than the devices report, found by the delay search).
func TestLiveRoomThroughTheChain(t *testing.T) {
	far, _ := voices(t)
	synctest.Test(t, func(t *testing.T) { liveRoomThroughTheChain(t, far[:10*rate]) })
}

func liveRoomThroughTheChain(t *testing.T, far []int16) {
	room := linearRoom(120 * time.Millisecond)
	room.Reverb = 60 * time.Millisecond
	l, err := echoroom.NewLive(room, echoroom.Script{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ref := NewReference(rate)
	e, err := NewEcho(ref, EchoOptions{MaxDelay: DefaultMaxDelay})
	if err != nil {
		t.Fatal(err)
	}
	raw, done := &recorder{}, &recorder{}
	chain, err := NewChain(l.Source(), rate, raw, e, done)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	sink := TapSink(l.Sink(), ref, rate, 20*time.Millisecond)
	defer sink.Close()
	go func() {
		for i := 0; i < len(far); i += 960 {
			if _, err := sink.Write(far[i:min(len(far), i+960)]); err != nil {
				return
			}
		}
	}()
	buf := make([]int16, 960)
	for n := 0; n < len(far)+rate/2; n += len(buf) {
		if _, err := audio.ReadFull(chain, buf); err != nil {
			t.Fatal(err)
		}
	}
	from := 5 * rate
	erle := echoroom.ERLE(raw.pcm, done.pcm, from)
	t.Logf("ERLE from 5 s on: %.1f dB (delay found: %v)", erle, e.Delay())
	if erle < 20 {
		t.Fatalf("ERLE from 5 s on = %.1f dB, want ≥ 20 dB: the reference is not aligned with the microphone", erle)
	}
}
