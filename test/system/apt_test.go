//go:build system

package system

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestAptRepository publishes the packages into a signed repository with
// scripts/repo.sh (reprepro, gpg), serves it over HTTP on 127.0.0.1 (the
// booted root shares the network) and, under the real systemd, does what a
// speaker does: a deb822 source with Signed-By:, `apt-get install
// agenthost`, then a newer build published and taken by `apt-get upgrade`
// with the edited config kept and the service restarted. A repository whose
// Packages was changed after signing, one that is not signed and one signed
// by another key are refused by apt.
func TestAptRepository(t *testing.T) {
	pid, root, repo, suite := os.Getenv("SYSTEM_TEST_PID"), os.Getenv("SYSTEM_TEST_ROOT"), os.Getenv("SYSTEM_TEST_REPO"), os.Getenv("SYSTEM_TEST_SUITE")
	deb, prev := os.Getenv("REPO_TEST_DEB"), os.Getenv("REPO_TEST_DEB_PREV")
	if pid == "" || root == "" || repo == "" || suite == "" || deb == "" || prev == "" {
		t.Skip("needs a booted systemd; run scripts/test-system.sh")
	}
	b := &box{t: t, pid: pid, root: root}
	tok := make([]byte, 16)
	rand.Read(tok)
	token := "repotest-" + hex.EncodeToString(tok)
	srv, err := voicetest.NewServer(voicetest.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// A clean start: no agenthost from an earlier test in this boot (and no
	// /etc/agenthost: install.sh --uninstall keeps it, and dpkg would then ask
	// about a conffile it did not install).
	b.run("", "dpkg", "--purge", "agenthost")
	b.run("", "rm", "-rf", "/etc/agenthost")

	tmp := t.TempDir()
	gnupg, pub := filepath.Join(tmp, "gnupg"), filepath.Join(tmp, "repo")
	publish := func(home, dir string, debs ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(repo, "scripts/repo.sh"), append([]string{dir}, debs...)...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/repo.sh %s: %v\n%s", dir, err, out)
		}
		t.Logf("scripts/repo.sh: %s", strings.TrimSpace(string(out)))
	}
	for _, home := range []string{gnupg, filepath.Join(tmp, "gnupg-other")} {
		defer func() { // gpg leaves an agent running per GNUPGHOME
			kill := exec.Command("gpgconf", "--kill", "all")
			kill.Env = append(os.Environ(), "GNUPGHOME="+home)
			kill.Run()
		}()
	}
	publish(gnupg, pub, prev)

	// Serve the folder, as any web server would; /unsigned and /otherkey are the bad copies.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.FileServer(http.Dir(tmp)), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	const keyring = "/usr/share/keyrings/agenthost-archive-keyring.gpg"
	const sources = "/etc/apt/sources.list.d/agenthost.sources"
	b.copyIn(filepath.Join(pub, "agenthost-archive-keyring.gpg"), keyring)
	b.must("chmod", "0644", keyring)
	source := func(path string) string {
		return "Types: deb\nURIs: " + base + "/" + path + "/\nSuites: " + suite + "\nComponents: main\nSigned-By: " + keyring + "\n"
	}
	b.write(sources, source("repo"), "0644")
	defer b.run("", "rm", "-f", sources, keyring)
	// Only this source: the root's Debian sources are not what is tested, and
	// the Depends are in the cached root already.
	apt := func(args ...string) (string, error) {
		return b.run("", append([]string{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get",
			"-o", "Dir::Etc::SourceList=/dev/null", "-o", "Dir::Etc::SourceParts=/etc/apt/sources.list.d"}, args...)...)
	}
	mustApt := func(args ...string) string {
		t.Helper()
		out, err := apt(args...)
		if err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	version := func() string { return strings.TrimSpace(b.must("dpkg-query", "-W", "-f", "${Version}", "agenthost")) }
	debVersion := func(path string) string {
		out, err := exec.Command("dpkg-deb", "-f", path, "Version").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}

	t.Logf("apt-get update:\n%s", mustApt("update"))
	out := mustApt("install", "-y", "agenthost")
	t.Logf("apt-get install agenthost:\n%s", aptSummary(out))
	if v, want := version(), debVersion(prev); v != want {
		t.Fatalf("installed %s from the repository, want %s", v, want)
	}
	if st := b.active(); st != "active" {
		t.Fatalf("after apt-get install the service is %q, want active\n%s", st, b.journalSince(""))
	}

	// The speaker's owner points it at the server and gives it the token.
	cfg := b.read(config)
	edited := strings.Replace(cfg, "address: 127.0.0.1:8009", "address: "+srv.Addr(), 1) + "# edited on the speaker\n"
	b.write(config, edited, "0644")
	b.sh("install -d -m 0700 /etc/credstore")
	b.write("/etc/credstore/agenthost.token", token+"\n", "0600")
	defer b.run("", "rm", "-f", "/etc/credstore/agenthost.token")
	b.must("systemctl", "restart", unit)
	waitFor(t, srv, time.Minute, "a register from the installed host", func() bool { return lastRegisterHas(srv, "get_current_time") })
	oldPID, auths := b.prop("MainPID"), len(srv.Auths())

	t.Run("a newer build is published and apt-get upgrade takes it", func(t *testing.T) {
		publish(gnupg, pub, deb)
		mustApt("update")
		out := mustApt("upgrade", "-y")
		t.Logf("apt-get upgrade:\n%s", aptSummary(out))
		if v, want := version(), debVersion(deb); v != want {
			t.Fatalf("after apt-get upgrade agenthost is %s, want %s", v, want)
		}
		if got := b.read(config); got != edited {
			t.Errorf("the upgrade changed the edited config")
		}
		if st, p := b.active(), b.prop("MainPID"); st != "active" || p == oldPID || p == "0" {
			t.Fatalf("after the upgrade the unit is %s with MainPID %s (before: %s), want active under a new process", st, p, oldPID)
		}
		waitFor(t, srv, time.Minute, "a new AUTH from the upgraded host", func() bool { return len(srv.Auths()) > auths })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if res, err := srv.Call(ctx, "get_current_time", map[string]string{"format": "simple"}); err != nil || !res.Success {
			t.Fatalf("get_current_time after the upgrade: %+v, %v", res, err)
		}
	})

	// apt must refuse each of these, and keep to what it had.
	refused := func(t *testing.T, what string, wantErr ...string) {
		t.Helper()
		before := strings.TrimSpace(b.must("apt-cache", "-o", "Dir::Etc::SourceList=/dev/null", "policy", "agenthost"))
		out, err := apt("update")
		if err == nil {
			t.Fatalf("apt-get update accepted %s:\n%s", what, out)
		}
		found := false
		for _, w := range wantErr {
			found = found || strings.Contains(out, w)
		}
		if !found {
			t.Errorf("apt-get update refused %s but without any of %q:\n%s", what, wantErr, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "E:") || strings.HasPrefix(l, "W:") || strings.HasPrefix(l, "Err:") {
				t.Logf("refused %s: %s", what, l)
			}
		}
		if after := strings.TrimSpace(b.must("apt-cache", "-o", "Dir::Etc::SourceList=/dev/null", "policy", "agenthost")); strings.Contains(after, "99:") || !strings.Contains(after, version()) {
			t.Errorf("after refusing %s apt's candidate changed:\nbefore:\n%s\nafter:\n%s", what, before, after)
		}
	}

	t.Run("a Packages file changed after signing is refused", func(t *testing.T) {
		bin := filepath.Join(pub, "dists", suite, "main", "binary-amd64")
		saved := map[string][]byte{}
		for _, n := range []string{"Packages", "Packages.gz", "Packages.xz"} {
			if c, err := os.ReadFile(filepath.Join(bin, n)); err == nil {
				saved[n] = c
			}
		}
		defer func() {
			for n, c := range saved {
				os.WriteFile(filepath.Join(bin, n), c, 0o644)
			}
		}()
		plain := saved["Packages"]
		if plain == nil {
			t.Fatalf("the repository has no plain Packages in %s", bin)
		}
		// The attack: a higher version, pointing at the same file.
		evil := bytes.Replace(plain, []byte("\nVersion: "), []byte("\nVersion: 99:"), 1)
		os.WriteFile(filepath.Join(bin, "Packages"), evil, 0o644)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(evil)
		zw.Close()
		os.WriteFile(filepath.Join(bin, "Packages.gz"), gz.Bytes(), 0o644)
		os.Remove(filepath.Join(bin, "Packages.xz"))
		// A speaker that has the signed index already keeps it (the InRelease is
		// unchanged: "Hit"); one that fetches it now, as a new speaker does, must
		// refuse the tampered file.
		b.sh("rm -f /var/lib/apt/lists/127.0.0.1*") // 127.0.0.1:PORT_repo_dists_… (the port escaped)
		refused(t, "a tampered Packages", "Hash Sum mismatch", "unexpected size", "Hashes of expected file")
	})

	t.Run("an unsigned repository is refused", func(t *testing.T) {
		dir := filepath.Join(tmp, "unsigned")
		if out, err := exec.Command("cp", "-a", pub, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		for _, n := range []string{"InRelease", "Release.gpg"} {
			if err := os.Remove(filepath.Join(dir, "dists", suite, n)); err != nil {
				t.Fatal(err)
			}
		}
		b.write(sources, source("unsigned"), "0644")
		defer b.write(sources, source("repo"), "0644")
		refused(t, "an unsigned repository", "is not signed")
	})

	t.Run("a repository signed by another key is refused", func(t *testing.T) {
		dir := filepath.Join(tmp, "otherkey")
		publish(filepath.Join(tmp, "gnupg-other"), dir, deb)
		b.write(sources, source("otherkey"), "0644")
		defer b.write(sources, source("repo"), "0644")
		refused(t, "a repository signed by another key", "NO_PUBKEY", "not signed", "Missing key", "signatures couldn't be verified", "Signed-By")
	})

	mustApt("update")
	out = mustApt("purge", "-y", "agenthost")
	t.Logf("apt-get purge agenthost:\n%s", aptSummary(out))
}
