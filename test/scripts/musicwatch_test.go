package scripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/mixer"
	"github.com/agenthost/agenthost/host"
)

// TestDemoSaysWhetherTheMusicWasDuckedOrPaused: scripts/music-watch.sh
// (demo.sh --music) reads `agenthost status` as the daemon prints it and
// says what the mixer did to the music for each turn: ducked, or paused
// under audio.mix.media_while_active: pause, and when it is loud again;
// and what an announcement does to it outside a turn.
func TestDemoSaysWhetherTheMusicWasDuckedOrPaused(t *testing.T) {
	need(t, "bash", "python3")
	status := func(active bool, ducks int64, streams ...mixer.StreamStatus) string {
		b, err := json.MarshalIndent(host.Status{Output: &host.Output{Active: active, Ducks: ducks, Streams: streams}}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	music := mixer.StreamStatus{Name: "plugin:media/music.mp3", Class: "media"}
	ducked, paused, reply := music, music, mixer.StreamStatus{Name: "reply 7", Class: "voice"}
	ducked.Ducked, paused.Paused = true, true
	in := status(false, 0, music) +
		status(true, 1, ducked) + status(true, 1, ducked, reply) + status(false, 1, music) + // a turn, media ducked
		status(true, 2, paused) + status(false, 2, music) + // media_while_active: pause
		status(true, 2) + status(false, 2) + // no music
		status(false, 3, ducked) + status(false, 3, music) // an announcement ducks it
	cmd := exec.Command("bash", script(t, "music-watch.sh"))
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("music-watch.sh: %v\n%s", err, out)
	}
	var said []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "== ") {
			said = append(said, regexp.MustCompile(`^== \d\d:\d\d:\d\d `).ReplaceAllString(line, ""))
		}
	}
	want := []string{
		"the assistant is listening: music ducked (ducks so far: 1)",
		"the turn and its reply are over: music loud again; the output:",
		"the assistant is listening: music paused (ducks so far: 2)",
		"the turn and its reply are over: music loud again; the output:",
		"the assistant is listening: no music plays",
		"the turn is over",
		"music ducked (an announcement or a ring plays)",
		"music loud again",
	}
	if strings.Join(said, "\n") != strings.Join(want, "\n") {
		t.Errorf("music-watch.sh said:\n%s\nwant:\n%s", strings.Join(said, "\n"), strings.Join(want, "\n"))
	}
}

// TestTheMusicWatchFollowsTheDaemonAndEndsWithIt: demo.sh --music runs
// `music-watch.sh --follow PID CMD…`, which asks CMD for the status while
// the daemon PID lives and ends when it is gone (the demo waited for it at
// exit, and a loop that went on asking a stopped daemon kept it waiting).
func TestTheMusicWatchFollowsTheDaemonAndEndsWithIt(t *testing.T) {
	need(t, "bash", "python3", "sleep", "cat")
	b, err := json.Marshal(host.Status{Output: &host.Output{Active: true, Ducks: 1,
		Streams: []mixer.StreamStatus{{Name: "plugin:media/music.mp3", Class: "media", Ducked: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(t.TempDir(), "status.json")
	if err := os.WriteFile(status, b, 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command("sleep", "1")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	watch := exec.Command("bash", script(t, "music-watch.sh"), "--follow", strconv.Itoa(daemon.Process.Pid), "cat", status)
	var out strings.Builder
	watch.Stdout = &out
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	daemon.Wait()
	ended := make(chan error, 1)
	go func() { ended <- watch.Wait() }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("music-watch.sh: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		watch.Process.Kill()
		t.Fatalf("music-watch.sh --follow still runs a minute after the daemon it follows ended:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "the assistant is listening: music ducked (ducks so far: 1)") {
		t.Errorf("music-watch.sh --follow did not say what the status showed:\n%s", out.String())
	}
}
