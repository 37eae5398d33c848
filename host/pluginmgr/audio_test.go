package pluginmgr_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/pluginmgr/audiorec"
	"github.com/agenthost/agenthost/host/pluginsound"
	"github.com/agenthost/agenthost/internal/testbin"
)

func playerBin(t *testing.T) string {
	return testbin.Build(t, "./host/pluginmgr/testdata/plugins/player")
}

func withAudio(out pluginmgr.AudioOut) func(o *pluginmgr.Options) {
	return func(o *pluginmgr.Options) { o.Audio = out }
}

// TestPluginSoundReachesTheHostsOutput plays a known ramp from a plugin:
// the host's output gets a stream named after the plugin, of the class and
// format the plugin gave, with every sample in order, played out; with and
// without go-plugin's mutual TLS (which the broker's connection uses too).
func TestPluginSoundReachesTheHostsOutput(t *testing.T) {
	for _, mtls := range []bool{false, true} {
		t.Run(fmt.Sprintf("automtls=%v", mtls), func(t *testing.T) {
			out := &audiorec.Out{}
			x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) },
				func(p *config.Plugins) { p.AutoMTLS = mtls }, withAudio(out))
			if o := x.call("play", `{"frames": 20000, "class": "announcement"}`); !o.Success {
				t.Fatalf("play: %+v", o)
			}
			streams := out.Streams()
			if len(streams) != 1 {
				t.Fatalf("%d streams opened, want 1", len(streams))
			}
			s := streams[0]
			if s.Source != "plugin:player/ramp" || s.Class != "announcement" || s.Format != (audio.Format{Rate: 8000, Channels: 1}) {
				t.Errorf("stream %q class %q format %v, want plugin:player/ramp, announcement, 8000 Hz mono", s.Source, s.Class, s.Format)
			}
			samples, _, closed := s.Samples()
			if !closed {
				t.Error("the stream was not played out (Close)")
			}
			if len(samples) != 20000 {
				t.Fatalf("%d samples, want 20000", len(samples))
			}
			for i, v := range samples {
				if v != int16(i%1000) {
					t.Fatalf("sample %d is %d, want %d", i, v, i%1000)
				}
			}
		})
	}
}

// TestHostRefusesPluginSoundWithItsReason: a plugin named in
// plugins.audio.deny, a class not allowed, more streams than max_streams and
// a host without an output each give the plugin's caller the reason.
func TestHostRefusesPluginSoundWithItsReason(t *testing.T) {
	for _, c := range []struct {
		name   string
		set    func(p *config.Plugins)
		out    pluginmgr.AudioOut
		params string
		want   string
	}{
		{"denied", func(p *config.Plugins) { p.Audio.Deny = []string{"player"} }, &audiorec.Out{}, `{"frames":10,"class":"media"}`, "plugins.audio.deny"},
		{"class", nil, &audiorec.Out{}, `{"frames":10,"class":"voice"}`, "plugins.audio.classes"},
		{"no output", nil, nil, `{"frames":10,"class":"media"}`, "takes no audio"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) }, c.set, withAudio(c.out))
			o := x.call("play", c.params)
			if o.Success || !strings.Contains(o.Error, c.want) {
				t.Fatalf("play: %+v, want a failure saying %q", o, c.want)
			}
		})
	}
	t.Run("max streams", func(t *testing.T) {
		x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) },
			func(p *config.Plugins) { p.Audio.MaxStreams = 1 }, withAudio(&audiorec.Out{}))
		if o := x.call("play_endless", `{"class":"media"}`); !o.Success {
			t.Fatalf("play_endless: %+v", o)
		}
		o := x.call("play_endless", `{"class":"media"}`)
		if o.Success || !strings.Contains(o.Error, "plugins.audio.max_streams") {
			t.Fatalf("second stream: %+v, want a refusal naming plugins.audio.max_streams", o)
		}
	})
}

// TestPluginThatDiesMidStreamEndsItsStream: the stream of a plugin that
// exits while playing is stopped at the output, and the slot is freed; once
// the manager stops, no goroutine of it is left.
func TestPluginThatDiesMidStreamEndsItsStream(t *testing.T) {
	playerBin(t)
	before := goleak.IgnoreCurrent()
	out := &audiorec.Out{}
	x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) },
		func(p *config.Plugins) { p.Audio.MaxStreams = 1 }, withAudio(out))
	if o := x.call("play_endless", `{"class":"media"}`); !o.Success {
		t.Fatalf("play_endless: %+v", o)
	}
	s := out.Streams()[0]
	x.call("crash", `{}`)
	select {
	case <-s.Stopped():
	case <-time.After(20 * time.Second):
		t.Fatal("the stream of the dead plugin was never stopped")
	}
	if _, _, closed := s.Samples(); closed {
		t.Error("a cut-off stream was played out as if whole")
	}
	// The restarted plugin may play again: the dead one's slot is free.
	deadline := time.Now().Add(20 * time.Second)
	for {
		o := x.call("play_endless", `{"class":"media"}`)
		if o.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted plugin cannot play: %+v", o)
		}
		time.Sleep(50 * time.Millisecond)
	}
	x.stop()
	goleak.VerifyNone(t, before)
}

// TestPluginOnThePriorContractStillServes: a plugin built on the contract
// before HostAudio (testdata/priorv1) loads and serves on a host that takes
// sound from plugins.
func TestPluginOnThePriorContractStillServes(t *testing.T) {
	prior := testbin.Build(t, "./host/pluginmgr/testdata/plugins/prior")
	x := startManager(t, func(dir string) { install(t, prior, dir, "prior", 0) }, nil, withAudio(&audiorec.Out{}))
	o := x.call("prior_pid", `{}`)
	if !o.Success {
		t.Fatalf("prior_pid: %+v", o)
	}
}

// TestPlayingPluginIsNotStoppedAsIdle: a lazy plugin that plays has no call
// in flight, yet it is busy: it is not stopped after plugins.idle_stop while
// its sound plays, and is once the sound has ended.
func TestPlayingPluginIsNotStoppedAsIdle(t *testing.T) {
	const idleStop = 300 * time.Millisecond
	out := &audiorec.Out{}
	x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) }, func(p *config.Plugins) {
		p.Lazy, p.IdleStop, p.Audio.MaxStreams = true, config.Duration(idleStop), 8
	}, withAudio(out))
	st := x.running("player", "play_endless")
	s := out.Streams()[len(out.Streams())-1]
	// Many idle periods pass; a stop would end the stream.
	select {
	case <-s.Stopped():
		t.Fatalf("the playing plugin was stopped (now %+v)", x.status("player"))
	case <-time.After(10 * idleStop):
	}
	if now := x.status("player"); now.PID != st.PID || now.State != "running" {
		t.Fatalf("the playing plugin is %+v, want pid %d running", now, st.PID)
	}
	if o := x.call("stop_all", `{}`); !o.Success {
		t.Fatalf("stop_all: %+v", o)
	}
	x.waitStatus("player", "stopped as idle once its sound ended", func(s pluginmgr.Status) bool { return s.State == "idle" })
}

// TestPluginIsToldWhenTheHostDucksOrPausesIt: a plugin's media on the real
// mixer learns (sdk Playback.Held, Audio.OnHeld) when a turn ducks it, when
// it comes back, and when the policy is to pause it.
func TestPluginIsToldWhenTheHostDucksOrPausesIt(t *testing.T) {
	m := mixer.New(pacedSink{}, mixer.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) }, nil,
		withAudio(pluginsound.New(pluginsound.Options{Mixer: m})))
	if o := x.call("play_endless", `{"class":"media"}`); !o.Success {
		t.Fatalf("play_endless: %+v", o)
	}
	// waitHeld waits until the plugin says its stream is held as want.
	waitHeld := func(want string) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if o := x.call("held", `{}`); o.Success {
				if last = string(o.Data); strings.Contains(last, `"held":["`+want+`"]`) {
					return
				}
			}
		}
		t.Fatalf("the plugin says %s, want its stream held %q", last, want)
	}
	m.SetActive(true) // a turn
	waitHeld("ducked")
	m.SetActive(false)
	waitHeld("")
	if err := m.SetPolicy(-20, 0, mixer.Pause); err != nil {
		t.Fatal(err)
	}
	m.SetActive(true)
	waitHeld("paused")
	m.SetActive(false)
	waitHeld("")
	if o := x.call("held", `{}`); !strings.Contains(string(o.Data), `"heard":["ducked","playing","paused","playing"]`) {
		t.Errorf("OnHeld heard %s, want ducked, playing, paused, playing", o.Data)
	}
	x.call("stop_all", `{}`)
}

// pacedSink takes the time a device takes to play what it is given.
type pacedSink struct{}

func (pacedSink) Write(p []int16) (int, error) {
	time.Sleep(time.Duration(len(p)) * time.Second / audio.WireRate)
	return len(p), nil
}
func (pacedSink) Close() error { return nil }

// TestPluginSoundsNameKeepsNoURLSecret: a plugin that names its sound by a
// URL with a token, a password or a fragment: the host's output and log
// get the URL without them.
func TestPluginSoundsNameKeepsNoURLSecret(t *testing.T) {
	out := &audiorec.Out{}
	x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) }, nil, withAudio(out))
	if o := x.call("play_endless", `{"class":"media","name":"radio https://u:pa55w0rd@r.example/live?listen_key=s3cret#t0ken"}`); !o.Success {
		t.Fatalf("play_endless: %+v", o)
	}
	x.call("stop_all", `{}`)
	if s := out.Streams()[0].Source; s != "plugin:player/radio https://u:%2A%2A%2A%2A@r.example/live" {
		t.Errorf("the output got the stream as %q", s)
	}
	for _, secret := range []string{"pa55w0rd", "s3cret", "t0ken"} {
		if strings.Contains(x.log.String(), secret) {
			t.Errorf("the host's log has %q:\n%s", secret, x.log)
		}
	}
}

// TestAReloadOfPluginsAudioAppliesToTheNextStream: plugins.audio is
// applied by a reload (Reconfigure) even when nothing else of the plugins
// changed: a plugin denied then may not start another stream.
func TestAReloadOfPluginsAudioAppliesToTheNextStream(t *testing.T) {
	var plugins config.Plugins
	x := startManager(t, func(dir string) { install(t, playerBin(t), dir, "player", 0) },
		func(p *config.Plugins) { plugins = *p }, withAudio(&audiorec.Out{}))
	if o := x.call("play", `{"frames":10,"class":"media"}`); !o.Success {
		t.Fatalf("play before the reload: %+v", o)
	}
	plugins.Audio.Deny = []string{"player"}
	x.m.Reconfigure(plugins, nil)
	if o := x.call("play", `{"frames":10,"class":"media"}`); o.Success || !strings.Contains(o.Error, "plugins.audio.deny") {
		t.Fatalf("play after a reload denied it: %+v, want a refusal naming plugins.audio.deny", o)
	}
}
