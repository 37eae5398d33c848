package echoroom

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
)

// The room takes time from the clock; these tests run it in virtual time
// (testing/synctest), so what it renders is the same however busy the
// machine is.

// play writes pcm to the room's speaker in 60 ms writes, in the room's time.
func play(t *testing.T, sink audio.Sink, pcm []int16) {
	for i := 0; i < len(pcm); i += 960 {
		if _, err := sink.Write(pcm[i:min(len(pcm), i+960)]); err != nil {
			t.Error(err)
			return
		}
	}
}

func record(t *testing.T, src audio.Source, d time.Duration) []int16 {
	out := make([]int16, int(d.Seconds()*16000))
	for i := 0; i < len(out); i += 160 {
		if _, err := audio.ReadFull(src, out[i:min(len(out), i+160)]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestLiveEchoesWhatItPlays(t *testing.T) { synctest.Test(t, testLiveEchoesWhatItPlays) }

func testLiveEchoesWhatItPlays(t *testing.T) {
	room := Room{Delay: 80 * time.Millisecond, Gain: -6, Reverb: 50 * time.Millisecond, Noise: -90, Seed: 3}
	l, err := NewLive(room, Script{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	src, sink := l.Source(), l.Sink()
	defer src.Close()
	defer sink.Close()
	if got := sink.(interface{ Latency() time.Duration }).Latency(); got != Buffer {
		t.Fatalf("the speaker's latency = %v, want %v", got, Buffer)
	}
	quiet := record(t, src, 200*time.Millisecond)
	go play(t, sink, audiotest.Tone(500, 16000, time.Second))
	heard := record(t, src, 1200*time.Millisecond)
	if a := audiotest.Goertzel(quiet, 500, 16000); a > 0.001 {
		t.Fatalf("500 Hz at %.4f in the room before anything played", a)
	}
	// The tone (0.5 full scale) comes back about 6 dB down, give or take the
	// room's response at 500 Hz.
	a := audiotest.Goertzel(heard[4800:12800], 500, 16000)
	if a < 0.05 || a > 0.6 {
		t.Fatalf("500 Hz came back at %.3f of full scale, want about 0.25", a)
	}
}

func TestLiveSaysItsScript(t *testing.T) { synctest.Test(t, testLiveSaysItsScript) }

func testLiveSaysItsScript(t *testing.T) {
	word := audiotest.ToneAmp(1000, 16000, 200*time.Millisecond, 0.3)
	l, err := NewLive(Room{Gain: -60, Noise: -90}, Script{Speech: word, SpeechAt: 100 * time.Millisecond, Interrupt: word, InterruptAfter: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	src, sink := l.Source(), l.Sink()
	go play(t, sink, audiotest.ToneAmp(300, 16000, 500*time.Millisecond, 0.01)) // quiet, and -60 dB in this room
	got := record(t, src, 1200*time.Millisecond)
	on := 0
	for i := 0; i+160 <= len(got); i += 160 {
		if audiotest.RMS(got[i:i+160]) > 0.1 {
			on++
		}
	}
	// Two 200 ms words: the scripted speech and the interruption of the run.
	if on < 36 || on > 44 {
		t.Fatalf("%d frames of speech, want about 40 (two 200 ms words)", on)
	}
}

func TestRoomValidate(t *testing.T) {
	for _, r := range []Room{{Delay: time.Second}, {Gain: 10}, {Clip: 2}, {Noise: 3}, {Reverb: 2 * time.Second}} {
		if r.Validate() == nil {
			t.Errorf("%+v accepted", r)
		}
		if _, err := NewLive(r, Script{}); err == nil {
			t.Errorf("NewLive(%+v) accepted", r)
		}
	}
}
