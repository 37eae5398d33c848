package main

// The decoder under hostile input: absurd formats, a header that lies, a
// decoder that hangs or crashes. The real plugin binary and the real ffmpeg;
// a hang or a crash is provoked by a fake ffmpeg (fakeFFmpeg) that runs the
// real one and stops or kills it when the test says.

import (
	"github.com/agenthost/agenthost/audio/audiotest"

	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// decoderBound is the decoder's default memory bound (decoder_memory).
const decoderBound = 128 << 20

// peakWatch follows the media plugin's ffmpeg processes while a test runs
// and keeps the highest resident memory (VmHWM) each reached.
type peakWatch struct {
	mu    sync.Mutex
	peak  map[int]int64 // pid -> bytes
	stop  chan struct{}
	ended chan struct{}
}

func watchPeaks(t testing.TB, h *host) *peakWatch {
	w := &peakWatch{peak: map[int]int64{}, stop: make(chan struct{}), ended: make(chan struct{})}
	plugin := 0
	for _, s := range h.m.Status() {
		if s.Name == "media" {
			plugin = s.PID
		}
	}
	go func() {
		defer close(w.ended)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if plugin == 0 {
				for _, s := range h.m.Status() {
					if s.Name == "media" {
						plugin = s.PID
					}
				}
				continue
			}
			for pid, hwm := range decoderHWM(plugin) {
				w.mu.Lock()
				w.peak[pid] = max(w.peak[pid], hwm)
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *peakWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.ended
}

// max is the highest peak seen so far.
func (w *peakWatch) max() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m int64
	for _, v := range w.peak {
		m = max(m, v)
	}
	return m
}

// decoderHWM reads VmHWM of each ffmpeg child of the process plugin.
func decoderHWM(plugin int) map[int]int64 {
	out := map[int]int64{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		fields := strings.Fields(string(b[i+1:]))
		if i < 0 || len(fields) < 2 || fields[1] != strconv.Itoa(plugin) || !strings.Contains(string(b[:i]), "(ffmpeg") {
			continue
		}
		status, err := os.ReadFile(filepath.Join(filepath.Dir(f), "status"))
		if err != nil {
			continue
		}
		if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status); m != nil {
			kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out[pid] = kb << 10
		}
	}
	return out
}

// loggedPeaks are the decoders' peak resident memory (bytes) as the plugin
// logged them when each ended (the kernel's count for the waited child).
func loggedPeaks(h *host) []int64 {
	var out []int64
	for _, m := range regexp.MustCompile(`the decoder ended.*peak_rss_kib=(\d+)`).FindAllStringSubmatch(h.log.String(), -1) {
		kb, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, kb<<10)
	}
	return out
}

// status is get_media_status's answer.
func (h *host) status() (playing []mediaStatus, lastEnded string) {
	h.t.Helper()
	var st struct {
		Playing   []mediaStatus `json:"playing"`
		LastEnded string        `json:"last_ended"`
	}
	if err := json.Unmarshal(h.mustCall("get_media_status", map[string]any{}), &st); err != nil {
		h.t.Fatal(err)
	}
	return st.Playing, st.LastEnded
}

// waitEnded polls get_media_status until nothing plays and returns
// last_ended; a sound still playing after a minute fails the test.
func (h *host) waitEnded(what string) string {
	h.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		playing, last := h.status()
		if len(playing) == 0 {
			return last
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: still playing after a minute: %+v", what, playing)
		}
	}
}

// TestAbsurdFormatsAreRefusedAndTheDecoderIsBounded: a WAV whose header says
// 4 Hz or 1 Hz (resampled to 48 kHz, 600 MiB and 2.2 GiB), one of 64
// channels, from a file and over HTTP, are refused by play_media with the
// reason; a FLAC whose header says 48 kHz and whose frames say 1 Hz passes
// that check and is stopped by the decoder's memory bound, which
// last_ended names. No decoder's resident memory passes the bound plus
// what a normal sound's decoder takes (its shared libraries).
func TestAbsurdFormatsAreRefusedAndTheDecoderIsBounded(t *testing.T) {
	dir := t.TempDir()
	audiotest.LyingWAV(t, filepath.Join(dir, "4hz.wav"), 4, 1, 2000, 0)
	audiotest.LyingWAV(t, filepath.Join(dir, "1hz.wav"), 1, 1, 2000, 0)
	audiotest.LyingWAV(t, filepath.Join(dir, "64ch.wav"), 48000, 64, 4800, 0)
	audiotest.LyingWAV(t, filepath.Join(dir, "normal.wav"), 48000, 2, 48000*3, 0)
	lie := audiotest.LyingFLAC(t, dir)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	h := startHost(t, map[string]any{"dirs": []string{dir}})

	// What a normal sound's decoder takes.
	normal := watchPeaks(t, h)
	h.mustCall("play_media", map[string]any{"url": filepath.Join(dir, "normal.wav")})
	h.waitEnded("a normal WAV")
	normal.close()
	base := normal.max()
	if base == 0 {
		t.Fatal("the normal sound's decoder was never seen")
	}
	t.Logf("a normal sound's decoder: %d MiB resident at its peak", base>>20)

	peaks := watchPeaks(t, h)
	for _, c := range []struct{ url, want string }{
		{filepath.Join(dir, "4hz.wav"), "4 Hz"},
		{srv.URL + "/1hz.wav", "1 Hz"},
		{filepath.Join(dir, "1hz.wav"), "1 Hz"},
		{srv.URL + "/64ch.wav", "64 channels"},
	} {
		o := h.call("play_media", map[string]any{"url": c.url})
		t.Logf("%s: %s", filepath.Base(c.url), o.Error)
		if o.Success || !strings.Contains(o.Error, c.want) {
			t.Errorf("%s: success %v %s %s, want an error naming %q", c.url, o.Success, o.Data, o.Error, c.want)
			h.call("stop_media", map[string]any{})
		}
	}
	if o := h.call("play_media", map[string]any{"url": lie}); o.Success {
		last := h.waitEnded("the lying FLAC")
		t.Logf("the lying FLAC: %s", last)
		if !strings.Contains(last, "memory") {
			t.Errorf("the lying FLAC ended with %q, want its decoder's memory bound named", last)
		}
	} else if !strings.Contains(o.Error, "memory") {
		t.Errorf("the lying FLAC: %s, want its decoder's memory bound named", o.Error)
	}
	peaks.close()
	t.Logf("the decoders' peaks (MiB) as logged %v, as seen %d", mib(loggedPeaks(h)), peaks.max()>>20)
	limit := int64(decoderBound) + base
	for _, p := range append(loggedPeaks(h), peaks.max()) {
		if p > limit {
			t.Errorf("a decoder reached %d MiB resident, more than its bound (%d MiB) and a normal decoder's %d MiB",
				p>>20, decoderBound>>20, base>>20)
		}
	}
	if len(loggedPeaks(h)) < 6 {
		t.Errorf("the plugin logged the peak of %d decoders, want each of the 6", len(loggedPeaks(h)))
	}
}

func mib(b []int64) []int64 {
	out := make([]int64, len(b))
	for i, v := range b {
		out[i] = v >> 20
	}
	return out
}
