package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestTheOwnersStopEndsARingThenTheAnnouncementThenTheMusic (issue 42 item
// 3): an announcement (here 60 s, as an endless radio would be) can be
// stopped. The device's stop_ringing and the media plugin's stop_media
// (no class given) end it when nothing rings, pause_media and resume_media
// hold it; `agenthost stop` ends one thing at a time: the ring first, then
// the announcement, then the music, then says nothing sounds. The
// speaker's file ends with the music alone at its level.
func TestTheOwnersStopEndsARingThenTheAnnouncementThenTheMusic(t *testing.T) {
	t.Parallel()
	_, url := toneServer(t, 60, map[string]float64{"a.wav": toneA, "n.wav": toneN})
	out := filepath.Join(t.TempDir(), "speaker.wav")
	sim := newSim(t, voicetest.Options{})
	d := startMediaHostTo(t, sim, out, "services.builtins=true", "device.ring.timeout=1h")
	service := func(method, params, want string) {
		t.Helper()
		res := call(t, sim, method, params)
		if !res.Success || !strings.Contains(string(res.Data), want) {
			t.Fatalf("%s %s: success %v, %s %s; want success saying %q", method, params, res.Success, res.Data, res.Error, want)
		}
	}
	// The plugin hears of a stop by the host at its stream's next write.
	stopped := func(what string) {
		t.Helper()
		waitFor(t, sim, what+" ended the announcement, as get_media_status says", func() bool {
			return !strings.Contains(string(call(t, sim, "get_media_status", `{}`).Data), `"class":"announcement"`)
		})
	}
	d.mustCLI("play", url+"/a.wav")
	d.waitPlayed("media", 1)

	d.mustCLI("announce", url+"/n.wav")
	d.waitMorePlayed("announcement", 0.5)
	service("stop_ringing", `{}`, "announcement")
	stopped("stop_ringing")
	d.mustCLI("announce", url+"/n.wav")
	d.waitMorePlayed("announcement", 0.5)
	service("stop_media", `{}`, "stopped")
	stopped("stop_media")
	d.mustCLI("announce", url+"/n.wav")
	d.waitMorePlayed("announcement", 0.5)
	service("pause_media", `{}`, "paused")
	service("resume_media", `{}`, "resumed")
	d.waitMorePlayed("announcement", 0.5)

	if res := call(t, sim, "set_timer", `{"seconds":1,"label":"tea"}`); !res.Success {
		t.Fatalf("set_timer: %+v", res)
	}
	d.waitPlayed("ring", 0.5)
	if o := d.mustCLI("stop"); !strings.Contains(o, "ring") {
		t.Fatalf("the first agenthost stop: %q; want the ring stopped", o)
	}
	d.waitMorePlayed("announcement", 0.5) // it plays on
	if o := d.mustCLI("stop"); !strings.Contains(o, "announcement") {
		t.Fatalf("the second agenthost stop: %q; want the announcement stopped", o)
	}
	before := d.played("announcement")
	// The ring's notice to the server has the assistant active a while,
	// which ducks the music too: it is loud again once that is over.
	waitFor(t, sim, "the music at its level again", func() bool {
		return !strings.Contains(string(call(t, sim, "get_media_status", `{}`).Data), `"held"`)
	})
	d.waitMorePlayed("media", 1.5)
	if after := d.played("announcement"); after > before+0.2 {
		t.Fatalf("the announcement played on after agenthost stop: %.2f s, then %.2f s", before, after)
	}
	if o := d.mustCLI("stop"); !strings.Contains(o, "music") {
		t.Fatalf("the third agenthost stop: %q; want the music stopped", o)
	}
	if o := d.mustCLI("stop"); !strings.Contains(o, "nothing") {
		t.Fatalf("the fourth agenthost stop: %q; want nothing left to stop", o)
	}
	// The plugin hears of the music's stop at its stream's next write (on
	// a busy machine, a while after the stop answered).
	waitFor(t, sim, "get_media_status says nothing plays after the stops", func() bool {
		return strings.Contains(string(call(t, sim, "get_media_status", `{}`).Data), `"playing":[]`)
	})
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	rows := toneWindows(t, out, toneA, toneN)
	tail := rows[max(0, len(rows)-12):]
	alone := 0
	for _, row := range tail {
		if math.Abs(row[0]) < 1.5 && !sounds(row[1]) {
			alone++
		}
	}
	t.Logf("the last %d windows of 100 ms: %d with the music alone at its level", len(tail), alone)
	if alone < 8 {
		t.Fatalf("want the file to end with the music alone, no longer ducked: %v", tail)
	}
}

// TestATurnDucksAnAnnouncement (issue 42 item 3): the owner's push-to-talk
// turn, and the reply, duck an announcement as they duck music; the plugin
// is told.
func TestATurnDucksAnAnnouncement(t *testing.T) {
	t.Parallel()
	_, url := toneServer(t, 60, map[string]float64{"n.wav": toneN})
	out := filepath.Join(t.TempDir(), "speaker.wav")
	sim := newSim(t, voicetest.Options{ReplyDuration: time.Second}) // replies: 1 s of 880 Hz
	d := startMediaHostTo(t, sim, out)
	d.mustCLI("announce", url+"/n.wav")
	d.waitPlayed("announcement", 1)
	d.mustCLI("talk", "start")
	waitFor(t, sim, "get_media_status saying the announcement is held: ducked", func() bool {
		return strings.Contains(string(call(t, sim, "get_media_status", `{}`).Data), `"held":"ducked"`)
	})
	d.waitMorePlayed("announcement", 1)
	task := sentOnTask.FindStringSubmatch(d.mustCLI("talk", "stop"))
	if task == nil {
		t.Fatal("talk stop named no task")
	}
	waitFor(t, sim, "the reply", func() bool { return replyEnded(sim, 1, task[1]) })
	d.waitPlayed("voice", 0.9)
	d.waitMorePlayed("announcement", 1)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	var ducked, overReply int
	for _, row := range toneWindows(t, out, toneN, 880) {
		if math.Abs(row[0]+20) < 3 {
			ducked++
		}
		if row[0] > -6 && sounds(row[1]) {
			overReply++
		}
	}
	t.Logf("100 ms windows: the announcement ducked %d, at its level over the reply %d", ducked, overReply)
	if ducked < 15 || overReply > 1 {
		t.Fatal("want the announcement ducked for the turn and the reply")
	}
}

// TestAnAnnouncementIsBounded (issue 42 item 3): an announcement that does
// not end (here 60 s) is ended by the host after
// plugins.audio.max_announcement of sound, and the media plugin says so.
func TestAnAnnouncementIsBounded(t *testing.T) {
	t.Parallel()
	_, url := toneServer(t, 60, map[string]float64{"n.wav": toneN})
	out := filepath.Join(t.TempDir(), "speaker.wav")
	sim := newSim(t, voicetest.Options{})
	d := startMediaHostTo(t, sim, out, "plugins.audio.max_announcement=2s")
	d.mustCLI("announce", url+"/n.wav")
	var st string
	waitFor(t, sim, "the announcement ended, and get_media_status saying why", func() bool {
		st = string(call(t, sim, "get_media_status", `{}`).Data)
		return strings.Contains(st, "max_announcement")
	})
	if !strings.Contains(st, `"playing":[]`) {
		t.Fatalf("get_media_status: %s; want nothing playing", st)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	heard := 0
	for _, row := range toneWindows(t, out, toneN) {
		if sounds(row[0]) {
			heard++
		}
	}
	t.Logf("the announcement was heard in %d windows of 100 ms", heard)
	if heard < 15 || heard > 25 {
		t.Fatal("want the announcement heard for its first 2 s only")
	}
}
