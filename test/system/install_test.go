//go:build system

package system

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestInstalledPackage installs one package with apt in a root of its own
// suite and architecture (arm64 and armhf run under qemu-user through
// binfmt_misc), so apt resolves its Depends from Debian's archive; then the
// installed host runs there as the user agenthost, against the simulator on
// 127.0.0.1 outside (the root shares the network), registers the bundled
// plugins' services and answers calls. No systemd runs in these roots (the
// unit is proven by TestSystem): the host is started as the unit would.
// scripts/test-install.sh prepares the root and sets the environment.
func TestInstalledPackage(t *testing.T) {
	pid, root, deb, target := os.Getenv("INSTALL_TEST_PID"), os.Getenv("INSTALL_TEST_ROOT"), os.Getenv("INSTALL_TEST_DEB"), os.Getenv("INSTALL_TEST_TARGET")
	if pid == "" || root == "" || deb == "" || target == "" {
		t.Skip("needs a prepared root; run scripts/test-install.sh")
	}
	b := &box{t: t, pid: pid, root: root}
	wantArch := target[strings.Index(target, "/")+1:]
	if got := strings.TrimSpace(b.must("dpkg", "--print-architecture")); got != wantArch {
		t.Fatalf("the root is %s, want %s", got, wantArch)
	}
	suite := target[:strings.Index(target, "/")]
	if got := b.must("sh", "-c", ". /etc/os-release; echo $VERSION_CODENAME"); strings.TrimSpace(got) != suite {
		t.Fatalf("the root is %s, want %s", strings.TrimSpace(got), suite)
	}

	// apt resolves the Depends from the archive. The cached root has package
	// lists (an update under qemu costs minutes); when the archive has moved
	// on since (a 404 for a Depends), update and try again.
	install := func() (string, error) {
		return b.run("", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "--no-install-recommends", deb)
	}
	out, err := install()
	if err != nil && strings.Contains(out, "Failed to fetch") {
		t.Logf("apt-get install failed to fetch (the root's lists are older than the archive); apt-get update:\n%s", out)
		if up, err := b.run("", "apt-get", "update", "-q"); err != nil {
			t.Fatalf("apt-get update in the %s root: %v\n%s", target, err, up)
		}
		out, err = install()
	}
	t.Logf("apt-get install %s (%s):\n%s", deb, target, aptSummary(out))
	if err != nil {
		t.Fatalf("apt-get install: %v\n%s", err, out)
	}
	t.Logf("Depends: %s", strings.TrimSpace(b.must("dpkg-query", "-W", "-f", "${Depends}", "agenthost")))
	inst := strings.TrimSpace(b.must("dpkg-query", "-W", "-f", "${Package} ${Version} ${Architecture} ${db:Status-Abbrev}", "agenthost"))
	t.Logf("installed: %s", inst)
	if f := strings.Fields(inst); len(f) < 4 || f[2] != wantArch || f[3] != "ii" {
		t.Fatalf("dpkg says %q, want agenthost VERSION %s ii", inst, wantArch)
	}
	if got := b.must("id", "-nG", "agenthost"); !regexp.MustCompile(`\baudio\b`).MatchString(got) {
		t.Errorf("the user agenthost is not in the group audio: %s", got)
	}

	tok := make([]byte, 16)
	rand.Read(tok)
	token := "installtest-" + hex.EncodeToString(tok)
	srv, err := voicetest.NewServer(voicetest.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// What systemd's unit would give it: the runtime and state folders, the credential.
	b.sh(`install -d -o agenthost -g agenthost -m 0750 /run/agenthost /var/lib/agenthost
install -d -m 0700 /run/credentials/agenthost.service
chown agenthost /run/credentials/agenthost.service`)
	b.write("/run/credentials/agenthost.service/token", token+"\n", "0600")
	b.must("chown", "agenthost", "/run/credentials/agenthost.service/token")
	sets := []string{"--set", "server.address=" + srv.Addr(), "--set", "audio.backend=none",
		"--set", "plugins.runtime_dir=/run/agenthost", "--set", "plugins.state_dir=/var/lib/agenthost"}
	// qemu-user passes no Landlock system calls on (ENOSYS, in 7.2 and 10.0
	// alike), so in a foreign root the sandbox cannot start a child: check
	// says so and what to do, and the host runs its plugins unconfined here.
	// The sandbox itself is proven in the amd64 roots (TestChildrenFromThePackage).
	check, _ := b.run("", append([]string{"runuser", "-u", "agenthost", "--", "env", "CREDENTIALS_DIRECTORY=/run/credentials/agenthost.service",
		"agenthost", "check", "--offline", "--config", config}, sets...)...)
	unconfinable := strings.Contains(check, "no plugin, MCP stdio server, hook or wake-word detector will be started")
	switch {
	case unconfinable && !strings.Contains(check, "sandbox.mode: none"):
		t.Errorf("agenthost check says the sandbox cannot start children but not what to do:\n%s", check)
	case !unconfinable && wantArch != runtime.GOARCH:
		t.Errorf("agenthost check under qemu-user does not say that no child can be started:\n%s", check)
	}
	if unconfinable || wantArch != runtime.GOARCH {
		t.Logf("under qemu-user (no Landlock calls, no namespaces) the plugins run with sandbox.mode none")
		sets = append(sets, "--set", "sandbox.mode=none")
	}
	const pidFile = "/run/agenthost-test.pid"
	args := append([]string{"-t", pid, "-m", "-p", "-r", "-w", "--", "sh", "-c",
		`echo $$ > ` + pidFile + ` && exec setpriv --reuid=agenthost --regid=agenthost --init-groups env CREDENTIALS_DIRECTORY=/run/credentials/agenthost.service "$@"`,
		"sh", "agenthost", "run", "--config", config}, sets...)
	host := exec.Command("nsenter", args...)
	host.Env = boxEnv
	var log strings.Builder
	host.Stdout, host.Stderr = &log, &log
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the host has exited; then waitErr holds how
	var waitErr error
	go func() { waitErr = host.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			host.Process.Kill()
			<-exited
		}
		t.Logf("the host's log (%s):\n%s", target, log.String())
	}()

	// Under qemu a plugin takes a second or more to start: generous bounds.
	waitFor(t, srv, 3*time.Minute, "AUTH with the credential's token", func() bool {
		a := srv.Auths()
		return len(a) > 0 && a[len(a)-1].Token == token
	})
	waitFor(t, srv, 3*time.Minute, "a register with the bundled plugins' services", func() bool {
		return lastRegisterHas(srv, "get_current_time", "create_file", "get_system_info")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := srv.Call(ctx, "get_current_time", map[string]string{"format": "detailed"})
	if err != nil || !res.Success {
		t.Fatalf("the simulator's call of get_current_time: %+v, %v", res, err)
	}
	t.Logf("get_current_time through the link (%s): %s", target, res.Data)
	res, err = srv.Call(ctx, "get_system_info", map[string]any{})
	if err != nil || !res.Success {
		t.Fatalf("the simulator's call of get_system_info: %+v, %v", res, err)
	}
	// The CLI, through the running host's control socket (root may use it).
	st, err := b.run("", append([]string{"agenthost", "status", "--config", config}, sets...)...)
	if err != nil {
		t.Fatalf("agenthost status: %v\n%s", err, st)
	}
	out, err = b.run("", append([]string{"agenthost", "call", "get_current_time", `{"format":"simple"}`, "--config", config}, sets...)...)
	if err != nil || !strings.Contains(out, `"success": true`) {
		t.Fatalf("agenthost call get_current_time: %v\n%s", err, out)
	}

	// SIGTERM: ##DISCONNECT to the server and a clean exit.
	b.must("sh", "-c", "kill -TERM $(cat "+pidFile+")")
	waitFor(t, srv, time.Minute, "##DISCONNECT", func() bool { return disconnects(srv) > 0 })
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("the host exited with %v after SIGTERM, want 0", waitErr)
		}
	case <-time.After(time.Minute):
		t.Errorf("the host did not exit within a minute of SIGTERM")
	}
	if ps := b.processesOf("agenthost"); ps != "" {
		t.Errorf("processes of agenthost left after the host exited:\n%s", ps)
	}
}

// aptSummary keeps the lines of apt's output that say what it resolved and set up.
func aptSummary(out string) string {
	var keep []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "The following") || strings.HasPrefix(l, "Installing") || strings.HasPrefix(l, "Summary"):
			in = true
		case !strings.HasPrefix(l, " "):
			in = false
		}
		if in || strings.HasPrefix(l, "Setting up ") || strings.HasPrefix(l, "Get:") || strings.Contains(l, "upgraded,") ||
			strings.HasPrefix(l, "agenthost:") || strings.HasPrefix(l, "  Upgrading") || strings.HasPrefix(l, "  Installing") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
