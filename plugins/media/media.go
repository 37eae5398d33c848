package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// config is plugins.config.media.
type config struct {
	// Dirs are the folders local files may be played from (none by default).
	Dirs []string `json:"dirs"`
	// FFmpeg is the decoder's path ("ffmpeg": looked up in PATH).
	FFmpeg string `json:"ffmpeg"`
	// StallTimeout: a network stream that sends nothing this long fails.
	StallTimeout string `json:"stall_timeout"`
	// StartTimeout: play_media fails when no sound is decoded this soon.
	StartTimeout string `json:"start_timeout"`
	// HangTimeout: a decoder that gives no sound this long while fed is ended.
	HangTimeout string `json:"hang_timeout"`
	// DecoderMemory bounds each decoder's memory (limits.go): "128MiB".
	DecoderMemory string `json:"decoder_memory"`

	ffmpeg   string
	noFFmpeg error // why there is no decoder; play_media says it
	stall    time.Duration
	start    time.Duration
	hang     time.Duration
	memory   int64 // bytes
}

func parseConfig(raw json.RawMessage) (config, error) {
	c := config{FFmpeg: "ffmpeg", StallTimeout: "10s", StartTimeout: "20s", HangTimeout: "5s", DecoderMemory: "128MiB"}
	if err := sdk.DecodeConfig(raw, &c); err != nil {
		return c, err
	}
	var err error
	if c.memory, err = parseMemory(c.DecoderMemory); err != nil {
		return c, err
	}
	if c.stall, err = time.ParseDuration(c.StallTimeout); err != nil || c.stall <= 0 {
		return c, fmt.Errorf("stall_timeout %q is not a positive duration like 10s", c.StallTimeout)
	}
	if c.start, err = time.ParseDuration(c.StartTimeout); err != nil || c.start <= 0 {
		return c, fmt.Errorf("start_timeout %q is not a positive duration like 20s", c.StartTimeout)
	}
	if c.hang, err = time.ParseDuration(c.HangTimeout); err != nil || c.hang <= 0 {
		return c, fmt.Errorf("hang_timeout %q is not a positive duration like 5s", c.HangTimeout)
	}
	for _, d := range c.Dirs {
		if !filepath.IsAbs(d) {
			return c, fmt.Errorf("dirs: %q must be an absolute path", d)
		}
	}
	if c.ffmpeg, err = exec.LookPath(c.FFmpeg); err != nil {
		// Not a config error: the plugin serves, and play_media says why it cannot.
		c.noFFmpeg = fmt.Errorf("the decoder %q is not installed (apt-get install ffmpeg): %v", c.FFmpeg, err)
	}
	return c, nil
}

// media is the plugin: at most one sound per class (media, announcement).
type media struct {
	// swap is held while the sound of a class is replaced (the old one
	// stopped, the new one started): two plays at once take turns, and a
	// class never holds two streams of the host's.
	swap map[string]*sync.Mutex

	mu      sync.Mutex
	cfg     config
	playing map[string]*playback // by class
	last    map[string]string    // by class: how the last sound ended
}

// playback is one sound playing.
type playback struct {
	url, class string
	src        *source
	dec        *decoder
	pb         *sdk.Playback
	ended      chan struct{} // closed once watch has cleaned up
	replaced   atomic.Bool   // a new play of its class stopped it
}

func newMedia() *media {
	return &media{playing: map[string]*playback{}, last: map[string]string{},
		swap: map[string]*sync.Mutex{"media": {}, "announcement": {}}}
}

func (m *media) plugin() sdk.Plugin {
	type playParams struct {
		URL   string `json:"url" desc:"What to play: an http(s) URL (a file, internet radio, an m3u or pls playlist) or a local file's path" minLength:"1" maxLength:"2048"`
		Class string `json:"class,omitempty" desc:"media (the default: music and radio, turned down while the assistant listens and speaks) or announcement (a message over ducked media)" enum:"media,announcement"`
	}
	type none struct{}
	type which struct {
		Class string `json:"class,omitempty" desc:"announcement or media; none: the announcement if one plays, else the music or radio" enum:"media,announcement"`
	}
	play := sdk.TypedService("play_media", "Play music, internet radio or a sound from a URL through the speaker; returns once it plays",
		func(ctx context.Context, p playParams) (any, error) { return m.play(ctx, p.URL, p.Class) })
	play.Timeout = 30 * time.Second // the start timeout (20 s) and a playlist's fetch
	return sdk.Plugin{
		Name: "media", Version: "1.0.0",
		Configure: func(raw json.RawMessage) error {
			c, err := parseConfig(raw)
			if err != nil {
				return err
			}
			m.mu.Lock()
			m.cfg = c
			m.mu.Unlock()
			return nil
		},
		Services: []sdk.Service{
			play,
			sdk.TypedService("pause_media", "Pause the announcement playing, else the music or radio (or the class given)",
				func(ctx context.Context, w which) (any, error) { return m.pause(ctx, w.Class, true) }),
			sdk.TypedService("resume_media", "Resume the paused announcement, else the paused music or radio (or the class given)",
				func(ctx context.Context, w which) (any, error) { return m.pause(ctx, w.Class, false) }),
			sdk.TypedService("stop_media", "Stop the announcement playing, else the music or radio (or the class given)",
				func(_ context.Context, w which) (any, error) { return m.stop(w.Class) }),
			sdk.TypedService("get_media_status", "What plays: URL, position, paused, the station and title of internet radio",
				func(context.Context, none) (any, error) { return m.status(), nil }),
		},
	}
}

// play starts url; it returns once the first sound is decoded and the host
// took the stream, or with why not. A sound of the same class stops.
func (m *media) play(ctx context.Context, url, class string) (any, error) {
	if class == "" {
		class = "media"
	}
	if m.swap[class] == nil {
		return nil, fmt.Errorf("class %q: use media or announcement", class)
	}
	m.mu.Lock()
	cfg := m.cfg
	m.mu.Unlock()
	if cfg.noFFmpeg != nil {
		return nil, cfg.noFFmpeg
	}
	src, err := newOpener(ctx, cfg).open(ctx, url)
	if err != nil {
		return nil, err
	}
	dec, err := decode(cfg, src)
	if err != nil {
		src.Close()
		return nil, err
	}
	fail := func(err error) (any, error) {
		src.Close()
		dec.end()
		return nil, err
	}
	head, err := dec.first(ctx, cfg.start)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", src.url, err))
	}
	name := displayName(src)
	// The sound playing in this class stops first: the host counts the
	// plugin's streams (plugins.audio.max_streams, 2), and with a song and
	// an announcement playing a third would be refused.
	swap := m.swap[class]
	swap.Lock()
	defer swap.Unlock()
	m.mu.Lock()
	old := m.playing[class]
	m.mu.Unlock()
	if old != nil {
		old.replaced.Store(true)
		old.pb.Stop() // returns once the host let it go
		<-old.ended
	}
	pb, err := sdk.Play(context.WithoutCancel(ctx), io.MultiReader(bytes.NewReader(head), dec.out),
		sdk.Audio{Name: name, Class: class, Rate: outRate, Channels: outChannels})
	if err != nil {
		return fail(err)
	}
	p := &playback{url: src.url, class: class, src: src, dec: dec, pb: pb, ended: make(chan struct{})}
	m.mu.Lock()
	m.playing[class] = p
	m.mu.Unlock()
	go m.watch(p)
	slog.Info("playing", "class", class, "station", src.station)
	return map[string]any{"playing": src.url, "class": class, "station": src.station}, nil
}

// watch waits for p to end, ends its decoder and source, and notes why.
func (m *media) watch(p *playback) {
	defer close(p.ended)
	err := p.pb.Wait()
	feedErr := p.dec.feedFailure() // before the source is closed under it
	p.src.Close()
	p.dec.end()
	why := "played to the end"
	if p.replaced.Load() {
		why = "replaced by a new play_media of its class"
	} else if ended := p.dec.ending(feedErr); ended != "" && !errors.Is(err, sdk.ErrStopped) {
		why = ended // the decoder's or the stream's failure, not what the host saw of it
	} else if err != nil {
		why = err.Error()
	} else if msg := strings.TrimSpace(p.dec.stderr.String()); msg != "" {
		why = "played what could be decoded; the decoder said: " + p.dec.failure()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.playing[p.class] == p {
		delete(m.playing, p.class)
		m.last[p.class] = fmt.Sprintf("%s: %s", p.url, why)
	}
}

// current is the sound of class, or with none given the announcement if
// one plays, else the media; paused: the first whose pause is that (for
// resume_media: a paused one).
func (m *media) current(class string, paused bool) (*playback, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if class != "" {
		if p := m.playing[class]; p != nil {
			return p, nil
		}
		if class == "announcement" {
			return nil, errors.New("no announcement is playing")
		}
		return nil, errors.New("no media is playing")
	}
	for _, c := range []string{"announcement", "media"} {
		if p := m.playing[c]; p != nil && p.pb.Paused() == paused {
			return p, nil
		}
	}
	if paused {
		return nil, errors.New("nothing is paused")
	}
	return nil, errors.New("no media or announcement is playing")
}

func (m *media) pause(ctx context.Context, class string, paused bool) (any, error) {
	// To pause: one not paused yet; to resume: a paused one.
	p, err := m.current(class, !paused)
	if err != nil {
		return nil, err
	}
	if err := p.pb.Pause(ctx, paused); err != nil {
		return nil, err
	}
	if paused {
		return "paused " + p.url, nil
	}
	return "resumed " + p.url, nil
}

func (m *media) stop(class string) (any, error) {
	p, err := m.current(class, false)
	if err != nil && class == "" {
		p, err = m.current(class, true) // a paused one stops too
	}
	if err != nil {
		return nil, err
	}
	p.pb.Stop()
	<-p.ended
	return "stopped " + p.url, nil
}

// mediaStatus is get_media_status's answer, one entry per class.
type mediaStatus struct {
	URL      string  `json:"url"`
	Class    string  `json:"class"`
	Position float64 `json:"position_s"`
	Paused   bool    `json:"paused"`
	// Held is how the host holds it by its own policy now: "ducked" or
	// "paused" (for the assistant, an announcement or a ring), or "".
	Held    string `json:"held,omitempty"`
	Station string `json:"station,omitempty"`
	Title   string `json:"title,omitempty"`
}

func (m *media) status() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	playing := []mediaStatus{}
	for _, class := range []string{"media", "announcement"} {
		if p := m.playing[class]; p != nil {
			playing = append(playing, mediaStatus{URL: p.url, Class: class, Position: p.pb.Sent().Seconds(),
				Paused: p.pb.Paused(), Held: p.pb.Held(), Station: p.src.station, Title: p.src.meta.Title()})
		}
	}
	out := map[string]any{"playing": playing}
	if last := m.last["media"]; last != "" {
		out["last_ended"] = last
	}
	if last := m.last["announcement"]; last != "" {
		out["last_announcement_ended"] = last
	}
	return out
}

// displayName names the sound in the host's logs and status: the station,
// else the URL without its query and credentials, else the file's name; at
// most 200 bytes.
func displayName(src *source) string {
	name := src.station
	if name == "" {
		name = filepath.Base(src.url)
		if u, err := url.Parse(src.url); err == nil && u.Host != "" {
			name = safeURL(u)
		}
	}
	for len(name) > 200 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}
