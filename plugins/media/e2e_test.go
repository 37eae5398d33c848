package main

// End-to-end tests: the real media plugin binary, started by the real
// plugin manager over go-plugin, plays sound made here (sox, then Debian's
// encoders) served by a loopback HTTP server, into a recording AudioOut
// (host/pluginmgr/audiorec: the mixer is not part of these tests).

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	hostconfig "github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/pluginmgr/audiorec"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/proto/voice"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// material makes a 3 s 440 Hz sine in each format, once.
var (
	materialOnce sync.Once
	materialDir  string
	materialErr  error
)

var formats = []string{"wav", "mp3", "ogg", "opus", "flac", "aac"}

func material(t testing.TB) string {
	t.Helper()
	materialOnce.Do(func() {
		dir, err := os.MkdirTemp("", "media-material-")
		if err != nil {
			materialErr = err
			return
		}
		materialDir = dir
		wav := filepath.Join(dir, "tone.wav")
		steps := [][]string{
			{"sox", "-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "3", "sine", "440", "vol", "0.5"},
			{"sox", "-n", "-r", "22050", "-c", "1", "-b", "16", filepath.Join(dir, "mono.wav"), "synth", "3", "sine", "440", "vol", "0.5"},
			{"lame", "--quiet", "-b", "128", wav, filepath.Join(dir, "tone.mp3")},
			{"oggenc", "--quiet", "-o", filepath.Join(dir, "tone.ogg"), wav},
			{"opusenc", "--quiet", wav, filepath.Join(dir, "tone.opus")},
			{"flac", "--silent", "-o", filepath.Join(dir, "tone.flac"), wav},
			{"ffmpeg", "-nostdin", "-loglevel", "error", "-i", wav, "-c:a", "aac", "-f", "adts", filepath.Join(dir, "tone.aac")},
		}
		for _, s := range steps {
			if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
				materialErr = fmt.Errorf("%s: %v\n%s (scripts/install-deps.sh installs the encoders)", strings.Join(s, " "), err, out)
				return
			}
		}
		mp3, _ := os.ReadFile(filepath.Join(dir, "tone.mp3"))
		materialErr = os.WriteFile(filepath.Join(dir, "cut.ogg"), mp3[:64], 0o644)
	})
	if materialErr != nil {
		t.Fatal(materialErr)
	}
	return materialDir
}

// server serves the material, a radio with ICY metadata, playlists, and
// bad streams.
func server(t testing.TB, dir string) *httptest.Server {
	mp3, err := os.ReadFile(filepath.Join(dir, "tone.mp3"))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files/", http.FileServer(http.Dir(dir))))
	mux.HandleFunc("/radio", func(w http.ResponseWriter, r *http.Request) {
		const metaint = 8192
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Header().Set("icy-name", "Test FM")
		if r.Header.Get("Icy-MetaData") == "1" {
			w.Header().Set("icy-metaint", fmt.Sprint(metaint))
		}
		meta := []byte("StreamTitle='Chord One';")
		block := append([]byte{byte((len(meta) + 15) / 16)}, meta...)
		block = append(block, make([]byte, int(block[0])*16-len(meta))...)
		left := metaint
		for i := 0; r.Context().Err() == nil; i = (i + 1) % len(mp3) {
			if r.Header.Get("Icy-MetaData") == "1" && left == 0 {
				if _, err := w.Write(block); err != nil {
					return
				}
				left = metaint
			}
			n := min(left, len(mp3)-i, 4096)
			if _, err := w.Write(mp3[i : i+n]); err != nil {
				return
			}
			left -= n
			i += n - 1
		}
	})
	mux.HandleFunc("/list.m3u", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "#EXTM3U\n#EXTINF:-1,Test\nhttp://%s/files/tone.ogg\n", r.Host)
	})
	mux.HandleFunc("/list.pls", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "[playlist]\nNumberOfEntries=1\nFile1=http://%s/files/tone.flac\nTitle1=Test\n", r.Host)
	})
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		buf := make([]byte, 32<<10)
		for r.Context().Err() == nil {
			rand.Read(buf)
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body>not a sound</body></html>")
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write(mp3[:1000])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// shoutcast1 serves mp3 the way a SHOUTcast v1 server does: an "ICY 200 OK"
// status line, then the sound until the client goes.
func shoutcast1(t testing.TB, mp3 []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				// The request, up to its blank line.
				buf := make([]byte, 4096)
				var req []byte
				for !strings.Contains(string(req), "\r\n\r\n") {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					req = append(req, buf[:n]...)
				}
				if _, err := c.Write([]byte("ICY 200 OK\r\nicy-name:Old FM\r\ncontent-type:audio/mpeg\r\n\r\n")); err != nil {
					return
				}
				for {
					if _, err := c.Write(mp3); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// host runs the plugin manager with the media plugin and a recording output.
type host struct {
	t    testing.TB
	m    *pluginmgr.Manager
	out  *audiorec.Out
	disp *services.Dispatcher
	log  *testbin.Buffer // the host's log, the plugin's lines in it
	n    int
}

func startHost(t testing.TB, mediaConfig map[string]any, set ...func(p *hostconfig.Plugins)) *host {
	t.Helper()
	bin := testbin.Build(t, "./plugins/media")
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "media"), b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	log := &testbin.Buffer{}
	out := &audiorec.Out{}
	opts := pluginmgr.Options{Plugins: hostconfig.Default().Plugins, RuntimeDir: t.TempDir(), Audio: out,
		Log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	opts.Plugins.Dirs, opts.Plugins.StateDir = []string{dir}, t.TempDir()
	opts.Plugins.Config = map[string]any{"media": mediaConfig}
	for _, f := range set {
		f(&opts.Plugins)
	}
	reg := services.NewRegistry(services.RegistryOptions{})
	m := pluginmgr.New(opts, reg)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- m.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the plugin manager ended: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("host log:\n%s", log)
		}
	})
	return &host{t: t, m: m, out: out, log: log, disp: services.NewDispatcher(reg, services.DispatchOptions{Timeout: 60 * time.Second, MaxResult: 64 << 10, MaxInFlight: 16})}
}

// call calls as the owner (agenthost play, through the control socket).
func (h *host) call(method string, params any) voice.Outcome {
	return h.callAs(services.CallerOwner, method, params)
}

// callAs calls as caller (services.CallerUnknown: a context naming none).
func (h *host) callAs(caller services.Caller, method string, params any) voice.Outcome {
	h.n++
	p, _ := json.Marshal(params)
	ctx := context.Background()
	if caller != services.CallerUnknown {
		ctx = services.WithCaller(ctx, caller)
	}
	return h.disp.Dispatch(ctx, voice.Call{CallID: fmt.Sprint("c", h.n), Method: method, Params: p})
}

func (h *host) mustCall(method string, params any) json.RawMessage {
	h.t.Helper()
	o := h.call(method, params)
	if !o.Success {
		h.t.Fatalf("%s %v: %s", method, params, o.Error)
	}
	return o.Data
}

// children returns the commands of the media plugin's child processes.
func (h *host) children() []string {
	h.t.Helper()
	pid := 0
	for _, s := range h.m.Status() {
		if s.Name == "media" {
			pid = s.PID
		}
	}
	if pid == 0 {
		h.t.Fatal("the media plugin is not running")
	}
	var out []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := strings.LastIndexByte(string(b), ')')
		if fields := strings.Fields(string(b[i+1:])); i > 0 && len(fields) > 1 && fields[1] == fmt.Sprint(pid) {
			out = append(out, string(b[:i+1]))
		}
	}
	return out
}

// stream waits for the n-th stream opened on the output.
func (h *host) stream(n int) *audiorec.Stream {
	h.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := h.out.Streams(); len(s) >= n {
			return s[n-1]
		}
	}
	h.t.Fatalf("stream %d was never opened", n)
	return nil
}

// crossings counts the left channel's upward zero crossings in samples.
func crossings(samples []int16) int {
	n := 0
	for i := 2; i < len(samples); i += 2 {
		if samples[i-2] < 0 && samples[i] >= 0 {
			n++
		}
	}
	return n
}

// TestEveryFormatPlaysAsTheSoundItHolds plays the 3 s 440 Hz tone in each
// format from a file, over HTTP and through m3u and pls playlists: the
// output gets about 3 s of 48 kHz stereo at 440 Hz, played out.
func TestEveryFormatPlaysAsTheSoundItHolds(t *testing.T) {
	dir := material(t)
	srv := server(t, dir)
	h := startHost(t, map[string]any{"dirs": []string{dir}})
	var urls []string
	for _, f := range formats {
		urls = append(urls, filepath.Join(dir, "tone."+f), srv.URL+"/files/tone."+f)
	}
	urls = append(urls, srv.URL+"/list.m3u", srv.URL+"/list.pls", filepath.Join(dir, "mono.wav"))
	for i, u := range urls {
		h.mustCall("play_media", map[string]any{"url": u})
		s := h.stream(i + 1)
		select {
		case <-s.Ended():
		case <-time.After(60 * time.Second):
			t.Fatalf("%s never ended", u)
		}
		samples, total, playedOut := s.Samples()
		if !playedOut || s.Class != "media" || s.Format.Rate != 48000 || s.Format.Channels != 2 {
			t.Errorf("%s: played out %v, class %s, format %v; want played out media at 48000 Hz stereo", u, playedOut, s.Class, s.Format)
		}
		if secs := float64(total) / 2 / 48000; secs < 2.9 || secs > 3.2 {
			t.Errorf("%s: %.2f s of sound, want 3", u, secs)
			continue
		}
		// 440 Hz: about 440 crossings in the middle second.
		if c := crossings(samples[48000*2 : 2*48000*2]); c < 435 || c > 445 {
			t.Errorf("%s: %d zero crossings in a second, want 440", u, c)
		}
		// As loud as it was made (half of full scale), mono or stereo.
		if db := 20 * math.Log10(rms(samples[48000*2:2*48000*2])/(0.5*math.MaxInt16/math.Sqrt2)); math.Abs(db) > 0.5 {
			t.Errorf("%s: %.1f dB from the level it was made at", u, db)
		}
	}
}

// TestRadioTellsItsTitleAndPausesResumesStops plays an endless ICY stream:
// status names the station and the title from the metadata, pause and
// resume reach the host's stream, stop ends it.
func TestRadioTellsItsTitleAndPausesResumesStops(t *testing.T) {
	dir := material(t)
	srv := server(t, dir)
	h := startHost(t, map[string]any{})
	h.mustCall("play_media", map[string]any{"url": srv.URL + "/radio"})
	s := h.stream(1)
	if s.Source != "plugin:media/Test FM" {
		t.Errorf("stream source %q, want plugin:media/Test FM", s.Source)
	}
	var st struct {
		Playing []mediaStatus `json:"playing"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := json.Unmarshal(h.mustCall("get_media_status", map[string]any{}), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Playing) == 1 && st.Playing[0].Title != "" && st.Playing[0].Position > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never had a title and a position: %+v", st)
		}
	}
	if p := st.Playing[0]; p.Station != "Test FM" || p.Title != "Chord One" || p.Class != "media" || p.Position <= 0 {
		t.Errorf("status %+v, want station Test FM, title Chord One, class media, a position", p)
	}
	if kids := h.children(); len(kids) != 1 || !strings.Contains(kids[0], "(ffmpeg)") {
		t.Errorf("while playing the plugin has children %v, want its one ffmpeg", kids)
	}
	h.mustCall("pause_media", map[string]any{})
	if err := json.Unmarshal(h.mustCall("get_media_status", map[string]any{}), &st); err != nil || len(st.Playing) != 1 || !st.Playing[0].Paused {
		t.Errorf("status after pause_media: %+v %v, want it paused", st, err)
	}
	h.mustCall("resume_media", map[string]any{})
	if got := s.Pauses(); len(got) != 2 || !got[0] || got[1] {
		t.Errorf("pauses at the host %v, want [true false]", got)
	}
	h.mustCall("stop_media", map[string]any{})
	select {
	case <-s.Stopped():
	case <-time.After(30 * time.Second):
		t.Fatal("the stream was not stopped")
	}
	if err := json.Unmarshal(h.mustCall("get_media_status", map[string]any{}), &st); err != nil || len(st.Playing) != 0 {
		t.Errorf("after stop: %+v %v, want nothing playing", st, err)
	}
	if kids := h.children(); len(kids) != 0 {
		t.Errorf("after stop the plugin still has children %v, want its decoder gone", kids)
	}
	if o := h.call("pause_media", map[string]any{}); o.Success || !strings.Contains(o.Error, "no media or announcement is playing") {
		t.Errorf("pause with nothing playing: %+v", o)
	}

	// A SHOUTcast v1 server's "ICY 200 OK" plays too.
	mp3, err := os.ReadFile(filepath.Join(dir, "tone.mp3"))
	if err != nil {
		t.Fatal(err)
	}
	h.mustCall("play_media", map[string]any{"url": shoutcast1(t, mp3)})
	if s := h.stream(2); s.Source != "plugin:media/Old FM" {
		t.Errorf("SHOUTcast v1 stream source %q, want plugin:media/Old FM", s.Source)
	}
	h.mustCall("stop_media", map[string]any{})
}

// TestBadInputGivesAClearErrorAndThePluginKeepsServing: a 404, a page, an
// endless stream of garbage, a cut-off file, a stream that stalls and a
// file outside the allowed folders each fail play_media with the reason,
// and the plugin plays the next good URL.
func TestBadInputGivesAClearErrorAndThePluginKeepsServing(t *testing.T) {
	dir := material(t)
	srv := server(t, dir)
	h := startHost(t, map[string]any{"dirs": []string{dir}, "stall_timeout": "2s"})
	for url, want := range map[string]string{
		srv.URL + "/nothing":           "404 Not Found",
		srv.URL + "/page":              "not playable sound",
		srv.URL + "/garbage":           "not playable sound",
		filepath.Join(dir, "cut.ogg"):  "not playable sound",
		srv.URL + "/stall":             "stalled",
		"/etc/passwd":                  "outside the folders",
		"gopher://example.org/x":       "only http, https and files",
		filepath.Join(dir, "none.mp3"): "there is no file",
	} {
		o := h.call("play_media", map[string]any{"url": url})
		if o.Success || !strings.Contains(o.Error, want) {
			t.Errorf("%s: %+v, want an error saying %q", url, o, want)
		}
	}
	if n := len(h.out.Streams()); n != 0 {
		t.Errorf("%d streams opened for bad input", n)
	}
	h.mustCall("play_media", map[string]any{"url": srv.URL + "/files/tone.mp3", "class": "announcement"})
	if s := h.stream(1); s.Class != "announcement" || s.Source != "plugin:media/"+srv.URL+"/files/tone.mp3" {
		t.Errorf("class %s source %s, want an announcement named by its URL", s.Class, s.Source)
	}
}

// TestMissingDecoderIsNamedByPlayMedia: without ffmpeg the plugin still
// starts and serves, and play_media says what to install.
func TestMissingDecoderIsNamedByPlayMedia(t *testing.T) {
	h := startHost(t, map[string]any{"ffmpeg": "/nonexistent/ffmpeg"})
	o := h.call("play_media", map[string]any{"url": "http://127.0.0.1:1/x.mp3"})
	if o.Success || !strings.Contains(o.Error, "apt-get install ffmpeg") {
		t.Errorf("play_media: %+v, want an error naming the missing decoder", o)
	}
	h.mustCall("get_media_status", map[string]any{})
}

func rms(p []int16) float64 {
	var sum float64
	for _, v := range p {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(len(p), 1)))
}
