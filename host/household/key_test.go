package household

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestACodeReadsBackAsItsKey(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	code := k.Code()
	if len(code) != 34 || strings.Count(code, "-") != 6 {
		t.Errorf("code %q: want 7 groups of 4", code)
	}
	for _, typed := range []string{code, strings.ToLower(code), strings.ReplaceAll(code, "-", " "), strings.ReplaceAll(code, "-", "")} {
		got, err := ParseCode(typed)
		if err != nil || got != k {
			t.Errorf("ParseCode(%q) = %x, %v; want %x", typed, got, err, k)
		}
	}
}

func TestATypoInACodeIsCaught(t *testing.T) {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	// Every one-letter typo, at every place, of keys that end alike and
	// of random ones: the check must catch each, not most.
	keys := []Key{{}, {15: 1}, {0: 0xff, 15: 0xff}}
	for range 5 {
		k, _ := NewKey()
		keys = append(keys, k)
	}
	for _, k := range keys {
		code := []byte(k.Code())
		for i := range code {
			if code[i] == '-' {
				continue
			}
			for _, c := range []byte(letters) {
				if c == code[i] {
					continue
				}
				typo := append([]byte(nil), code...)
				typo[i] = c
				if got, err := ParseCode(string(typo)); err == nil {
					t.Errorf("%s read as %x: the typo at %d (%c for %c) slipped through", typo, got, i, c, code[i])
				}
			}
		}
		for _, bad := range []string{"", "ABCD", strings.Replace(string(code), string(code[0]), "0", 1)} {
			if _, err := ParseCode(bad); err == nil {
				t.Errorf("ParseCode(%q) took it", bad)
			}
		}
	}
}

func TestTheKeyIsKeptForItsOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := LoadKey(dir); ok || err != nil {
		t.Fatalf("no key yet: got ok %v, %v", ok, err)
	}
	k, _ := NewKey()
	if err := SaveKey(dir, k); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(KeyPath(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi.Mode(), err)
	}
	got, ok, err := LoadKey(dir)
	if !ok || err != nil || got != k {
		t.Fatalf("LoadKey: %x %v %v", got, ok, err)
	}
	os.Chmod(KeyPath(dir), 0o644)
	if _, _, err := LoadKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key others may read: %v, want a refusal that says chmod 600", err)
	}
	os.Remove(KeyPath(dir))
	os.Symlink(filepath.Join(dir, "elsewhere"), KeyPath(dir))
	if _, _, err := LoadKey(dir); err == nil {
		t.Errorf("a link in place of the key was followed")
	}
	if err := RemoveKey(dir); err != nil {
		t.Fatal(err)
	}
	if err := RemoveKey(dir); err != nil {
		t.Errorf("removing no key: %v", err)
	}
}

func FuzzParseCode(f *testing.F) {
	k, _ := NewKey()
	f.Add(k.Code())
	f.Add("abcd-efgh")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseCode(s)
		if err == nil {
			if again, err := ParseCode(k.Code()); err != nil || again != k {
				t.Fatalf("%q read as %x, whose code does not read back", s, k)
			}
		}
	})
}
