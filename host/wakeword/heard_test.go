package wakeword

import "testing"

// TestOwnSoundIsRememberedByPosition: the gate hands audio on in chunks of
// its own, later; each is marked own sound only where all of it was fed
// as such, and what is remembered stays bounded.
func TestOwnSoundIsRememberedByPosition(t *testing.T) {
	var o ownSoundRuns
	o.add(0, 960)
	o.add(960, 1920) // follows on: one run
	o.add(2880, 3840)
	for _, c := range []struct {
		from, to int64
		want     bool
	}{
		{0, 1920, true}, {320, 1280, true}, {1600, 2240, false}, {1920, 2880, false}, {2880, 3840, true}, {2560, 3200, false},
	} {
		if got := o.covers(c.from, c.to); got != c.want {
			t.Errorf("[%d, %d): own sound %v, want %v", c.from, c.to, got, c.want)
		}
	}
	for i := int64(0); i < 100_000; i++ {
		o.add(10_000+2*i*960, 10_000+(2*i+1)*960) // a gap after each
	}
	if n := len(o.runs); n > ownSoundMaxRuns {
		t.Errorf("%d runs remembered, want at most %d", n, ownSoundMaxRuns)
	}
	if o.covers(0, 960) {
		t.Error("a run from long ago is still remembered")
	}
}
