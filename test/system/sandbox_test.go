//go:build system

package system

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

const (
	tokenPath   = "/run/credentials/agenthost.service/token"
	statePath   = "/var/lib/agenthost/device/state.json"
	controlSock = "/run/agenthost/control.sock"
	attackerMCP = "/usr/local/bin/attackmcp"
	// The unit's score: 1.5 before the sandbox (issue 41: at or under
	// that), 1.6 since the media decoder lowers its own limits (setrlimit,
	// setpriority: @resources no longer wholly denied).
	maxExposure = 1.6
	// With the generator's drop-in for a kernel without Landlock (user, mount
	// and PID namespaces, the mount calls); TestSystem's bound.
	maxExposureNamespaces = 2.0
)

// TestChildrenFromThePackage is issue 41's sandbox under the installed,
// hardened service: an attacker's plugin (snoop, and unmuter) and an
// attacker's MCP stdio server (attackmcp, written with the MCP go-sdk,
// configured under mcp.servers), each asked by the simulated voice
// server's model, try to read the token systemd hands the service, its
// configuration and its state, to rewrite the mute state, to plant a file
// in the state folder, and to unmute through the owner's control socket.
// Each fails; the owner's `agenthost mic on` still works, and
// systemd-analyze security stays within its bound. It runs twice: with
// Landlock, and as on a kernel without it (the Raspberry Pi OS kernel), in
// user namespaces through bubblewrap.
func TestChildrenFromThePackage(t *testing.T) {
	pid, root, deb, repo := os.Getenv("SYSTEM_TEST_PID"), os.Getenv("SYSTEM_TEST_ROOT"), os.Getenv("SYSTEM_TEST_DEB"), os.Getenv("SYSTEM_TEST_REPO")
	if pid == "" || root == "" || deb == "" || repo == "" {
		t.Skip("needs a booted systemd; run scripts/test-system.sh")
	}
	b := &box{t: t, pid: pid, root: root}
	bins := buildAttackers(t, repo, strings.TrimSpace(b.must("dpkg", "--print-architecture")))

	tok := make([]byte, 16)
	rand.Read(tok)
	token := "sandboxtest-" + hex.EncodeToString(tok)
	marker := "config-marker-" + hex.EncodeToString(tok[:6])
	srv, err := voicetest.NewServer(voicetest.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	b.run("", "dpkg", "--purge", "agenthost")
	b.run("", "rm", "-rf", "/etc/agenthost", "/var/lib/agenthost")
	b.must("dpkg", "-i", deb)
	defer b.run("", "dpkg", "--purge", "agenthost")
	if _, err := b.run("", "id", "owner"); err != nil {
		b.must("useradd", "-m", "owner")
	}
	b.must("usermod", "-aG", "agenthost", "owner")
	b.sh("install -d -m 0700 /etc/credstore")
	b.write("/etc/credstore/agenthost.token", token+"\n", "0600")
	for _, p := range []string{"snoop", "unmuter"} {
		dst := "/usr/lib/agenthost/plugins/" + p
		b.copyIn(bins[p], dst)
		b.must("chown", "root:root", dst)
		b.must("chmod", "0755", dst)
	}
	b.copyIn(bins["attackmcp"], attackerMCP)
	b.must("chmod", "0755", attackerMCP)
	cfg := b.read(config)
	for old, repl := range map[string]string{
		"address: 127.0.0.1:8009": "address: " + srv.Addr(),
		"  servers: {}\n":         "  servers:\n    attack:\n      command: " + attackerMCP + "\n",
	} {
		if strings.Count(cfg, old) != 1 {
			t.Fatalf("the packaged config has %d of %q", strings.Count(cfg, old), old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	b.write(config, cfg+"# "+marker+"\n", "0644")

	// attack runs the attackers against the restarted service, whose start
	// must name the mechanism, and bounds its exposure.
	attack := func(t *testing.T, mechanism string, maxExp float64) {
		b := &box{t: t, pid: b.pid, root: b.root}
		cur := b.cursor()
		b.must("systemctl", "restart", unit)
		waitFor(t, srv, time.Minute, "a register with the attackers' services", func() bool {
			return lastRegisterHas(srv, "snoop_read", "unmuter_unmute", "attack_read")
		})
		if out, err := b.run("", "runuser", "-u", "owner", "--", "agenthost", "mic", "off"); err != nil || !strings.Contains(out, "microphone off") {
			t.Fatalf("the owner's agenthost mic off: %v\n%s", err, out)
		}
		muted := b.read(statePath)
		if !strings.Contains(muted, "microphone_muted") {
			t.Fatalf("%s after mic off: %s", statePath, muted)
		}
		if !strings.Contains(b.read(tokenPath), token) {
			t.Fatalf("the service's credential %s does not hold the token (the test would prove nothing)", tokenPath)
		}
		if want := "children run in the sandbox (sandbox.mode auto"; !strings.Contains(b.journalSince(cur), want) || !strings.Contains(b.journalSince(cur), mechanism) {
			t.Fatalf("the journal does not say %q … %q:\n%s", want, mechanism, b.journalSince(cur))
		}

		call := func(method string, params map[string]string) voice.Outcome {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := srv.Call(ctx, method, params)
			if err != nil {
				t.Fatalf("the simulator's call %s: %v\n%s", method, err, b.journalSince(cur))
			}
			return out
		}
		readers := []string{"snoop_read", "snoop_shell_read", "attack_read"}
		writers := []string{"snoop_write", "attack_write"}
		unmuters := []string{"unmuter_unmute", "attack_unmute"}

		t.Run("they may read the system", func(t *testing.T) {
			for _, m := range readers {
				if out := call(m, map[string]string{"path": "/etc/os-release"}); !out.Success || !strings.Contains(string(out.Data), "Debian") {
					t.Fatalf("%s /etc/os-release: %+v (a child that reads nothing proves nothing)\n%s", m, out, b.journalSince(cur))
				}
			}
		})

		t.Run("they cannot read the token, the config or the state", func(t *testing.T) {
			for _, m := range readers {
				for _, p := range []string{tokenPath, config, statePath} {
					out := call(m, map[string]string{"path": p})
					d := string(out.Data)
					if out.Success || strings.Contains(d, token) || strings.Contains(d, marker) || strings.Contains(d, "microphone_muted") {
						t.Errorf("%s %s: the child read it: %+v", m, p, out)
					} else {
						t.Logf("%s %s: refused: %s", m, p, out.Error)
					}
				}
			}
		})

		t.Run("they cannot write the mute state or plant a file in the state folder", func(t *testing.T) {
			for _, m := range writers {
				plant := "/var/lib/agenthost/planted-by-" + m + ".so"
				for _, w := range []struct{ path, content string }{
					{statePath, `{"version":1,"microphone_muted":false}`}, {plant, "x"},
				} {
					if out := call(m, map[string]string{"path": w.path, "content": w.content}); out.Success {
						t.Errorf("%s %s: the child wrote it: %+v", m, w.path, out)
					} else {
						t.Logf("%s %s: refused: %s", m, w.path, out.Error)
					}
				}
				if _, err := b.run("", "test", "-e", plant); err == nil {
					t.Errorf("%s is there", plant)
				}
			}
			if got := b.read(statePath); got != muted {
				t.Errorf("the mute state changed:\n%s\n->\n%s", muted, got)
			}
		})

		t.Run("the control socket refuses them as the owner", func(t *testing.T) {
			var passed []string
			for _, m := range unmuters {
				out := call(m, map[string]string{"path": controlSock})
				mic := b.must("agenthost", "mic", "--config", config)
				if out.Success || strings.Contains(mic, "microphone on") {
					passed = append(passed, fmt.Sprintf("%s: %+v; agenthost mic: %s", m, out, strings.TrimSpace(mic)))
					b.must("agenthost", "mic", "--config", config, "off") // the owner mutes again for the next attacker
				} else {
					t.Logf("%s: refused: %s", m, out.Error)
				}
			}
			if len(passed) > 0 {
				t.Errorf("a child unmuted the microphone through the control socket:\n%s", strings.Join(passed, "\n"))
			}
		})

		t.Run("the owner's mic on still works", func(t *testing.T) {
			for _, who := range [][]string{{"runuser", "-u", "owner", "--"}, {}} {
				off := append(append([]string{}, who...), "agenthost", "mic", "--config", config, "off")
				on := append(append([]string{}, who...), "agenthost", "mic", "--config", config, "on")
				if out, err := b.run("", off...); err != nil || !strings.Contains(out, "microphone off") {
					t.Fatalf("%s: %v\n%s", strings.Join(off, " "), err, out)
				}
				if out, err := b.run("", on...); err != nil || !strings.Contains(out, "microphone on") {
					t.Fatalf("%s: %v\n%s", strings.Join(on, " "), err, out)
				}
				if out := b.must("agenthost", "mic", "--config", config); !strings.Contains(out, "microphone on") {
					t.Errorf("after %s: agenthost mic: %s", strings.Join(on, " "), out)
				}
				var st struct {
					Muted bool `json:"microphone_muted"`
				}
				if err := json.Unmarshal([]byte(b.read(statePath)), &st); err != nil || st.Muted {
					t.Errorf("%s after %s: %v %+v", statePath, strings.Join(on, " "), err, st)
				}
			}
		})

		t.Run("systemd-analyze security at or under its bound", func(t *testing.T) {
			out, _ := b.run("", "systemd-analyze", "security", "--no-pager", unit)
			m := regexp.MustCompile(`Overall exposure level for agenthost.service: ([0-9.]+) (\w+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no exposure in:\n%s", out)
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			t.Logf("exposure of the running unit with the sandbox (%s): %s %s", mechanism, m[1], m[2])
			if v > maxExp {
				t.Errorf("exposure %s > %.1f", m[1], maxExp)
			}
		})
		if t.Failed() {
			t.Logf("journal:\n%s", b.journalSince(cur))
		}
	}

	t.Run("Landlock", func(t *testing.T) {
		if _, err := b.run("", "test", "-e", "/run/systemd/generator/agenthost.service.d"); err == nil {
			t.Errorf("the sandbox generator wrote a drop-in on a kernel with Landlock")
		}
		attack(t, "Landlock ABI", maxExposure)
	})

	// The Raspberry Pi OS kernel has no Landlock: here its calls are refused
	// (a drop-in of the test's; systemd will not load a filter that answers
	// them with ENOSYS in this unit), and the package's generator, told so
	// by the list it reads, lets the unit make user namespaces for bubblewrap.
	t.Run("namespaces, as on a kernel without Landlock", func(t *testing.T) {
		// scripts/test-system.sh chroots systemd into the root, and the kernel
		// makes no user namespace for a chrooted process (EPERM), in or out
		// of the unit: then this pass is skipped, and the namespaces are proven
		// by cmd/agenthost's e2e tests (…/namespaces) and internal/sandbox's.
		if out, err := b.run("", "runuser", "-u", "agenthost", "--", "unshare", "-U", "true"); err != nil {
			t.Skipf("no user namespace in this chrooted root, even outside the unit (%v: %s)", err, strings.TrimSpace(out))
		}
		b.write("/run/lsm-without-landlock", "lockdown,capability,yama,apparmor", "0644")
		b.must("env", "AGENTHOST_LSM_FILE=/run/lsm-without-landlock", "/usr/lib/systemd/system-generators/agenthost-sandbox-generator", "/etc/systemd/system")
		b.sh("mkdir -p /etc/systemd/system/agenthost.service.d")
		b.write("/etc/systemd/system/agenthost.service.d/60-test-no-landlock.conf",
			"[Service]\nSystemCallFilter=~landlock_create_ruleset landlock_add_rule landlock_restrict_self\n", "0644")
		defer func() {
			b.run("", "rm", "-rf", "/etc/systemd/system/agenthost.service.d")
			b.run("", "systemctl", "daemon-reload")
		}()
		b.must("systemctl", "daemon-reload")
		attack(t, "user namespaces through bubblewrap", maxExposureNamespaces)
	})
}

// buildAttackers builds the attackers for the root's Debian architecture:
// the snoop plugin of cmd/agenthost's tests, the unmuter plugin and the
// attackmcp server of testdata; it returns their paths by name.
func buildAttackers(t *testing.T, repo, debArch string) map[string]string {
	t.Helper()
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	switch debArch {
	case "amd64", "arm64":
		env = append(env, "GOARCH="+debArch)
	case "armhf":
		env = append(env, "GOARCH=arm", "GOARM=7")
	default:
		t.Fatalf("the root's architecture %q: no Go target for it", debArch)
	}
	dir := t.TempDir()
	bins := map[string]string{}
	for name, pkg := range map[string]string{
		"snoop":     "./cmd/agenthost/testdata/plugins/snoop",
		"unmuter":   "./test/system/testdata/unmuter",
		"attackmcp": "./test/system/testdata/attackmcp",
	} {
		bins[name] = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", bins[name], pkg)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s for %s: %v\n%s", pkg, debArch, err, out)
		}
	}
	return bins
}
