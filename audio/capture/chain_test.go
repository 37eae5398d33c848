package capture

import (
	"testing"

	"github.com/agenthost/agenthost/audio"
)

// rampSource delivers 0, 1, 2, … and counts its reads.
type rampSource struct {
	next  int16
	reads int
}

func (s *rampSource) Read(p []int16) (int, error) {
	s.reads++
	for i := range p {
		p[i] = s.next
		s.next++
	}
	return len(p), nil
}
func (*rampSource) Close() error { return nil }

// frameLog records the frames a stage sees.
type frameLog struct {
	first []int16
	size  []int
}

func (*frameLog) Name() string { return "log" }
func (l *frameLog) Process(f *Frame) {
	l.first, l.size = append(l.first, f.PCM[0]), append(l.size, len(f.PCM))
}
func (*frameLog) Close() error { return nil }

// TestTheChainReadsItsSourceAReadAtATime: a reader's 60 ms frame is one
// read of the source (one wake-up of the capture, not six), and the
// stages still see it as six 10 ms frames, in order.
func TestTheChainReadsItsSourceAReadAtATime(t *testing.T) {
	src := &rampSource{}
	log := &frameLog{}
	c, err := NewChain(src, 16000, log)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]int16, 960)
	for k := 0; k < 100; k++ {
		if _, err := audio.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if buf[0] != int16(960*k) || buf[959] != int16(960*k+959) {
			t.Fatalf("read %d delivered %d…%d", k, buf[0], buf[959])
		}
	}
	if src.reads != 100 {
		t.Errorf("100 reads of 60 ms read the source %d times, want 100", src.reads)
	}
	if len(log.first) != 600 {
		t.Fatalf("the stages saw %d frames, want 600", len(log.first))
	}
	for i := range log.first {
		if log.size[i] != 160 || log.first[i] != int16(160*i) {
			t.Fatalf("frame %d: %d samples from %d", i, log.size[i], log.first[i])
		}
	}
}
