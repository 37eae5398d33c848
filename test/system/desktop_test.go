//go:build system

package system

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// pipewireDevices gives PipeWire a speaker (a null sink) and a microphone (a
// loopback: what is played into test-mic-in comes out of the source
// test-mic), so no sound card is needed. A null sink of class
// Audio/Source/Virtual would do for the microphone, but WirePlumber will not
// make a virtual node the default, and ALSA's "default" (pipewire-alsa) is
// the default source.
const pipewireDevices = `context.objects = [
  { factory = adapter
    args = { factory.name = support.null-audio-sink
             node.name = "test-speaker"  node.description = "Test speaker"
             media.class = Audio/Sink  audio.position = [ MONO ] } }
]
context.modules = [
  { name = libpipewire-module-loopback
    args = { node.description = "Test microphone"
             capture.props = { node.name = "test-mic-in" media.class = Audio/Sink audio.position = [ MONO ] }
             playback.props = { node.name = "test-mic" media.class = Audio/Source audio.position = [ MONO ] } } }
]
`

// WirePlumber's remembered defaults: the speaker and the microphone above.
const wireplumberDefaults = "[default-nodes]\ndefault.configured.audio.sink=test-speaker\ndefault.configured.audio.source=test-mic\n"

// TestDesktop is the desktop Raspberry Pi OS path on trixie: user pi's
// session runs PipeWire and WirePlumber (under pi's systemd user manager,
// lingering), the package is installed, the system service is switched off
// and the user unit on, as README.Debian says; a reply from the server is
// played into PipeWire and recorded back from the speaker's monitor with
// pw-record (its level, length and pitch checked), so is music that the
// media plugin plays from a local HTTP server (through the mixer), and a tone played into
// the microphone with pw-cat reaches the server during a push-to-talk turn.
func TestDesktop(t *testing.T) {
	pid, root, deb := os.Getenv("SYSTEM_TEST_PID"), os.Getenv("SYSTEM_TEST_ROOT"), os.Getenv("SYSTEM_TEST_DEB")
	if pid == "" || root == "" || deb == "" {
		t.Skip("needs a booted systemd; run scripts/test-system.sh")
	}
	b := &box{t: t, pid: pid, root: root}
	if _, err := b.run("", "which", "pipewire", "wireplumber", "pw-record", "pw-cat"); err != nil {
		t.Skip("this root has no PipeWire (only the trixie root does)")
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	token := "desktoptest-" + hex.EncodeToString(tok)
	srv, err := voicetest.NewServer(voicetest.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	b.run("", "dpkg", "--purge", "agenthost")
	b.run("", "rm", "-rf", "/etc/agenthost") // left by install.sh --uninstall in TestSystem
	if _, err := b.run("", "id", "pi"); err != nil {
		b.must("useradd", "-m", "pi")
	}
	uid := strings.TrimSpace(b.must("id", "-u", "pi"))
	asPi := func(args ...string) []string {
		return append([]string{"runuser", "-u", "pi", "--", "env", "HOME=/home/pi", "XDG_RUNTIME_DIR=/run/user/" + uid,
			"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/" + uid + "/bus"}, args...)
	}
	pi := func(args ...string) (string, error) { return b.run("", asPi(args...)...) }
	mustPi := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := pi(args...)
		if err != nil {
			t.Fatalf("as pi: %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	writePi := func(t *testing.T, path, content string) {
		t.Helper()
		if out, err := b.run(content, asPi("sh", "-ec", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", path)...); err != nil {
			t.Fatalf("writing %s as pi: %v\n%s", path, err, out)
		}
	}

	// pi's session: lingering starts the user manager, which starts PipeWire and WirePlumber (socket-activated).
	b.must("loginctl", "enable-linger", "pi")
	writePi(t, "/home/pi/.config/pipewire/pipewire.conf.d/agenthost-test.conf", pipewireDevices)
	writePi(t, "/home/pi/.local/state/wireplumber/default-nodes", wireplumberDefaults)
	if !eventually(time.Minute, func() bool {
		out, _ := pi("systemctl", "--user", "is-active", "pipewire.socket")
		return strings.TrimSpace(out) == "active"
	}) {
		t.Fatalf("pi's user manager did not start pipewire.socket:\n%s", b.must("journalctl", "--no-pager", "-n", "50"))
	}
	mustPi(t, "systemctl", "--user", "restart", "pipewire.service", "wireplumber.service")
	defaults := func() string {
		s, _ := pi("wpctl", "inspect", "@DEFAULT_AUDIO_SINK@")
		m, _ := pi("wpctl", "inspect", "@DEFAULT_AUDIO_SOURCE@")
		return s + m
	}
	if !eventually(time.Minute, func() bool {
		d := defaults()
		return strings.Contains(d, `node.name = "test-speaker"`) && strings.Contains(d, `node.name = "test-mic"`)
	}) {
		st, _ := pi("wpctl", "status")
		t.Fatalf("PipeWire's defaults are not the test speaker and microphone:\n%s\n%s", defaults(), st)
	}
	ver, _ := pi("pipewire", "--version")
	t.Logf("PipeWire in pi's session: %s", strings.Join(strings.Fields(ver), " "))

	// The package; postinst sees PipeWire in the installing user's session and says to use the user unit.
	out := b.must("env", "SUDO_USER=pi", "dpkg", "-i", deb)
	t.Logf("dpkg -i:\n%s", out)
	if !strings.Contains(out, "PipeWire runs in pi's session") {
		t.Errorf("postinst did not point pi at the user unit")
	}
	defer b.run("", "dpkg", "--purge", "agenthost")
	b.must("systemctl", "disable", "--now", unit)
	cfg := b.read(config)
	b.write(config, strings.Replace(cfg, "address: 127.0.0.1:8009", "address: "+srv.Addr(), 1), "0644")
	writePi(t, "/home/pi/.config/agenthost/credentials/token", token+"\n")
	mustPi(t, "chmod", "600", "/home/pi/.config/agenthost/credentials/token")
	// dpkg does not tell user managers about the new unit file: daemon-reload, then enable and (re)start.
	mustPi(t, "systemctl", "--user", "daemon-reload")
	mustPi(t, "systemctl", "--user", "enable", unit)
	mustPi(t, "systemctl", "--user", "restart", unit)
	defer pi("systemctl", "--user", "disable", "--now", unit)
	// Not _COMM: journald may keep the name systemd gives the child before exec, "(genthost)".
	userJournal := func() string {
		j, _ := b.run("", "journalctl", "--no-pager", "-o", "cat", "_UID="+uid, "SYSLOG_IDENTIFIER=agenthost")
		return j
	}
	waitFor(t, srv, time.Minute, "AUTH from the user unit", func() bool {
		a := srv.Auths()
		return len(a) > 0 && a[len(a)-1].Token == token
	})
	waitFor(t, srv, time.Minute, "a register from the user unit", func() bool { return lastRegisterHas(srv, "get_current_time") })

	// monitor records what the speaker plays (PipeWire's monitor of
	// test-speaker) into file while play runs, until minLoud has sounded and
	// half a second of quiet followed (the tail is still in PipeWire's and
	// pw-record's buffers) or wait passed, and says what it heard.
	monitor := func(t *testing.T, file string, minLoud, wait time.Duration, play func()) (st toneStats, heard bool) {
		startRecorder := `echo $$ > /home/pi/pw-record.pid; exec pw-record --target test-speaker -P '{ stream.capture.sink = true }' --rate 16000 --channels 1 --format s16 "$1"`
		recCmd := b.background(asPi("sh", "-c", startRecorder, "sh", file)...)
		if !eventually(20*time.Second, func() bool {
			links, _ := pi("pw-link", "-l")
			return strings.Contains(links, "pw-record") || strings.Contains(links, "pw-cat")
		}) {
			t.Fatalf("pw-record did not link to the speaker's monitor")
		}
		play()
		heard = eventually(wait, func() bool {
			pcm, err := wavData([]byte(b.read(file)))
			st = analyse(pcm, 16000)
			return err == nil && st.loud >= minLoud && st.quietAfter >= 500*time.Millisecond
		})
		mustPi(t, "sh", "-c", "kill -INT $(cat /home/pi/pw-record.pid)")
		recCmd.wait(t, 10*time.Second)
		pcm, err := wavData([]byte(b.read(file)))
		if err != nil {
			t.Fatalf("the recording: %v", err)
		}
		st = analyse(pcm, 16000)
		t.Logf("recorded from the speaker's monitor: %s", st)
		return st, heard
	}

	// played is how many seconds of class the user unit's mixer has played,
	// by agenthost status.
	played := func(t *testing.T, class string) float64 {
		status := mustPi(t, "agenthost", "status")
		var s struct {
			Output struct {
				Played map[string]float64 `json:"played_s"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(status), &s); err != nil {
			t.Fatalf("agenthost status: %v\n%s", err, status)
		}
		return s.Output.Played[class]
	}

	t.Run("a reply is played into PipeWire", func(t *testing.T) {
		st, _ := monitor(t, "/home/pi/reply.wav", time.Millisecond, 30*time.Second, func() {
			// At full volume the reply plays at the level the server sent (the
			// default volume, 70, is 15 dB below it).
			mustPi(t, "agenthost", "volume", "100")
			out := mustPi(t, "agenthost", "say", "--no-wait", "play something")
			task := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "sent on task"))
			if !eventually(30*time.Second, func() bool {
				return strings.Contains(userJournal(), `msg="reply ended" component=conversation task=`+task)
			}) {
				t.Fatalf("the user unit did not finish playing the reply to task %s:\n%s", task, userJournal())
			}
		})
		// The simulator's reply: 1 s of 880 Hz at half scale (16000). The
		// host's own count says all of it was played; the recording, made by
		// pw-record without real-time priority, loses periods on a saturated
		// machine (760 and 780 ms were seen), so it need only hold most of it.
		if p := played(t, "voice"); p < 0.95 || p > 1.3 {
			t.Errorf("agenthost status counts %.2f s of voice played, want the reply's 1 s", p)
		}
		if st.loud < 500*time.Millisecond || st.loud > 1300*time.Millisecond {
			t.Errorf("the reply sounded for %s on the speaker's monitor, want about 1 s", st.loud)
		}
		if st.peak < 12000 || st.peak > 20000 {
			t.Errorf("the reply's peak is %d, want about 16000 (half scale)", st.peak)
		}
		if math.Abs(st.hz-880) > 60 {
			t.Errorf("the reply's pitch is %.0f Hz, want 880", st.hz)
		}
	})

	t.Run("music from the media plugin is played into PipeWire", func(t *testing.T) {
		// 2 s of 300 Hz at a quarter of full scale (8192), over HTTP on
		// 127.0.0.1, decoded by the package's media plugin (ffmpeg), mixed
		// and played into PipeWire at volume 100 (set above).
		url := serveToneMP3(t, t.TempDir(), 2, 300, 0.25)
		st, heard := monitor(t, "/home/pi/music.wav", 1500*time.Millisecond, time.Minute, func() {
			out := mustPi(t, "agenthost", "play", url)
			t.Logf("agenthost play %s: %s", url, strings.TrimSpace(out))
		})
		if !heard {
			status, _ := pi("agenthost", "status")
			t.Errorf("the music was not heard on the speaker's monitor (%s); agenthost status:\n%s", st, status)
		}
		// The host's own count says all of it was played; the recording, on a
		// saturated machine, loses periods or spreads the tone over more
		// windows around each glitch (2.5 s was seen), so it need only hold
		// about that much.
		if p := played(t, "media"); p < 1.9 || p > 2.3 {
			t.Errorf("agenthost status counts %.2f s of media played, want the tune's 2 s", p)
		}
		if st.loud < 1200*time.Millisecond || st.loud > 3*time.Second {
			t.Errorf("the music sounded for %s on the speaker's monitor, want about 2 s", st.loud)
		}
		if st.peak < 6500 || st.peak > 10000 {
			t.Errorf("the music's peak is %d, want about 8192 (a quarter of full scale)", st.peak)
		}
		if math.Abs(st.hz-300) > 25 {
			t.Errorf("the music's pitch is %.0f Hz, want 300", st.hz)
		}
		if p := played(t, "media"); p < 1.9 {
			t.Errorf("agenthost status counts %.2f s of media played, want 2 s", p)
		}
	})

	t.Run("the microphone is read from PipeWire", func(t *testing.T) {
		const toneFile = "/home/pi/mic-tone.wav"
		writePi(t, toneFile, string(toneWAV(440, 1500*time.Millisecond, 11000)))
		out := mustPi(t, "agenthost", "talk", "start")
		task := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "talk start on task"))
		if task == "" || strings.Contains(task, " ") {
			t.Fatalf("agenthost talk start said %q", out)
		}
		if !eventually(20*time.Second, func() bool {
			links, _ := pi("pw-link", "-l")
			return regexp.MustCompile(`test-mic:capture_MONO\s*\n\s*\|-> alsa_capture\.agenthost`).MatchString(links)
		}) {
			links, _ := pi("pw-link", "-l")
			t.Fatalf("the host's capture stream is not linked to the test microphone:\n%s\n%s", links, userJournal())
		}
		mustPi(t, "pw-cat", "--playback", "--target", "test-mic-in", toneFile)
		mustPi(t, "agenthost", "talk", "stop")
		waitFor(t, srv, 30*time.Second, "the end of the turn", func() bool {
			for _, r := range srv.Received() {
				if r.Frame.Task == task && r.Frame.Type == voice.TypeEnd {
					return true
				}
			}
			return false
		})
		st := analyse(srv.Audio(task), 16000)
		t.Logf("the server heard (task %s): %s", task, st)
		if st.loud < 1200*time.Millisecond || st.loud > 1800*time.Millisecond {
			t.Errorf("the microphone's tone lasted %s at the server, want about 1.5 s", st.loud)
		}
		if st.peak < 8000 || st.peak > 14000 {
			t.Errorf("the microphone's peak is %d at the server, want about 11000", st.peak)
		}
		if math.Abs(st.hz-440) > 25 {
			t.Errorf("the microphone's pitch is %.0f Hz at the server, want 440", st.hz)
		}
	})
	if t.Failed() {
		t.Logf("the user unit's journal:\n%s", userJournal())
	}
}

// background starts args in the root (as box.run does) without waiting.
func (b *box) background(args ...string) *bgCmd {
	b.t.Helper()
	c := &bgCmd{done: make(chan error, 1)}
	cmd := exec.Command("nsenter", append([]string{"-t", b.pid, "-m", "-p", "-r", "-w", "--"}, args...)...)
	cmd.Env = boxEnv
	cmd.Stdout, cmd.Stderr = &c.out, &c.out
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }()
	c.cmd = cmd
	return c
}

type bgCmd struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func (c *bgCmd) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		c.cmd.Process.Kill()
		<-c.done
		t.Errorf("%s did not end within %s:\n%s", strings.Join(c.cmd.Args, " "), d, c.out.String())
	}
}
