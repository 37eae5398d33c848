package household

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Meter keeps the microphone's level of the last seconds, in 20 ms blocks,
// so that a detection can say how loud the phrase was and how far above
// the speaker's own noise floor.
type Meter struct {
	mu    sync.Mutex
	block int       // samples per block
	sum   float64   // the block being filled: sum of squares
	n     int       //   and its samples
	pos   int64     // stream position after the last sample fed
	ends  []int64   // ring: each block's end position
	power []float64 //   and mean square
	next  int
	fed   time.Time // when the last samples were fed
}

const (
	meterBlocks = 500 // 10 s of 20 ms blocks
	phraseSpan  = 1.5 // seconds before the detection that hold the phrase
	loudSpan    = 0.5 // seconds of the phrase's loudest blocks
)

// NewMeter is a meter of a microphone at rate.
func NewMeter(rate int) *Meter {
	return &Meter{block: max(rate/50, 1), ends: make([]int64, meterBlocks), power: make([]float64, meterBlocks)}
}

// Feed takes the microphone's samples from stream position pos.
func (m *Meter) Feed(pos int64, pcm []int16) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pos != m.pos { // a gap (a new stream): start a new block
		m.sum, m.n = 0, 0
	}
	m.pos, m.fed = pos, time.Now()
	for _, s := range pcm {
		m.sum += float64(s) * float64(s)
		m.n++
		m.pos++
		if m.n == m.block {
			m.ends[m.next], m.power[m.next] = m.pos, m.sum/float64(m.n)
			m.next = (m.next + 1) % meterBlocks
			m.sum, m.n = 0, 0
		}
	}
}

// Measure is the phrase that ended at stream position end: its level (dB
// full scale: the mean power of its loudest half second, less the median
// power of the seconds before it, so that what the microphone heard before
// the phrase — the speaker's own music through its canceller, a fan — does
// not count as the phrase) and its SNR (its loudest half second over the
// quietest fifth of the seconds before it).
func (m *Meter) Measure(end int64) (level, snr float32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rate := float64(m.block * 50)
	from := end - int64(phraseSpan*rate)
	var phrase, before []float64
	for i, e := range m.ends {
		switch {
		case e == 0 || e > end:
		case e > from:
			phrase = append(phrase, m.power[i])
		default:
			before = append(before, m.power[i])
		}
	}
	if len(phrase) == 0 {
		return -120, 0
	}
	slices.Sort(phrase)
	loud := mean(phrase[len(phrase)-min(len(phrase), max(int(loudSpan*50), 1)):])
	floor, background := phrase[0], 0.0
	if len(before) > 0 {
		slices.Sort(before)
		floor, background = before[len(before)/5], before[len(before)/2]
	}
	return float32(db(max(loud-background, 0))), float32(db(loud) - db(floor))
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// db is a mean square of 16-bit samples in dB full scale (-120 at silence).
func db(ms float64) float64 {
	return max(10*math.Log10(ms/(32768*32768)+1e-12), -120)
}

// Ago is the stream position of age ago.
func (m *Meter) Ago(age time.Duration) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	back := age + time.Since(m.fed)
	return m.pos - int64(back.Seconds()*float64(m.block*50))
}

// Age is how long ago stream position end was.
func (m *Meter) Age(end int64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return time.Duration(m.pos-end)*time.Second/time.Duration(m.block*50) + time.Since(m.fed)
}
