package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestAVoiceTurnDucksTheMusicAndBringsItBack: through the real daemon (file
// backend) and the simulator, music (a 300 Hz tone at 44.1 kHz stereo, from
// the testkit's fake sound source, on the speaker's mixer) plays loud, is
// turned down by audio.mix.duck_db while a push-to-talk turn listens and its
// reply plays, and comes back after it, in what the speaker's file holds.
func TestAVoiceTurnDucksTheMusicAndBringsItBack(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	dir := t.TempDir()
	out, mic := filepath.Join(dir, "speaker.wav"), filepath.Join(dir, "mic.s16")
	if err := audiotest.WriteRaw(mic, audiotest.Silence(16000, time.Second)); err != nil {
		t.Fatal(err)
	}
	d := startHost(t, sim, "audio.backend=file", "audio.input_file="+mic, "audio.output_file="+out, "device.volume=100", "server.params.mode=manual")
	ready(t, sim, 1)
	if res := call(t, sim, "testkit_play", `{"hz":300,"seconds":8,"class":"media"}`); !res.Success {
		t.Fatalf("testkit_play: %+v", res)
	}
	d.waitPlayed("media", 1)
	if o, err := d.cli("talk", "start"); err != nil {
		t.Fatalf("talk start: %v %s", err, o)
	}
	d.waitPlayed("media", 2) // a second of listening
	o, err := d.cli("talk", "stop")
	if err != nil {
		t.Fatalf("talk stop: %v %s", err, o)
	}
	task := sentOnTask.FindStringSubmatch(o)
	if task == nil {
		t.Fatalf("talk stop: %s", o)
	}
	waitFor(t, sim, "the reply", func() bool { return replyEnded(sim, 1, task[1]) })
	d.waitPlayed("voice", 0.1)
	d.waitPlayed("media", 8)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	s, _, _, err := audiotest.ReadWAV(out)
	if err != nil {
		t.Fatal(err)
	}
	// The music's level, 20 ms at a time (six periods of 300 Hz; a Hann
	// window keeps the 880 Hz reply out of it).
	const w = 320
	var levels []float64
	for i := 0; i+w <= len(s); i += w {
		levels = append(levels, level(s[i:i+w], 300))
	}
	full := 0.25 * math.MaxInt16
	db := func(l float64) float64 { return 20 * math.Log10(l/full) }
	var loudStart, ducked, loudAfter int
	seenDucked := false
	for _, l := range levels {
		switch {
		case math.Abs(db(l)) < 1:
			if seenDucked {
				loudAfter++
			} else {
				loudStart++
			}
		case math.Abs(db(l)+20) < 1.5:
			ducked++
			seenDucked = true
		}
	}
	t.Logf("%d windows of 20 ms: %d loud, then %d ducked, then %d loud", len(levels), loudStart, ducked, loudAfter)
	if loudStart < 40 || ducked < 45 || loudAfter < 40 {
		var b strings.Builder
		for _, l := range levels {
			fmt.Fprintf(&b, " %.0f", db(l))
		}
		t.Fatalf("want the music loud (≥ 0.8 s), ducked by 20 dB while the turn (≥ 0.9 s), loud again (≥ 0.8 s); levels in dB:%s", b.String())
	}
}

// level is the amplitude of the hz component of p (16 kHz), Hann-windowed.
func level(p []int16, hz float64) float64 {
	var re, im, wsum float64
	for i, v := range p {
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(len(p)))
		a := 2 * math.Pi * hz * float64(i) / 16000
		re += w * float64(v) * math.Cos(a)
		im -= w * float64(v) * math.Sin(a)
		wsum += w
	}
	return 2 * math.Hypot(re, im) / wsum
}
