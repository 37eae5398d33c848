package mixer_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/mixer"
)

// TestAStereoOutputKeepsAStreamsChannelsAndCentresAMonoOne: on a 48 kHz
// stereo output written to a WAV file, a 44.1 kHz stereo stream whose
// channels differ (300 Hz left, 660 Hz right) keeps each tone in its channel
// at its level, and a 16 kHz mono reply comes out on both channels, sample
// for sample the same, at its own level.
func TestAStereoOutputKeepsAStreamsChannelsAndCentresAMonoOne(t *testing.T) {
	const outRate = 48000
	path := filepath.Join(t.TempDir(), "speaker.wav")
	wav, err := audio.CreateWAVSinkFormat(path, audio.Format{Rate: outRate, Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	m := mixer.New(wav, mixer.Options{Rate: outRate, Channels: 2})
	if f := m.Format(); f != (audio.Format{Rate: outRate, Channels: 2}) {
		t.Fatalf("the mixer's format is %v", f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()

	left, right := audiotest.ToneAmp(300, 44100, time.Second, 0.25), audiotest.ToneAmp(660, 44100, time.Second, 0.25)
	music := make([]int16, 2*len(left))
	for i := range left {
		music[2*i], music[2*i+1] = left[i], right[i]
	}
	reply := audiotest.ToneAmp(880, 16000, 500*time.Millisecond, 0.25)
	for _, p := range []struct {
		f   audio.Format
		pcm []int16
	}{{audio.Format{Rate: 44100, Channels: 2}, music}, {audio.Format{Rate: 16000, Channels: 1}, reply}} {
		s, err := m.Open("sound", mixer.Media, p.f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(p.pcm); err != nil {
			t.Fatal(err)
		}
		s.Close() // returns once played out
	}
	cancel()
	<-done
	if err := wav.Close(); err != nil {
		t.Fatal(err)
	}
	got, r, ch, err := audiotest.ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	if r != outRate || ch != 2 {
		t.Fatalf("the file is %d Hz × %d ch", r, ch)
	}
	frames := len(got) / 2
	if want := outRate * 3 / 2; frames < want-200 || frames > want+200 {
		t.Fatalf("%d frames out for 1.5 s in", frames)
	}
	l, rt := make([]int16, frames), make([]int16, frames)
	for i := range l {
		l[i], rt[i] = got[2*i], got[2*i+1]
	}
	db := func(p []int16, hz float64) float64 {
		return 20 * math.Log10(max(32768*audiotest.Goertzel(p, hz, outRate), 1e-3)/(0.25*math.MaxInt16))
	}
	ml, mr := l[outRate/4:3*outRate/4], rt[outRate/4:3*outRate/4]
	if d := db(ml, 300); math.Abs(d) > 0.3 {
		t.Errorf("left: 300 Hz at %.2f dB of its level", d)
	}
	if d := db(mr, 660); math.Abs(d) > 0.3 {
		t.Errorf("right: 660 Hz at %.2f dB of its level", d)
	}
	if a, b := db(ml, 660), db(mr, 300); a > -60 || b > -60 {
		t.Errorf("the channels leak into each other: 660 Hz left at %.0f dB, 300 Hz right at %.0f dB", a, b)
	}
	rl, rr := l[outRate*11/10:outRate*14/10], rt[outRate*11/10:outRate*14/10]
	for i := range rl {
		if rl[i] != rr[i] {
			t.Fatalf("the mono reply is not centred: frame %d is %d left, %d right", i, rl[i], rr[i])
		}
	}
	if d := db(rl, 880); math.Abs(d) > 0.3 {
		t.Errorf("the reply at %.2f dB of its level on each channel", d)
	}
}
