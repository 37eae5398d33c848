package pluginsound_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/pluginsound"
)

const rate = 16000

// speaker takes the time a device takes to play what it is given.
type speaker struct{}

func (speaker) Write(p []int16) (int, error) {
	time.Sleep(time.Duration(len(p)) * time.Second / rate)
	return len(p), nil
}
func (speaker) Close() error { return nil }

// hooks records the hook events run.
type hooks struct {
	mu  sync.Mutex
	got []string
}

func (h *hooks) run(event string, f map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := fmt.Sprintf("%s %s %s %s", event, f["STATE"], f["CLASS"], f["SOURCE"])
	if f["BY"] != "" {
		line += " by " + f["BY"]
	}
	h.got = append(h.got, line)
}

func (h *hooks) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// start runs a mixer in mode (duck or pause) and an Out on it until the test ends.
func start(t *testing.T, mode string) (*mixer.Mixer, *pluginsound.Out, *hooks) {
	m := mixer.New(speaker{}, mixer.Options{Rate: rate, MediaWhileActive: mode})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	h := &hooks{}
	return m, pluginsound.New(pluginsound.Options{Mixer: m, Hook: h.run}), h
}

// feed writes a tone to s until it is stopped.
func feed(s pluginmgr.AudioStream) {
	p := make([]int16, rate/50)
	for i := range p {
		p[i] = int16(8000 * (i%16 - 8) / 8)
	}
	go func() {
		for {
			if _, err := s.Write(p); err != nil {
				return
			}
		}
	}()
}

func TestMediaHookTellsDuckingAndItsEndWithoutTheURLsSecret(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, out, h := start(t, mixer.Duck)
		s, err := out.Open("plugin:media/http://radio.example/live?token=s3cret#frag", "media", audio.Format{Rate: rate, Channels: 1})
		if err != nil {
			t.Fatal(err)
		}
		feed(s)
		time.Sleep(time.Second)
		m.SetActive(true) // a turn
		time.Sleep(time.Second)
		m.SetActive(false)
		time.Sleep(time.Second)
		s.Stop()
		src := "media plugin:media/http://radio.example/live"
		want := []string{"media started " + src, "media ducked " + src + " by host", "media resumed " + src, "media stopped " + src}
		if got := h.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("hook events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if st := out.Stats(); st.Started["media"] != 1 || st.Held["ducked"] != 1 || st.Held["paused"] != 0 {
			t.Errorf("stats %+v: want 1 media started, 1 ducked", st)
		}
	})
}

func TestMediaHookSaysWhoPausedIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, out, h := start(t, mixer.Pause)
		s, err := out.Open("plugin:media/Example FM", "media", audio.Format{Rate: 44100, Channels: 2})
		if err != nil {
			t.Fatal(err)
		}
		feed(s)
		time.Sleep(time.Second)
		m.SetActive(true)
		time.Sleep(time.Second)
		m.SetActive(false)
		time.Sleep(time.Second)
		s.Pause(true) // the owner's pause_media
		time.Sleep(time.Second)
		s.Pause(false)
		time.Sleep(time.Second)
		s.Stop()
		src := "media plugin:media/Example FM"
		want := []string{"media started " + src, "media paused " + src + " by host", "media resumed " + src,
			"media paused " + src + " by plugin", "media resumed " + src, "media stopped " + src}
		if got := h.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("hook events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if st := out.Stats(); st.Held["paused"] != 1 || st.Held["ducked"] != 0 {
			t.Errorf("stats %+v: want 1 paused by the host (the plugin's own pause is not counted)", st)
		}
	})
}

// TestPluginEarconsLeaveTheSpeakersRoom: plugins' streams of any class
// (earcons too, which the mixer's own count leaves out) never take the
// streams kept for the speaker's own reply, earcon and ring.
func TestPluginEarconsLeaveTheSpeakersRoom(t *testing.T) {
	m := mixer.New(speaker{}, mixer.Options{Rate: rate})
	out := pluginsound.New(pluginsound.Options{Mixer: m})
	f := audio.Format{Rate: rate, Channels: 1}
	var opened []pluginmgr.AudioStream
	for i := range m.Options().MaxStreams {
		class := []string{"earcon", "media", "announcement"}[i%3]
		if s, err := out.Open(fmt.Sprintf("plugin:p%d/ding", i), class, f); err == nil {
			opened = append(opened, s)
		}
	}
	defer func() {
		for _, s := range opened {
			s.Stop()
		}
	}()
	if want := m.Options().MaxStreams - mixer.Reserved; len(opened) != want {
		t.Errorf("plugins opened %d streams, want %d", len(opened), want)
	}
	for _, c := range []mixer.Class{mixer.Voice, mixer.Voice, mixer.Earcon, mixer.Ring} {
		s, err := m.Open("the speaker's own "+c.String(), c, f)
		if err != nil {
			t.Fatalf("with the plugins' streams open: %v", err)
		}
		defer s.Stop()
	}
}

// TestAPluginResumedDuringATurnIsToldTheHostHoldsIt: with media paused for
// the assistant, a plugin that paused its sound and resumes it while a turn
// goes on (the owner's "resume the music", answered within the turn) is
// still held by the host: the plugin is told paused, the hook says paused
// by the host, and the host's pause is counted; after the turn it resumes.
func TestAPluginResumedDuringATurnIsToldTheHostHoldsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, out, h := start(t, mixer.Pause)
		s, err := out.Open("plugin:media/Example FM", "media", audio.Format{Rate: rate, Channels: 1})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var heard []string
		s.(pluginmgr.AudioHolder).OnHeld(func(state string) { mu.Lock(); heard = append(heard, state); mu.Unlock() })
		feed(s)
		time.Sleep(time.Second)
		s.Pause(true) // pause_media
		time.Sleep(time.Second)
		m.SetActive(true) // a turn
		time.Sleep(time.Second)
		s.Pause(false) // resume_media, within the turn
		time.Sleep(time.Second)
		mu.Lock()
		during := strings.Join(heard, " ")
		mu.Unlock()
		m.SetActive(false)
		time.Sleep(time.Second)
		s.Stop()
		if during != "paused" {
			t.Errorf("resumed within the turn, the plugin heard %q, want paused (the host holds it)", during)
		}
		src := "media plugin:media/Example FM"
		want := []string{"media started " + src, "media paused " + src + " by plugin", "media paused " + src + " by host",
			"media resumed " + src, "media stopped " + src}
		if got := h.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("hook events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if st := out.Stats(); st.Held["paused"] != 1 {
			t.Errorf("stats %+v: want the host's pause counted once", st)
		}
	})
}

// TestAPluginCannotFloodTheMediaHook: a plugin that opens and stops
// streams, or pauses and resumes one, as fast as it can runs the media hook
// a bounded number of times (each run is a shell, and the hooks' slots are
// shared with mute, wake and the rest); once it stops, the hook hears the
// next sound again.
func TestAPluginCannotFloodTheMediaHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, out, h := start(t, mixer.Duck)
		f := audio.Format{Rate: rate, Channels: 1}
		for range 200 {
			s, err := out.Open("plugin:spam/beep", "announcement", f)
			if err != nil {
				t.Fatal(err)
			}
			s.Stop()
		}
		s, err := out.Open("plugin:spam/beep", "media", f)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			s.Pause(true)
			synctest.Wait()
			s.Pause(false)
			synctest.Wait()
		}
		s.Stop()
		if n := len(h.events()); n > 40 {
			t.Errorf("a burst of 600 changes ran the media hook %d times, want at most 40", n)
		}
		time.Sleep(time.Minute)
		before := len(h.events())
		s, err = out.Open("plugin:media/Example FM", "media", f)
		if err != nil {
			t.Fatal(err)
		}
		s.Stop()
		if got := h.events()[before:]; len(got) != 2 {
			t.Errorf("a minute after the flood, a sound's start and stop ran the hook as %q, want both", got)
		}
	})
}

// TestAPluginToldItsHoldAsItStartsEndsToldTheLast: the hold a stream had
// when the plugin asked to hear of it (OnHeld), told late, does not come
// after a change the watcher told meanwhile: the plugin is left with what
// the mixer does now.
func TestAPluginToldItsHoldAsItStartsEndsToldTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, out, _ := start(t, mixer.Duck)
		s, err := out.Open("plugin:media/Example FM", "media", audio.Format{Rate: rate, Channels: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		feed(s)
		m.SetActive(true) // a turn: ducked before the plugin asks
		time.Sleep(time.Second)
		var mu sync.Mutex
		var heard []string
		late := make(chan struct{}) // holds back the first telling, as a busy scheduler may
		go s.(pluginmgr.AudioHolder).OnHeld(func(state string) {
			if state == "ducked" {
				<-late
			}
			mu.Lock()
			heard = append(heard, state)
			mu.Unlock()
		})
		synctest.Wait()
		m.SetActive(false) // the turn ends
		time.Sleep(time.Second)
		close(late)
		time.Sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		if len(heard) == 0 || heard[len(heard)-1] != "playing" {
			t.Errorf("the plugin heard %q, want playing last (the turn is over)", heard)
		}
	})
}

// TestASoundGoneFromTheMixerDuckedIsNotToldResumed: a ducked stream that
// leaves the mixer (it played out, or the speaker stopped) before its
// stop is told did not come back: neither the hook nor the plugin hears
// resumed, only the stop.
func TestASoundGoneFromTheMixerDuckedIsNotToldResumed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mixer.New(speaker{}, mixer.Options{Rate: rate})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		h := &hooks{}
		out := pluginsound.New(pluginsound.Options{Mixer: m, Hook: h.run})
		s, err := out.Open("plugin:media/Example FM", "media", audio.Format{Rate: rate, Channels: 1})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var heard []string
		s.(pluginmgr.AudioHolder).OnHeld(func(state string) { mu.Lock(); heard = append(heard, state); mu.Unlock() })
		feed(s)
		time.Sleep(time.Second)
		m.SetActive(true) // a turn
		time.Sleep(time.Second)
		cancel() // the speaker stops
		<-done
		time.Sleep(time.Second)
		s.Stop()
		src := "media plugin:media/Example FM"
		want := []string{"media started " + src, "media ducked " + src + " by host", "media stopped " + src}
		if got := h.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("hook events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(heard, " ") != "ducked" {
			t.Errorf("the plugin heard %q, want ducked alone", heard)
		}
	})
}
