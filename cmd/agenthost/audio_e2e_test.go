package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
	"github.com/agenthost/agenthost/proto/voice/voicetest/simopus"
)

// newSimOpus is the simulator's Opus codec, from the same libopus binding the host uses.
func newSimOpus(t *testing.T) voicetest.OpusCodec {
	c, err := simopus.New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVoiceTurnThroughPortAudio: espeak-ng speech is captured by real
// PortAudio through a headless ALSA config, streamed by the host in a VAD
// LISTEN cycle, ended by the simulator's VAD, and the reply tone comes out of
// the ALSA playback file.
func TestVoiceTurnThroughPortAudio(t *testing.T) {
	for _, codec := range []string{"pcm", "opus"} {
		t.Run(codec, func(t *testing.T) {
			clip := audiotest.Speech(t, "Hello speaker. What time is it now?")
			dir := t.TempDir()
			played := filepath.Join(dir, "played.s16")
			conf, err := audiotest.WriteHeadlessALSAConfig(dir, clip.Path, played)
			if err != nil {
				t.Fatal(err)
			}
			o := voicetest.Options{ToneHz: 880, ReplyDuration: time.Second, Pace: true, VADHang: 500 * time.Millisecond}
			if codec == "opus" {
				o.Opus = newSimOpus(t)
			}
			sim := newSim(t, o)
			d := startHostEnv(t, sim, []string{"ALSA_CONFIG_PATH=" + conf},
				"audio.backend=portaudio", "audio.pace=true", "server.params.mode=vad",
				"server.params.format="+codec, "server.params.input_audio_format="+codec)
			// The simulator's VAD ends the first turn and its reply plays.
			var task string
			waitFor(t, sim, "the end of the first reply", func() bool {
				for _, r := range sim.Sent() {
					if r.Frame.Type == voice.TypeListen && bytes.Contains(r.Frame.Payload, []byte(`"stop"`)) {
						task = r.Frame.Task
					}
					if task != "" && r.Frame.Type == voice.TypeEnd && r.Frame.Task == task {
						return true
					}
				}
				return false
			})
			got := audiotest.BytesToSamples(sim.Audio(task))
			if len(got) < clip.Words/2 {
				t.Fatalf("the simulator got %d samples of a %d-sample utterance", len(got), clip.Words)
			}
			if codec == "pcm" {
				// Bit-exact: what arrived is a contiguous run of the spoken file.
				if !containsRun(clip.Samples, got) {
					t.Fatalf("the %d samples received are not a run of the captured file", len(got))
				}
			} else {
				best := correlateRun(clip.Samples, got)
				t.Logf("opus: correlation with the spoken file %.3f", best)
				if best < 0.7 {
					t.Fatalf("decoded audio correlates %.3f with the input, want ≥ 0.7", best)
				}
			}
			// The reply tone reaches the speaker (the ALSA playback file).
			deadline := time.Now().Add(15 * time.Second)
			for {
				b, _ := os.ReadFile(played)
				s := audiotest.BytesToSamples(b)
				if toneIn(s, 880) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no 880 Hz tone in the %d samples played; host log:\n%s", len(s), d.log)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// correlateRun is the best normalized cross-correlation of got, a run of
// all (up to a codec's changes), with all: the run's offset is found on
// both signals pooled by 8, then the best lag within 16 samples of it. A
// search of every lag at full rate took minutes of CPU under -race on a busy
// machine (some 6·10⁹ steps for a 3 s clip).
func correlateRun(all, got []int16) float64 {
	const k, near = 8, 16
	pool := func(x []int16) []int16 {
		out := make([]int16, len(x)/k)
		for i := range out {
			var s int
			for _, v := range x[i*k : (i+1)*k] {
				s += int(v)
			}
			out[i] = int16(s / k)
		}
		return out
	}
	_, lag := audiotest.Correlate(pool(all), pool(got), len(all)/k)
	best := math.Inf(-1)
	for l := lag*k - near; l <= lag*k+near; l++ {
		var sab, saa, sbb float64 // as audiotest.Correlate, at lag l only
		for i := max(0, -l); i < len(all) && i+l < len(got); i++ {
			x, y := float64(all[i]), float64(got[i+l])
			sab, saa, sbb = sab+x*y, saa+x*x, sbb+y*y
		}
		if saa > 0 && sbb > 0 {
			best = max(best, sab/math.Sqrt(saa*sbb))
		}
	}
	return best
}

// containsRun reports whether run appears in all at some offset.
func containsRun(all, run []int16) bool {
	for i := 0; i+len(run) <= len(all); i++ {
		if all[i] == run[0] && slices.Equal(all[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// toneIn reports whether some 0.25 s window of s is a tone near hz. Runs of
// silence are dropped first: headless ALSA is not a clock, so PortAudio pads
// the file with silence between the host's paced writes.
func toneIn(played []int16, hz float64) bool {
	var s []int16
	for i := 0; i < len(played); {
		j := i
		for j < len(played) && played[j] == 0 {
			j++
		}
		if j-i < 16 {
			s = append(s, played[i:j]...)
		}
		if j == len(played) {
			break
		}
		s = append(s, played[j])
		i = j + 1
	}
	const w = 4000
	for i := 0; i+w <= len(s); i += w / 2 {
		win := s[i : i+w]
		if audiotest.RMS(win) > 0.03 {
			if f := audiotest.PeakFrequency(win, 16000, 200, 2000, 10); f > hz-20 && f < hz+20 {
				return true
			}
		}
	}
	return false
}
