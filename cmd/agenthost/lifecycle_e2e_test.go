package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestSIGTERMDuringAPluginStart: a stop signal while a plugin is still
// starting (this one never completes its handshake) ends the host promptly
// with status 0, and the half-started plugin does not outlive it.
func TestSIGTERMDuringAPluginStart(t *testing.T) {
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) {
		script := "#!/bin/sh\nexec sleep 61.8034\n"
		if err := os.WriteFile(filepath.Join(dir, "slowstart"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}, "plugins.start_timeout=2m")
	d.logShows("starting plugin")
	if err := d.stop(); err != nil {
		t.Fatalf("exit after SIGTERM during start-up: %v", err)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 61.8034").Output(); strings.TrimSpace(string(out)) != "" {
		exec.Command("pkill", "-f", "sleep 61.8034").Run()
		t.Fatalf("the starting plugin outlived the host (pids %s)", out)
	}
}

// TestPluginFoldersWritableByOthersAreRefused: a plugin folder, or a plugin
// binary, that users other than its owner may write would let any of them
// run code as the host. It is refused at start-up and on reload with the
// command that fixes it, and the host serves the plugins of other folders.
func TestPluginFoldersWritableByOthersAreRefused(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	base := t.TempDir()
	open, safe := filepath.Join(base, "open"), filepath.Join(base, "safe")
	for _, dir := range []string{open, safe} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(open, 0o777)
	copyExec(t, bundled(t, "clock"), filepath.Join(open, "clock"))
	copyExec(t, bundled(t, "sysinfo"), filepath.Join(safe, "sysinfo"))
	d := startHost(t, sim, "plugins.dirs="+open+","+safe, "services.builtins=false")
	pluginsReady(t, sim)
	d.logLine("plugin folder", open, "chmod go-w")
	if _, ok := sim.Services()["get_current_time"]; ok {
		t.Fatal("the clock plugin in a world-writable folder was started")
	}
	if _, ok := sim.Services()["get_system_info"]; !ok {
		t.Fatalf("the plugin of the safe folder is missing: %v", sim.Services())
	}
	// On reload: a binary that others may write is refused too.
	copyExec(t, bundled(t, "clock"), filepath.Join(base, "clock"))
	os.Chmod(filepath.Join(base, "clock"), 0o777)
	sh(t, "mv", filepath.Join(base, "clock"), filepath.Join(safe, "clock"))
	d.logLine("plugin", filepath.Join(safe, "clock"), "chmod go-w")
	if _, ok := sim.Services()["get_current_time"]; ok {
		t.Fatal("a world-writable plugin binary was started")
	}
	// The fix applies without a restart.
	os.Chmod(open, 0o755)
	waitFor(t, sim, "the clock plugin once its folder is fixed", func() bool {
		_, ok := sim.Services()["get_current_time"]
		return ok
	})
}

// TestMissingGPIOChipIsAnErrorNotARestartLoop: a push-to-talk button on a
// chip that is not there is a clear error in the log; the host keeps
// serving (it must not exit, or systemd would restart it over and over).
func TestMissingGPIOChipIsAnErrorNotARestartLoop(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "conversation.gpio.chip=gpiochip99", "conversation.gpio.line=17")
	ready(t, sim, 1)
	d.logLine("level=ERROR", "push-to-talk button", "gpiochip99")
	select {
	case err := <-d.exited:
		d.exited <- err
		t.Fatalf("the host exited: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if out := call(t, sim, "get_current_time", `{}`); !out.Success {
		t.Fatalf("the host stopped serving: %+v", out)
	}
}

// TestPlaintextLinkToAnotherHostIsWarned: the token crosses the network in
// the clear when the server is not on this machine and server.tls is off.
func TestPlaintextLinkToAnotherHostIsWarned(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d := startHost(t, sim, "server.address=192.0.2.1:8009", "server.dial_timeout=100ms")
	d.logLine("level=WARN", "server.tls", "192.0.2.1:8009")
	d2 := startHost(t, sim)
	ready(t, sim, 1)
	if strings.Contains(d2.log.String(), "server.tls") {
		t.Fatal("a loopback server drew the plaintext warning")
	}
}

// TestCheckSaysWhichSoundServerOwnsTheCard: `agenthost check` names the
// sound server and warns when another user's owns the card. The PipeWire
// here is a FAKE (a sleep named pipewire, run as nobody): only its name and
// owner matter to the check.
func TestCheckSaysWhichSoundServerOwnsTheCard(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a process as another user needs root")
	}
	dir, err := os.MkdirTemp("", "agenthost-fake-pipewire-") // a folder nobody may enter
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "pipewire")
	copyExec(t, "/bin/sleep", bin)
	os.WriteFile(filepath.Join(dir, "none.yaml"), []byte("# defaults\n"), 0o644)
	fake := exec.Command("runuser", "-u", "nobody", "--", bin, "61.7")
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { exec.Command("pkill", "-f", bin+" 61.7").Run(); fake.Wait() }()
	host := testbinHost(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(host, "check", "--offline", "--config", filepath.Join(dir, "none.yaml"), "--set", "audio.backend=portaudio").CombinedOutput()
		if err != nil {
			t.Fatalf("check: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "pipewire (pid") {
			if !strings.Contains(string(out), "user nobody") || !strings.Contains(string(out), "warning: a sound server of another user owns the sound card") {
				t.Fatalf("check:\n%s", out)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("check does not name the sound server:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
