package audio

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/internal/backoff"
)

var quiet = slog.New(slog.DiscardHandler)

func TestCandidates(t *testing.T) {
	o := Options{}.withDefaults()
	got := candidates(o, 48000, 2, true)
	want := []Format{{16000, 1}, {16000, 2}, {48000, 1}, {48000, 2}}
	if !equalFormats(got, want) {
		t.Errorf("auto: %v, want %v", got, want)
	}
	// A 6-channel array whose default rate is the wire rate.
	got = candidates(o, 16000, 6, true)
	want = []Format{{16000, 1}, {16000, 2}, {16000, 6}}
	if !equalFormats(got, want) {
		t.Errorf("array: %v, want %v", got, want)
	}
	// A speaker asked for 48 kHz stereo whose default rate is 44.1 kHz:
	// stereo at either rate before mono.
	sp := Options{Rate: 48000, Channels: 2}.withDefaults()
	got = candidates(sp, 44100, 2, false)
	want = []Format{{48000, 2}, {44100, 2}, {48000, 1}, {44100, 1}}
	if !equalFormats(got, want) {
		t.Errorf("speaker: %v, want %v", got, want)
	}
	// A mono speaker (one channel at most) asked for stereo.
	got = candidates(sp, 48000, 1, false)
	want = []Format{{48000, 1}}
	if !equalFormats(got, want) {
		t.Errorf("mono speaker: %v, want %v", got, want)
	}
	o.DeviceRate, o.DeviceChannels = 44100, 2
	if got := candidates(o, 48000, 2, true); !equalFormats(got, []Format{{44100, 2}}) {
		t.Errorf("forced: %v", got)
	}
}

func equalFormats(a, b []Format) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFindDevice(t *testing.T) {
	devs := []Device{
		{Index: 0, Name: "bcm2835 Headphones: - (hw:0,0)", MaxOutputChannels: 8},
		{Index: 1, Name: "USB PnP Sound Device: Audio (hw:1,0)", MaxInputChannels: 1, MaxOutputChannels: 2},
		{Index: 2, Name: "pulse", MaxInputChannels: 32, MaxOutputChannels: 32},
		{Index: 3, Name: "default", MaxInputChannels: 32, MaxOutputChannels: 32, DefaultInput: true, DefaultOutput: true},
		{Index: 4, Name: "usb", MaxInputChannels: 2},
	}
	for _, tc := range []struct {
		q     string
		input bool
		want  int
	}{
		{"", true, 3}, {"default", false, 3}, {"DEFAULT", true, 3},
		{"usb pnp", true, 1}, {"USB", true, 4}, // exact name beats substring
		{"headphones", false, 0}, {"1", true, 1}, {" 2 ", false, 2},
	} {
		d, err := findDevice(devs, tc.q, tc.input)
		if err != nil || d.Index != tc.want {
			t.Errorf("%q (input %v): %v %v, want #%d", tc.q, tc.input, d, err, tc.want)
		}
	}
	_, err := findDevice(devs, "headphones", true)
	var de *DeviceError
	if !errors.As(err, &de) || !errors.Is(err, ErrDeviceNotFound) {
		t.Fatalf("output-only device as input: %v", err)
	}
	msg := err.Error()
	for _, s := range []string{`input device "headphones" not found`, `#1 "USB PnP Sound Device: Audio (hw:1,0)"`, `#3 "default"`} {
		if !strings.Contains(msg, s) {
			t.Errorf("%q lacks %q", msg, s)
		}
	}
	if strings.Contains(msg, "bcm2835") {
		t.Errorf("%q lists an output-only device as an input", msg)
	}
	if _, err := findDevice(nil, "", false); err == nil || !strings.Contains(err.Error(), "there are no output devices") {
		t.Errorf("no devices: %v", err)
	}
}

func TestDownmixUpmix(t *testing.T) {
	if got := downmix(nil, []int16{100, 300, -32768, -32768, 32767, 32767, 1, 2}, 2); !equal16(got, []int16{200, -32768, 32767, 1}) {
		t.Errorf("downmix 2: %v", got)
	}
	if got := downmix(nil, []int16{3, 6, 9, 30, 60, 90}, 3); !equal16(got, []int16{6, 60}) {
		t.Errorf("downmix 3: %v", got)
	}
	if got := upmix(nil, []int16{1, -2}, 2); !equal16(got, []int16{1, 1, -2, -2}) {
		t.Errorf("upmix: %v", got)
	}
}

func equal16(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fakeClock records the sleeps a pacer asks for instead of sleeping.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) pacer(rate int) *pacer {
	p := newPacer(rate)
	p.now = func() time.Time { return c.now }
	p.sleep = func(_ context.Context, d time.Duration) error {
		c.sleeps = append(c.sleeps, d)
		c.now = c.now.Add(d)
		return nil
	}
	return p
}

func TestPacerKeepsRealTime(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(16000)
	start := c.now
	// 50 reads of 320 samples (20 ms each) with 1 ms of work between them.
	for range 50 {
		p.wait(context.Background(), 320)
		c.now = c.now.Add(time.Millisecond)
	}
	// After 1 s of audio the clock has moved 1 s (plus the last 1 ms of work).
	if got := c.now.Sub(start); got != time.Second+time.Millisecond {
		t.Errorf("1 s of audio took %v of (fake) wall time", got)
	}
	if len(c.sleeps) != 50 || c.sleeps[1] != 19*time.Millisecond {
		t.Errorf("sleeps %v", c.sleeps[:3])
	}
	// A consumer 2 s late does not get a 2 s burst: the schedule restarts.
	c.now = c.now.Add(2 * time.Second)
	c.sleeps = nil
	p.wait(context.Background(), 320)
	p.wait(context.Background(), 320)
	if len(c.sleeps) != 1 || c.sleeps[0] != 20*time.Millisecond {
		t.Errorf("after a stall: sleeps %v, want one of 20ms", c.sleeps)
	}
}

// endless is a Source of zeros.
type endless struct{ closed chan struct{} }

func (e *endless) Read(p []int16) (int, error) {
	select {
	case <-e.closed:
		return 0, ErrClosed
	default:
	}
	clear(p)
	return len(p), nil
}
func (e *endless) Close() error { close(e.closed); return nil }

func TestPacedCloseUnblocksRead(t *testing.T) {
	// One sample per second: a Read of 16000 samples takes 16000 s of
	// wall time, unless Close cuts the wait short.
	src := Paced(&endless{closed: make(chan struct{})}, 1)
	buf := make([]int16, 16000)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		src.Read(make([]int16, 16000)) // blocks in the pacer until Close
	}()
	src.Close()
	wg.Wait()
	if _, err := src.Read(buf); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// fakeIn is a capture device that fails after failAfter reads.
type fakeIn struct {
	f         Format
	n         int
	failAfter int
	value     int16
	closed    bool
}

func (d *fakeIn) read() ([]int16, error) {
	d.n++
	if d.n == 2 {
		return nil, paInputOverflowed
	}
	if d.failAfter > 0 && d.n > d.failAfter {
		return nil, paError(-9999) // paUnanticipatedHostError: the device went away
	}
	buf := make([]int16, 160*d.f.Channels)
	for i := range buf {
		buf[i] = d.value
	}
	return buf, nil
}
func (d *fakeIn) format() Format { return d.f }
func (d *fakeIn) device() Device { return Device{Name: "fake mic"} }
func (d *fakeIn) close() error   { d.closed = true; return nil }

func TestSourceReopensLostDevice(t *testing.T) {
	var opened []*fakeIn
	open := func() (devIn, error) {
		if len(opened) == 1 {
			opened = append(opened, nil)
			return nil, errors.New("not back yet")
		}
		d := &fakeIn{f: Format{16000, 1}, failAfter: 4, value: int16(len(opened) + 1)}
		opened = append(opened, d)
		return d, nil
	}
	o := Options{Retry: backoff.Backoff{Base: time.Microsecond, Cap: time.Microsecond}, Logger: quiet}.withDefaults()
	src, err := newSource(t.Context(), o, open)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// Device 1: reads 1, 3, 4 deliver (read 2 overflows), then it fails;
	// one failed attempt; device 2 delivers the rest.
	got := make([]int16, 160*5)
	if _, err := ReadFull(src, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		want := int16(1)
		if i >= 3*160 {
			want = 3
		}
		if v != want {
			t.Fatalf("sample %d from device %d, want %d", i, v, want)
		}
	}
	if src.Reopens() != 1 || src.Overflows() != 2 || !opened[0].closed {
		t.Errorf("reopens %d, overflows %d, first closed %v", src.Reopens(), src.Overflows(), opened[0].closed)
	}
}

type fakeOut struct {
	f       Format
	fail    bool
	written []int16
	closed  bool
}

func (d *fakeOut) write(p []int16) error {
	if d.fail {
		d.fail = false
		return paError(-9999)
	}
	d.written = append(d.written, p...)
	return nil
}
func (d *fakeOut) format() Format { return d.f }
func (d *fakeOut) device() Device { return Device{Name: "fake speaker"} }
func (d *fakeOut) close() error   { d.closed = true; return nil }

func TestSinkReopensLostDeviceAndConverts(t *testing.T) {
	var devs []*fakeOut
	open := func() (devOut, error) {
		d := &fakeOut{f: Format{48000, 2}, fail: len(devs) == 0}
		devs = append(devs, d)
		return d, nil
	}
	sink, err := newSink(t.Context(), Options{Logger: quiet}.withDefaults(), open)
	if err != nil {
		t.Fatal(err)
	}
	tone := audiotest.Tone(1000, 16000, time.Second)
	for i := 0; i < len(tone); i += 320 {
		if _, err := sink.Write(tone[i : i+320]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || !devs[0].closed || !devs[1].closed || sink.Reopens() != 1 {
		t.Fatalf("devices %d, reopens %d", len(devs), sink.Reopens())
	}
	// The first 20 ms went to the failed device; the rest (plus the
	// resampler's tail at Close) reached the second as 48 kHz stereo.
	w := devs[1].written
	left := make([]int16, 0, len(w)/2)
	for i := 0; i < len(w); i += 2 {
		if w[i] != w[i+1] {
			t.Fatalf("frame %d: channels differ", i/2)
		}
		left = append(left, w[i])
	}
	if d := len(left) - (48000 - 960); d < -48 || d > 48 {
		t.Errorf("%d frames played, want about %d", len(left), 48000-960)
	}
	if f := audiotest.PeakFrequency(left[4800:len(left)-4800], 48000, 950, 1050, 1); f != 1000 {
		t.Errorf("played %v Hz", f)
	}
}

func TestWAVSinkAndFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tone.wav")
	sink, err := CreateWAVSink(path, 16000)
	if err != nil {
		t.Fatal(err)
	}
	tone := audiotest.Tone(440, 16000, 500*time.Millisecond)
	sink.Write(tone[:1000])
	sink.Write(tone[1000:])
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	samples, rate, ch, err := audiotest.ReadWAV(path)
	if err != nil || rate != 16000 || ch != 1 || !equal16(samples, tone) {
		t.Fatalf("WAV read back: rate %d ch %d, %d samples, %v", rate, ch, len(samples), err)
	}
	if _, err := exec.LookPath("sox"); err == nil {
		out, err := exec.Command("sox", "--i", "-s", path).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "8000" {
			t.Errorf("sox --i -s: %q %v, want 8000 samples", out, err)
		}
	}

	// Read it back through a FileSource, in odd sizes, to io.EOF.
	src, err := OpenFileSource(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(src, 333)
	if err != nil || !equal16(got, tone) {
		t.Fatalf("file source: %d samples, %v", len(got), err)
	}
	if src.Format() != (Format{16000, 1}) {
		t.Errorf("format %v", src.Format())
	}
	src.Close()
	if _, err := src.Read(make([]int16, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

func readAll(src Source, chunk int) ([]int16, error) {
	var out []int16
	buf := make([]int16, chunk)
	for {
		n, err := src.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func TestFileSourceConvertsWAVAndRaw(t *testing.T) {
	dir := t.TempDir()
	// 48 kHz stereo WAV written by sox (with a LIST chunk before data).
	raw48 := filepath.Join(dir, "t48.s16")
	tone48 := audiotest.Tone(440, 48000, time.Second)
	if err := audiotest.WriteRaw(raw48, audiotest.Interleave(tone48, tone48)); err != nil {
		t.Fatal(err)
	}
	wav48 := filepath.Join(dir, "t48.wav")
	audiotest.Sox(t, "-t", "raw", "-r", "48000", "-c", "2", "-b", "16", "-e", "signed-integer", raw48,
		"--comment", "a LIST chunk", wav48)
	// And the same data raw, described by Options.RawFormat.
	for name, open := range map[string]func() (*FileSource, error){
		"wav": func() (*FileSource, error) { return OpenFileSource(wav48, Options{}) },
		"raw": func() (*FileSource, error) { return OpenFileSource(raw48, Options{RawFormat: Format{48000, 2}}) },
	} {
		src, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if src.Format() != (Format{48000, 2}) {
			t.Errorf("%s: format %v", name, src.Format())
		}
		got, err := readAll(src, 1000)
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d := len(got) - 16000; d < -16 || d > 16 {
			t.Errorf("%s: %d samples at 16 kHz, want about 16000", name, len(got))
		}
		if f := audiotest.PeakFrequency(got[1600:len(got)-1600], 16000, 400, 480, 1); f != 440 {
			t.Errorf("%s: %v Hz", name, f)
		}
	}
}

func TestFileSourceLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short.s16")
	if err := audiotest.WriteRaw(path, []int16{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	src, err := OpenFileSource(path, Options{Loop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got := make([]int16, 12)
	if _, err := ReadFull(src, got); err != nil {
		t.Fatal(err)
	}
	if !equal16(got, []int16{1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2}) {
		t.Errorf("loop: %v", got)
	}
	// An empty file ends at once, even with Loop.
	empty := filepath.Join(t.TempDir(), "empty.s16")
	os.WriteFile(empty, nil, 0o644)
	e, err := OpenFileSource(empty, Options{Loop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Read(got); !errors.Is(err, io.EOF) {
		t.Errorf("empty file: %v, want io.EOF", err)
	}
	if _, err := OpenFileSource(filepath.Join(t.TempDir(), "missing.wav"), Options{}); err == nil || !strings.Contains(err.Error(), "missing.wav") {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.s16")
	audiotest.WriteRaw(path, []int16{1, 2, 3})
	src, _ := OpenFileSource(path, Options{})
	defer src.Close()
	buf := make([]int16, 2)
	if n, err := ReadFull(src, buf); n != 2 || err != nil {
		t.Errorf("first: %d %v", n, err)
	}
	if n, err := ReadFull(src, buf); n != 1 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("second: %d %v", n, err)
	}
	if n, err := ReadFull(src, buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("third: %d %v", n, err)
	}
}

func TestFileSourceRefusesUnusableWAVFormats(t *testing.T) {
	for _, f := range []Format{{Rate: 10, Channels: 1}, {Rate: 16000, Channels: 60000}} {
		path := filepath.Join(t.TempDir(), "odd.wav")
		if err := os.WriteFile(path, append(wavHeader(f.Rate, f.Channels, 4), 0, 0, 0, 0), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenFileSource(path, Options{}); err == nil || !strings.Contains(err.Error(), "unusable format") {
			t.Errorf("%v: got %v", f, err)
		}
	}
}

// latSink records what it is written and reports a latency (a fake device).
type latSink struct{ got []int16 }

func (s *latSink) Write(p []int16) (int, error) { s.got = append(s.got, p...); return len(p), nil }
func (s *latSink) Close() error                 { return nil }
func (s *latSink) Latency() time.Duration       { return 50 * time.Millisecond }

// TestAConvertingSinkCountsWhatItHoldsInItsLatency: 48 kHz stereo written
// to a 16 kHz mono device arrives as the channels' average; what the rate
// converter still holds is part of the latency (it is heard after what the
// device holds), and Close writes it.
func TestAConvertingSinkCountsWhatItHoldsInItsLatency(t *testing.T) {
	dev := &latSink{}
	s, err := ConvertSink(dev, Format{Rate: 48000, Channels: 2}, Format{Rate: 16000, Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]int16, 2*960) // 20 ms
	for i := range 960 {
		p[2*i], p[2*i+1] = 3000, 1000
	}
	for range 5 {
		if n, err := s.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	held := 1600 - len(dev.got)
	lat := latencyOf(s)
	want := 50*time.Millisecond + time.Duration(held)*time.Second/16000
	if held <= 0 || held >= 1600 || lat < want-100*time.Microsecond || lat > want+100*time.Microsecond {
		t.Fatalf("%d of 1600 samples out, %d held; latency %v, want 50ms and the held samples' time", len(dev.got), held, lat)
	}
	if v := dev.got[len(dev.got)-1]; v < 1990 || v > 2010 {
		t.Fatalf("the device got %d, want the channels' average 2000", v)
	}
	if _, err := s.Write([]int16{1}); err == nil {
		t.Fatal("half a stereo frame was taken")
	}
	if err := s.Close(); err != nil || len(dev.got) < 1598 {
		t.Fatalf("Close: %v; %d of 1600 samples out", err, len(dev.got))
	}
}

// TestASurroundStreamOnAStereoOutputKeepsItsCentreInTheMiddle: frames of
// 3 to 8 channels in the usual order (FL FR, then FC and LFE where the
// layout has them, then the surrounds in left-right pairs) mapped to stereo
// keep a centre channel (a film's dialogue) on both sides at one level, and
// every left channel left, every right channel right.
func TestASurroundStreamOnAStereoOutputKeepsItsCentreInTheMiddle(t *testing.T) {
	layouts := map[int]string{3: "LRC", 4: "LRLR", 5: "LRCLR", 6: "LRCCLR", 7: "LRCCCLR", 8: "LRCCLRLR"}
	for from, roles := range layouts {
		for i, role := range roles {
			frame := make([]int16, from)
			frame[i] = 6000
			got := Remix(nil, frame, from, 2)
			if len(got) != 2 {
				t.Fatalf("%d channels: %d samples out for one frame", from, len(got))
			}
			l, r := got[0], got[1]
			switch {
			case role == 'C' && (l != r || l == 0):
				t.Errorf("%d channels: centre channel %d comes out %d left, %d right", from, i, l, r)
			case role == 'L' && (l == 0 || r != 0):
				t.Errorf("%d channels: left channel %d comes out %d left, %d right", from, i, l, r)
			case role == 'R' && (r == 0 || l != 0):
				t.Errorf("%d channels: right channel %d comes out %d left, %d right", from, i, l, r)
			}
		}
	}
}

// TestANamedPipeIsReadAsItsWriterWritesIt: a program that writes the
// microphone into a pipe (arecord, the household's simulator) is read as
// raw samples at the wire rate, with no header sniffed off it and no
// rewind at its end.
func TestANamedPipeIsReadAsItsWriterWritesIt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mic")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	want := make([]int16, 1000)
	for i := range want {
		want[i] = int16(i*7 - 3000)
	}
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		binary.Write(w, binary.LittleEndian, want)
	}()
	src, err := OpenFileSource(p, Options{Rate: 16000, Loop: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var got []int16
	buf := make([]int16, 160)
	for {
		n, err := src.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("read %d samples, first %v; want the %d written, first %v", len(got), got[:min(4, len(got))], len(want), want[:4])
	}
}
