package mixer_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
)

// clock is a speaker paced by the wall clock that notes when each write
// started, so that a sample's play time is known.
type clock struct {
	mu     sync.Mutex
	next   time.Time
	starts []time.Time
	writes [][]int16
}

func (c *clock) Write(p []int16) (int, error) {
	c.mu.Lock()
	now := time.Now()
	if c.next.Before(now) {
		c.next = now
	}
	c.starts = append(c.starts, c.next)
	c.writes = append(c.writes, append([]int16(nil), p...))
	c.next = c.next.Add(time.Duration(len(p)) * time.Second / rate)
	wait := time.Until(c.next)
	c.mu.Unlock()
	time.Sleep(wait)
	return len(p), nil
}
func (c *clock) Close() error { return nil }

// playTime is when the first sample after t0 whose magnitude stays at or
// below level for the rest of its write plays.
func (c *clock) duckedAt(t0 time.Time, level int16) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.writes {
		if c.starts[i].Add(time.Duration(len(w)) * time.Second / rate).Before(t0) {
			continue
		}
		for j := range w {
			quiet := true
			for _, v := range w[j:] {
				if v > level || v < -level {
					quiet = false
					break
				}
			}
			if quiet {
				at := c.starts[i].Add(time.Duration(j) * time.Second / rate)
				return max(0, at.Sub(t0))
			}
		}
	}
	return -1
}

// BenchmarkDuckingLatency: SetActive, then media at the ducked level in
// what the speaker plays (20 ms frames, 20 ms ramp, real time), p50/p95.
func BenchmarkDuckingLatency(b *testing.B) {
	const amp = 10000
	out := &clock{}
	m := mixer.New(out, mixer.Options{Rate: rate})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	s, err := m.Open("radio", mixer.Media, mono)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		sq := make([]int16, rate/10) // a square wave: every sample at full amplitude
		for i := range sq {
			sq[i] = amp
			if i%40 >= 20 {
				sq[i] = -amp
			}
		}
		for ctx.Err() == nil {
			if _, err := s.Write(sq); err != nil {
				return
			}
		}
	}()
	level := int16(math.Ceil(amp * math.Pow(10, -20.0/20) * 1.01))
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < max(b.N, 20); i++ {
		time.Sleep(150*time.Millisecond + time.Duration(i%7)*3*time.Millisecond)
		t0 := time.Now()
		m.SetActive(true)
		time.Sleep(200 * time.Millisecond)
		if d := out.duckedAt(t0, level); d >= 0 {
			lat = append(lat, d)
		}
		m.SetActive(false)
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("media never reached the ducked level")
	}
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(p(0.95).Microseconds())/1000, "p95_ms")
	fmt.Printf("ducking latency (SetActive → media at -20 dB at the speaker, 20 ms frames, 20 ms ramp): p50 %v p95 %v over %d\n",
		p(0.5).Round(100*time.Microsecond), p(0.95).Round(100*time.Microsecond), len(lat))
}

// discard is a speaker that takes everything at once.
type discard struct{}

func (discard) Write(p []int16) (int, error) { return len(p), nil }
func (discard) Close() error                 { return nil }

// BenchmarkMixCPU: the CPU the mixer takes per second of output, mixing a
// 16 kHz voice, a 44.1 kHz stereo media stream (resampled) and an earcon,
// out at 16 kHz mono (as before issue 25) and at 48 kHz stereo (a sound
// card's default now).
func BenchmarkMixCPU(b *testing.B) {
	for _, out := range []audio.Format{{Rate: rate, Channels: 1}, {Rate: 48000, Channels: 2}} {
		b.Run(fmt.Sprintf("out=%dHz×%d", out.Rate, out.Channels), func(b *testing.B) { benchmarkMixCPU(b, out) })
	}
}

func benchmarkMixCPU(b *testing.B, out audio.Format) {
	m := mixer.New(discard{}, mixer.Options{Rate: out.Rate, Channels: out.Channels})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	feed := func(name string, c mixer.Class, f audio.Format) {
		s, err := m.Open(name, c, f)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]int16, f.Rate*f.Channels/50)
		for i := range buf {
			buf[i] = int16(i * 37)
		}
		go func() {
			for ctx.Err() == nil {
				if _, err := s.Write(buf); err != nil {
					return
				}
			}
		}()
	}
	feed("reply", mixer.Voice, mono)
	feed("radio", mixer.Media, audio.Format{Rate: 44100, Channels: 2})
	feed("beep", mixer.Earcon, mono)
	m.SetActive(true)
	b.ResetTimer()
	start := cpuTime()
	var secs float64
	for range b.N {
		st := m.Status()
		before := st[1].Position
		for {
			time.Sleep(50 * time.Millisecond)
			if st := m.Status(); st[1].Position-before >= time.Second {
				secs += (st[1].Position - before).Seconds()
				break
			}
		}
	}
	b.StopTimer()
	cpu := (cpuTime() - start).Seconds() / secs
	b.ReportMetric(100*cpu, "%core/s_audio")
	fmt.Printf("mixer CPU (voice + 44.1 kHz stereo media + earcon, out %v, unpaced): %.2f%% of a core per second of audio\n", out, 100*cpu)
}

// cpuTime is the process's CPU time, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// firstLoud is when the first non-zero sample after t0 plays; -1 if none has.
func (c *clock) firstLoud(t0 time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.writes {
		for j, v := range w {
			if v != 0 {
				at := c.starts[i].Add(time.Duration(j) * time.Second / rate)
				if at.Before(t0) {
					break
				}
				return at.Sub(t0)
			}
		}
	}
	return -1
}

// BenchmarkReplyStartLatency: from the first Write on a new stream to its
// first sample at the speaker (a device that takes a write as it plays it),
// while the mixer keeps the idle speaker fed with silence in blocks of
// KeepFed (0: off), p50/p95.
func BenchmarkReplyStartLatency(b *testing.B) {
	for _, keep := range []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("keep_fed=%v", keep), func(b *testing.B) {
			out := &clock{}
			m := mixer.New(out, mixer.Options{Rate: rate, KeepFed: keep})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go m.Run(ctx)
			reply := constant(1000, 20*time.Millisecond)
			var lat []time.Duration
			for i := 0; i < max(b.N, 30); i++ {
				time.Sleep(200*time.Millisecond + rand.N(100*time.Millisecond)) // any phase of the silence
				out.mu.Lock()
				out.writes, out.starts = nil, nil
				out.mu.Unlock()
				s, err := m.Open("reply", mixer.Voice, mono)
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				s.Write(reply)
				s.Close()
				if d := out.firstLoud(t0); d >= 0 {
					lat = append(lat, d)
				}
			}
			slices.Sort(lat)
			p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
			b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(p(0.95).Microseconds())/1000, "p95_ms")
			fmt.Printf("reply start latency, keep_fed %v (first Write → first sample at the speaker): p50 %v p95 %v over %d\n",
				keep, p(0.5).Round(100*time.Microsecond), p(0.95).Round(100*time.Microsecond), len(lat))
		})
	}
}
