package scripts

import (
	"os/exec"
	"strings"
	"testing"
)

// newGnupgHome is an empty GNUPGHOME whose agent ends with the test.
func newGnupgHome(t *testing.T) (home string, gpg func(args ...string) string) {
	t.Helper()
	home = t.TempDir()
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() { exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run() })
	return home, func(args ...string) string {
		return run(t, home, env, "gpg", append([]string{"--batch", "--quiet", "--passphrase", ""}, args...)...)
	}
}

// fingerprint is the fingerprint of the key with the user id uid.
func fingerprint(t *testing.T, gpg func(args ...string) string, uid string) string {
	t.Helper()
	for _, l := range strings.Split(gpg("--with-colons", "--list-keys", uid), "\n") {
		if f := strings.Split(l, ":"); f[0] == "fpr" {
			return f[9]
		}
	}
	t.Fatalf("no fingerprint for %s", uid)
	return ""
}

// TestTheRepositoryIsSignedWithAUsableKey: with an expired signing key
// listed before a usable one, scripts/repo.sh signs with the usable one
// (found by review: its filter matched the lowercase s an expired key keeps,
// and reprepro failed with "Unusable secret key"); with only the expired
// key, it fails naming the key and why, and makes no new one (the speakers
// trust the old one: extend it).
func TestTheRepositoryIsSignedWithAUsableKey(t *testing.T) {
	need(t, "gpg", "gpgconf", "reprepro", "dpkg-deb")
	home, gpg := newGnupgHome(t)
	gpg("--faked-system-time", "20200101T000000", "--quick-gen-key", "expired archive <old@agenthost.invalid>", "ed25519", "sign", "1d")
	old := fingerprint(t, gpg, "old@agenthost.invalid")

	t.Run("only an expired key", func(t *testing.T) {
		out, errOut, err := runErr(t.TempDir(), []string{"GNUPGHOME=" + home, "REPO_KEY="}, script(t, "repo.sh"), t.TempDir())
		if err == nil {
			t.Fatalf("repo.sh signed with only an expired key:\n%s%s", out, errOut)
		}
		if !strings.Contains(errOut, old) || !strings.Contains(errOut, "expired") {
			t.Errorf("repo.sh's error does not name the expired key %s and say it expired:\n%s", old, errOut)
		}
		if n := strings.Count("\n"+gpg("--with-colons", "--list-secret-keys"), "\nsec:"); n != 1 {
			t.Errorf("after repo.sh GNUPGHOME holds %d secret keys, want the expired one only", n)
		}
	})

	gpg("--quick-gen-key", "agenthost archive <archive@agenthost.invalid>", "ed25519", "sign", "never")
	usable := fingerprint(t, gpg, "archive@agenthost.invalid")
	_, errOut, err := runErr(t.TempDir(), []string{"GNUPGHOME=" + home, "REPO_KEY="}, script(t, "repo.sh"), t.TempDir())
	if err != nil {
		t.Fatalf("repo.sh with an expired and a usable key: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "signed by "+usable) {
		t.Errorf("repo.sh did not sign with the usable key %s (the expired one is %s):\n%s", usable, old, errOut)
	}
}
