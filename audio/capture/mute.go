package capture

// Mute is the privacy stage, first in the chain: while muted says so, every
// frame becomes silence before any other stage (or the wake-word detector,
// or the encoder) sees a sample. The one who mutes owns the state; the
// stage only asks, frame by frame.
type Mute struct {
	muted func() bool
}

// NewMute returns the privacy stage; muted reports the microphone's state
// (it is called once per frame and must be cheap, an atomic load).
func NewMute(muted func() bool) *Mute { return &Mute{muted: muted} }

// Name implements Stage.
func (m *Mute) Name() string { return "mute" }

// Process implements Stage.
func (m *Mute) Process(f *Frame) {
	if m.muted() {
		clear(f.PCM)
	}
}

// Close implements Stage.
func (m *Mute) Close() error { return nil }
