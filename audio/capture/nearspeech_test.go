package capture

import (
	"testing"

	"github.com/agenthost/agenthost/audio"
)

// nearFrames runs the canceller over mic (far playing) and returns, by
// 10 ms frame of its output, whether it took the frame for near speech.
func nearFrames(t *testing.T, mic, far []int16) []bool {
	t.Helper()
	e, err := NewEcho(nil, EchoOptions{MaxDelay: DefaultMaxDelay})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := append([]int16(nil), mic...)
	ref := make([]int16, frameLen)
	var near []bool
	for i := 0; i+frameLen <= len(out); i += frameLen {
		clear(ref)
		if i < len(far) {
			copy(ref, far[i:min(len(far), i+frameLen)])
		}
		e.Cancel(out[i:i+frameLen], ref)
		near = append(near, e.NearSpeech())
	}
	return near[1:] // the suppressor gives each frame back one frame later
}

// share is the fraction of frames [from, to) (in samples) that are set.
func share(frames []bool, from, to int) float64 {
	n, set := 0, 0
	for k := from / frameLen; k < min(to/frameLen, len(frames)); k++ {
		n++
		if frames[k] {
			set++
		}
	}
	return float64(set) / float64(max(n, 1))
}

// TestTheCancellerTellsAVoiceInTheRoomFromItsOwnSound: in the tuning set's
// first living room, the speaker's own speech alone is taken for near
// speech in few frames once the filter has learnt, and a person speaking
// over it in many of the frames of each phrase: what the wake word, while
// the speaker sounds, asks of a detection (Frame.OwnSound).
func TestTheCancellerTellsAVoiceInTheRoomFromItsOwnSound(t *testing.T) {
	sc := livingScene(t)
	alone := nearFrames(t, sc.echo.Mic, sc.far)
	echoOnly := share(alone, settle, len(sc.echo.Mic))
	t.Logf("%s: its own speech alone taken for near speech in %.1f%% of the frames from 2 s on", sc.room, 100*echoOnly)
	if echoOnly > 0.05 {
		t.Errorf("its own speech alone was taken for near speech in %.1f%% of the frames, want ≤ 5%%", 100*echoOnly)
	}
	talk := nearFrames(t, sc.dt.Mic, sc.far)
	for _, seg := range sc.segs {
		s := share(talk, seg[0], seg[1])
		t.Logf("a person speaking at %.1f s over it: %.0f%% of the frames taken for near speech", float64(seg[0])/rate, 100*s)
		if s < 0.3 {
			t.Errorf("a person speaking at %.1f s over the speaker: %.0f%% of the frames taken for near speech, want ≥ 30%%", float64(seg[0])/rate, 100*s)
		}
	}
}

// ownSoundStage marks the frames whose first sample is negative as the
// speaker's own sound alone (a test's stand-in for the canceller's
// verdict, which TestTheCancellerTellsAVoiceInTheRoomFromItsOwnSound tests).
type ownSoundStage struct{}

func (ownSoundStage) Name() string     { return "own" }
func (ownSoundStage) Process(f *Frame) { f.OwnSound = f.PCM[0] < 0 }
func (ownSoundStage) Close() error     { return nil }

// blockSource delivers blocks of 60 ms, each all -1 (own sound) or 1.
type blockSource struct {
	voiced []bool
	k      int
}

func (s *blockSource) Read(p []int16) (int, error) {
	v := int16(-1)
	if s.voiced[s.k%len(s.voiced)] {
		v = 1
	}
	s.k++
	for i := range p {
		p[i] = v
	}
	return len(p), nil
}
func (*blockSource) Close() error { return nil }

// TestTheChainSaysWhetherWhatWasReadMayHoldAVoice: TakeVoiced is false
// only for reads whose every frame a stage took for the speaker's own
// sound, and each call covers the reads since the one before.
func TestTheChainSaysWhetherWhatWasReadMayHoldAVoice(t *testing.T) {
	src := &blockSource{voiced: []bool{false, true, false, false}}
	c, err := NewChain(src, 16000, ownSoundStage{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]int16, 960)
	read := func() {
		if _, err := audio.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if c.TakeVoiced() {
		t.Error("a read of own sound alone may hold a voice, says the chain")
	}
	read()
	if !c.TakeVoiced() {
		t.Error("a read of voiced frames holds no voice, says the chain")
	}
	read()
	read()
	if c.TakeVoiced() {
		t.Error("two reads of own sound alone may hold a voice, says the chain")
	}
	read() // voiced
	read() // own sound
	if !c.TakeVoiced() {
		t.Error("a voiced read then an own-sound one: no voice, says the chain")
	}
	plain, err := NewChain(&blockSource{voiced: []bool{false}}, 16000)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := audio.ReadFull(plain, buf); err != nil {
		t.Fatal(err)
	}
	if !plain.TakeVoiced() {
		t.Error("with no stage to tell, the chain said no voice")
	}
}
