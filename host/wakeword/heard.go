package wakeword

// ownSoundKeep is how far back ownSoundRuns remembers (the gate hands on
// at most a few seconds it held back), and ownSoundMaxRuns how many runs.
const (
	ownSoundKeep    = 30 * 16000
	ownSoundMaxRuns = 256
)

// ownSoundRuns remembers the stretches of the stream the capture chain took
// for the speaker's own sound alone (Feed's ownSound), so that audio the gate
// hands on later, in chunks of its own, is marked as it was heard. Used from
// the feeding goroutine only.
type ownSoundRuns struct{ runs [][2]int64 }

// add records [from, to) as own sound.
func (o *ownSoundRuns) add(from, to int64) {
	if n := len(o.runs); n > 0 && o.runs[n-1][1] == from {
		o.runs[n-1][1] = to
	} else {
		o.runs = append(o.runs, [2]int64{from, to})
	}
	k := 0
	for k < len(o.runs) && (o.runs[k][1] <= to-ownSoundKeep || len(o.runs)-k > ownSoundMaxRuns) {
		k++
	}
	o.runs = append(o.runs[:0], o.runs[k:]...)
}

// covers reports whether all of [from, to) was own sound.
func (o *ownSoundRuns) covers(from, to int64) bool {
	for _, r := range o.runs {
		if r[0] <= from && to <= r[1] {
			return true
		}
	}
	return false
}
