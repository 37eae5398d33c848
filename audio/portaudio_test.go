package audio

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/internal/backoff"
)

// Every test here that touches PortAudio runs in a child process of its own
// (audiotest.RunInChild) with ALSA_CONFIG_PATH pointing at a headless
// configuration written into the parent's t.TempDir(): ALSA and PortAudio
// read their configuration once per process, so this keeps tests
// independent of each other and of the machine's sound setup.

// isolated prepares the test in the parent (setup returns the child's
// environment) and reports whether the caller is the child that should run
// the body.
func isolated(t *testing.T, setup func(dir string) []string) bool {
	t.Helper()
	if audiotest.InChild(t) {
		return true
	}
	audiotest.RunInChild(t, setup(t.TempDir())...)
	return false
}

func mustConf(t *testing.T, dir string, devs ...audiotest.ALSADevice) string {
	t.Helper()
	conf, err := audiotest.WriteALSAConfig(dir, devs...)
	if err != nil {
		t.Fatal(err)
	}
	return "ALSA_CONFIG_PATH=" + conf
}

func mustRaw(t *testing.T, path string, s []int16) {
	t.Helper()
	if err := audiotest.WriteRaw(path, s); err != nil {
		t.Fatal(err)
	}
}

func readRawEnv(t *testing.T, key string) []int16 {
	t.Helper()
	s, err := audiotest.ReadRaw(os.Getenv(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testOptions(t *testing.T, device string) Options {
	return Options{Device: device, FailFast: true}
}

func TestCaptureSpeechBitExact(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		clip := audiotest.Speech(t, "Hello speaker, this is a headless capture test.")
		conf, err := audiotest.WriteHeadlessALSAConfig(dir, clip.Path, filepath.Join(dir, "played.s16"))
		if err != nil {
			t.Fatal(err)
		}
		return []string{"ALSA_CONFIG_PATH=" + conf, "SPEECH=" + clip.Path}
	}) {
		return
	}
	want := readRawEnv(t, "SPEECH")
	src, err := OpenPortAudioSource(t.Context(), testOptions(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if f := src.DeviceFormat(); f != (Format{16000, 1}) {
		t.Errorf("device opened at %v, want 16000 Hz mono (the wire format)", f)
	}
	if l := src.Latency(); l <= 0 || l > 5*time.Second {
		t.Errorf("the capture device reports a latency of %v (the echo canceller aligns by it)", l)
	}
	got := make([]int16, len(want))
	// Odd read sizes, so that buffering across device buffers is exercised.
	for n := 0; n < len(got); {
		m, err := src.Read(got[n:min(len(got), n+701)])
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample %d: got %d, want %d (capture must be bit-exact at the wire rate)", i, got[i], want[i])
		}
	}
}

// A device opened at 48 kHz stereo is mixed down and resampled to 16 kHz
// mono by libsoxr. The device files are raw `file` PCMs without a plug, so
// the bytes the device delivers are exactly the 48 kHz stereo files.
func TestCapture48kStereoResampled(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		clip := audiotest.Speech(t, "Resampling keeps the words intelligible.")
		speech48 := filepath.Join(dir, "speech48.s16")
		audiotest.Sox(t, "-t", "raw", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", clip.Path,
			"-t", "raw", "-r", "48000", "-c", "2", "-b", "16", "-e", "signed-integer", speech48)
		devs := []audiotest.ALSADevice{{Name: "speech48", Capture: speech48}}
		for _, f := range []int{440, 7000, 12000} {
			p := filepath.Join(dir, "tone"+strconv.Itoa(f)+".s16")
			tone := audiotest.Tone(float64(f), 48000, time.Second)
			mustRaw(t, p, append(audiotest.Interleave(tone, tone), make([]int16, 2*48000)...))
			devs = append(devs, audiotest.ALSADevice{Name: "tone" + strconv.Itoa(f), Capture: p})
		}
		return []string{mustConf(t, dir, devs...), "SPEECH=" + clip.Path}
	}) {
		return
	}
	capture := func(device string, n int) []int16 {
		t.Helper()
		o := testOptions(t, device)
		o.DeviceRate, o.DeviceChannels = 48000, 2
		src, err := OpenPortAudioSource(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if f := src.DeviceFormat(); f != (Format{48000, 2}) {
			t.Fatalf("device format %v, want 48000 Hz stereo", f)
		}
		out := make([]int16, n)
		if _, err := ReadFull(src, out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	want := readRawEnv(t, "SPEECH")
	got := capture("speech48", len(want))
	// Threshold: 0.99. sox's upsampling and our downsampling are both
	// band-limited, so the round trip only loses what lies above ~7.3 kHz.
	c, lag := audiotest.Correlate(want, got, 64)
	t.Logf("speech: correlation %.5f at lag %d samples", c, lag)
	if c < 0.99 {
		t.Errorf("speech correlation %.4f (lag %d), want >= 0.99", c, lag)
	}

	mid := func(s []int16) []int16 { return s[1600 : len(s)-1600] }
	tone440 := mid(capture("tone440", 16000))
	if f := audiotest.PeakFrequency(tone440, 16000, 400, 480, 1); f != 440 {
		t.Errorf("440 Hz at 48k became %v Hz at 16k", f)
	}
	if a := audiotest.Goertzel(tone440, 440, 16000); audiotest.DB(a/0.5) < -0.5 {
		t.Errorf("440 Hz level %.2f dB, want within 0.5 dB", audiotest.DB(a/0.5))
	}
	// 7 kHz is below the 8 kHz Nyquist frequency of the output: kept.
	tone7k := mid(capture("tone7000", 16000))
	if a := audiotest.Goertzel(tone7k, 7000, 16000); audiotest.DB(a/0.5) < -0.5 {
		t.Errorf("7 kHz level %.2f dB, want within 0.5 dB (pass band)", audiotest.DB(a/0.5))
	}
	// 12 kHz is above it: removed. Dropping samples would fold it onto
	// 4 kHz at full level.
	tone12k := mid(capture("tone12000", 16000))
	lvl := audiotest.DB(audiotest.RMS(tone12k) / (0.5 / 1.41421356))
	alias := audiotest.DB(audiotest.Goertzel(tone12k, 4000, 16000) / 0.5)
	t.Logf("12 kHz: output %.1f dB, alias at 4 kHz %.1f dB", lvl, alias)
	if lvl > -60 || alias > -60 {
		t.Errorf("12 kHz input: output %.1f dB, 4 kHz alias %.1f dB; want both below -60 dB", lvl, alias)
	}
}

func TestPlaybackTone(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		return []string{
			mustConf(t, dir,
				audiotest.ALSADevice{Name: "default", Playback: filepath.Join(dir, "played16.s16"), Rate: 16000, Channels: 1},
				audiotest.ALSADevice{Name: "spk48", Playback: filepath.Join(dir, "played48.s16")}),
			"PLAYED16=" + filepath.Join(dir, "played16.s16"),
			"PLAYED48=" + filepath.Join(dir, "played48.s16"),
		}
	}) {
		return
	}
	tone := audiotest.Tone(1000, 16000, time.Second)
	play := func(o Options) {
		t.Helper()
		sink, err := OpenPortAudioSink(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		if l := sink.Latency(); l <= 0 || l > 5*time.Second {
			t.Errorf("the playback device reports a latency of %v (the echo canceller aligns by it)", l)
		}
		for i := 0; i < len(tone); i += 960 {
			if _, err := sink.Write(tone[i:min(len(tone), i+960)]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}

	play(testOptions(t, ""))
	got := readRawEnv(t, "PLAYED16")
	if len(got) < len(tone) {
		t.Fatalf("played file has %d samples, want at least %d", len(got), len(tone))
	}
	for i := range tone {
		if got[i] != tone[i] {
			t.Fatalf("16 kHz playback differs at sample %d", i)
		}
	}
	if f := audiotest.PeakFrequency(got, 16000, 900, 1100, 1); f != 1000 {
		t.Errorf("played tone peaks at %v Hz, want 1000", f)
	}

	o := testOptions(t, "spk48")
	o.DeviceRate, o.DeviceChannels = 48000, 2
	play(o)
	st := readRawEnv(t, "PLAYED48")
	left, right := make([]int16, 0, len(st)/2), make([]int16, 0, len(st)/2)
	for i := 0; i+1 < len(st); i += 2 {
		left, right = append(left, st[i]), append(right, st[i+1])
	}
	if d := len(left) - 48000; d < -48 || d > 48 {
		t.Errorf("48 kHz playback has %d frames, want about 48000", len(left))
	}
	for name, ch := range map[string][]int16{"left": left, "right": right} {
		mid := ch[4800 : len(ch)-4800]
		if f := audiotest.PeakFrequency(mid, 48000, 900, 1100, 1); f != 1000 {
			t.Errorf("%s channel peaks at %v Hz, want 1000", name, f)
		}
		if a := audiotest.Goertzel(mid, 1000, 48000); audiotest.DB(a/0.5) < -0.5 {
			t.Errorf("%s channel 1 kHz at %.2f dB, want within 0.5 dB", name, audiotest.DB(a/0.5))
		}
	}
}

func TestDeviceSelection(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		return []string{mustConf(t, dir,
			audiotest.ALSADevice{Name: "default", Capture: "/dev/zero", Playback: filepath.Join(dir, "p.s16"), Rate: 16000},
			audiotest.ALSADevice{Name: "USB_Mic_Array", Capture: "/dev/zero"},
			audiotest.ALSADevice{Name: "hdmi_out", Playback: filepath.Join(dir, "h.s16")},
		)}
	}) {
		return
	}
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Device{}
	for _, d := range devs {
		t.Logf("%v", d)
		byName[d.Name] = d
		if d.HostAPI == "" || d.DefaultRate <= 0 {
			t.Errorf("device %v: missing host API or default rate", d)
		}
	}
	mic, ok := byName["USB_Mic_Array"]
	if !ok || mic.MaxInputChannels == 0 {
		t.Fatalf("USB_Mic_Array missing from %v", devs)
	}
	if def := byName["default"]; !def.DefaultInput || !def.DefaultOutput {
		t.Errorf("default device not flagged as default: %v", def)
	}

	for _, q := range []string{"mic_arr", "usb_mic_array", strconv.Itoa(mic.Index)} {
		src, err := OpenPortAudioSource(t.Context(), testOptions(t, q))
		if err != nil {
			t.Fatalf("device %q: %v", q, err)
		}
		if d := src.Device(); d.Name != "USB_Mic_Array" {
			t.Errorf("device %q opened %q, want USB_Mic_Array", q, d.Name)
		}
		src.Close()
	}
	sink, err := OpenPortAudioSink(t.Context(), testOptions(t, "HDMI"))
	if err != nil {
		t.Fatal(err)
	}
	if d := sink.Device(); d.Name != "hdmi_out" {
		t.Errorf("HDMI opened %q", d.Name)
	}
	sink.Close()

	_, err = OpenPortAudioSource(t.Context(), testOptions(t, "no such mic"))
	var de *DeviceError
	if !errors.As(err, &de) || !errors.Is(err, ErrDeviceNotFound) {
		t.Fatalf("missing device: %v, want a DeviceError", err)
	}
	for _, name := range []string{`"no such mic"`, `"USB_Mic_Array"`, `"default"`} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not mention %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "hdmi_out") && byName["hdmi_out"].MaxInputChannels == 0 {
		t.Errorf("error %q lists an output-only device among inputs", err)
	}
	// An index that does not exist.
	if _, err := OpenPortAudioSink(t.Context(), testOptions(t, "99")); !errors.Is(err, ErrDeviceNotFound) {
		t.Errorf("index 99: %v, want ErrDeviceNotFound", err)
	}
}

// A missing device is retried with backoff until the context ends, and
// only then does Open give up.
func TestMissingDeviceRetriesUntilCancel(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		return []string{mustConf(t, dir, audiotest.ALSADevice{Name: "default", Capture: "/dev/zero", Rate: 16000})}
	}) {
		return
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	attempts := 0
	o := Options{Device: "usb mic", Retry: backoff.Backoff{Base: time.Millisecond, Cap: 2 * time.Millisecond}}
	o.OnRetry = func(n int, err error) {
		attempts = n
		if !errors.Is(err, ErrDeviceNotFound) {
			t.Errorf("attempt %d: %v, want ErrDeviceNotFound", n, err)
		}
		if n == 5 {
			cancel()
		}
	}
	src, err := OpenPortAudioSource(ctx, o)
	if err == nil {
		src.Close()
		t.Fatal("opened a missing device")
	}
	if attempts != 5 {
		t.Errorf("gave up after %d attempts, want 5 (only when the context was cancelled)", attempts)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrDeviceNotFound) {
		t.Errorf("error %v: want both context.Canceled and ErrDeviceNotFound", err)
	}
}

// A device that is missing at start (here: its capture file does not exist
// yet, so ALSA cannot open it and PortAudio lists it without inputs) is
// found once it appears, because each attempt re-enumerates devices.
func TestDeviceAppearsLater(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		late := filepath.Join(dir, "late.s16")
		return []string{mustConf(t, dir,
			audiotest.ALSADevice{Name: "default", Capture: "/dev/zero", Rate: 16000},
			audiotest.ALSADevice{Name: "latemic", Capture: late}), "LATE=" + late}
	}) {
		return
	}
	tone := audiotest.Tone(440, 16000, 100*time.Millisecond)
	o := Options{Device: "latemic", DeviceRate: 16000, DeviceChannels: 1, Retry: backoff.Backoff{Base: time.Millisecond, Cap: time.Millisecond}}
	o.OnRetry = func(n int, err error) {
		if n == 3 {
			mustRaw(t, os.Getenv("LATE"), tone)
		}
	}
	src, err := OpenPortAudioSource(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got := make([]int16, len(tone))
	if _, err := ReadFull(src, got); err != nil {
		t.Fatal(err)
	}
	for i := range tone {
		if got[i] != tone[i] {
			t.Fatalf("sample %d differs", i)
		}
	}
}

func TestPortAudioCloseUnblocksAndIsIdempotent(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		return []string{mustConf(t, dir, audiotest.ALSADevice{Name: "default", Capture: "/dev/zero", Playback: "/dev/null", Rate: 16000})}
	}) {
		return
	}
	o := testOptions(t, "")
	raw, err := OpenPortAudioSource(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	src := Paced(raw, WireRate)
	buf := make([]int16, 160)
	if _, err := src.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(buf); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	sink, err := OpenPortAudioSink(t.Context(), testOptions(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	if _, err := sink.Write(buf); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	// PortAudio is terminated again once nothing uses it.
	pa.mu.Lock()
	refs := pa.refs
	pa.mu.Unlock()
	if refs != 0 {
		t.Errorf("PortAudio still referenced %d times after everything closed", refs)
	}
}

// TestASpeakerIsOpenedAtItsOwnFormatAndFallsBackToOneItTakes: a sink for
// 48 kHz stereo opens the device at 48 kHz stereo and plays each channel
// as it was written (1 kHz left, silence right), telling OnOpen; a device
// held to 44.1 kHz mono (DeviceRate, DeviceChannels: as one that takes
// nothing else) gets the channels' average at its rate, and the fallback is
// logged.
func TestASpeakerIsOpenedAtItsOwnFormatAndFallsBackToOneItTakes(t *testing.T) {
	if !isolated(t, func(dir string) []string {
		return []string{
			mustConf(t, dir,
				audiotest.ALSADevice{Name: "spk", Playback: filepath.Join(dir, "spk.s16")},
				audiotest.ALSADevice{Name: "small", Playback: filepath.Join(dir, "small.s16")}),
			"SPK=" + filepath.Join(dir, "spk.s16"), "SMALL=" + filepath.Join(dir, "small.s16"),
		}
	}) {
		return
	}
	tone := audiotest.Tone(1000, 48000, time.Second)
	frames := make([]int16, 2*len(tone))
	for i, v := range tone {
		frames[2*i] = v
	}
	var logs bytes.Buffer
	play := func(o Options) Format {
		t.Helper()
		var opened Format
		o.Rate, o.Channels = 48000, 2
		o.OnOpen = func(_ Device, f Format) { opened = f }
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		sink, err := OpenPortAudioSink(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		if f := sink.DeviceFormat(); f != opened {
			t.Errorf("OnOpen was told %v, the device is at %v", opened, f)
		}
		if c := sink.ConvertsRate(); c != (opened.Rate != 48000) {
			t.Errorf("a sink for 48 kHz on a device at %v: ConvertsRate %v", opened, c)
		}
		for i := 0; i < len(frames); i += 1920 {
			if _, err := sink.Write(frames[i:min(len(frames), i+1920)]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		return opened
	}

	if f := play(testOptions(t, "spk")); f != (Format{Rate: 48000, Channels: 2}) {
		t.Fatalf("the speaker was opened at %v, want 48000 Hz × 2 ch", f)
	}
	st := readRawEnv(t, "SPK")
	if len(st) < len(frames) {
		t.Fatalf("%d samples played, want %d", len(st), len(frames))
	}
	for i := range frames {
		if st[i] != frames[i] {
			t.Fatalf("48 kHz stereo playback differs at sample %d (channel %d)", i, i%2)
		}
	}
	if strings.Contains(logs.String(), "does not take") {
		t.Errorf("a fallback was logged for a device that takes the format: %s", logs.String())
	}

	o := testOptions(t, "small")
	o.DeviceRate, o.DeviceChannels = 44100, 1
	if f := play(o); f != (Format{Rate: 44100, Channels: 1}) {
		t.Fatalf("the small speaker was opened at %v", f)
	}
	mono := readRawEnv(t, "SMALL")
	if d := len(mono) - 44100; d < -50 || d > 50 {
		t.Errorf("%d samples at 44.1 kHz for a second", len(mono))
	}
	if a := audiotest.Goertzel(mono[4410:len(mono)-4410], 1000, 44100); math.Abs(audiotest.DB(a/0.25)) > 0.2 {
		t.Errorf("1 kHz at %.2f dB of the channels' average", audiotest.DB(a/0.25))
	}
	if !strings.Contains(logs.String(), "does not take") || !strings.Contains(logs.String(), "device_format=\"44100 Hz × 1 ch\"") {
		t.Errorf("the fallback was not logged: %s", logs.String())
	}
}
