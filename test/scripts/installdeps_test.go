package scripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheTestVoicesSourceKeepsAptReadingItsList: the entry
// scripts/install-deps.sh adds for Debian's contrib and non-free (the test
// voices) names the keyring the system's own Debian entry names. Found by
// review: it named debian-archive-keyring.gpg, and on trixie, whose
// debian.sources names debian-archive-keyring.pgp, apt then reads no list
// at all ("Conflicting values set for option Signed-By"): every apt-get,
// and every script (scripts/env.sh runs install-deps.sh), failed.
func TestTheTestVoicesSourceKeepsAptReadingItsList(t *testing.T) {
	need(t, "bash", "apt-cache")
	body, err := os.ReadFile(script(t, "install-deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?ms)^voices_source\(\) \{.*?^\}$`).FindString(string(body))
	if fn == "" {
		t.Fatal("scripts/install-deps.sh has no voices_source function")
	}
	for suite, keyring := range map[string]string{"bookworm": "debian-archive-keyring.gpg", "trixie": "debian-archive-keyring.pgp"} {
		t.Run(suite, func(t *testing.T) {
			dir := t.TempDir()
			parts := filepath.Join(dir, "sources.list.d")
			if err := os.MkdirAll(filepath.Join(dir, "lists", "partial"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(parts, 0o755); err != nil {
				t.Fatal(err)
			}
			own := "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: " + suite + " " + suite + "-updates\nComponents: main\nSigned-By: /usr/share/keyrings/" + keyring + "\n"
			if err := os.WriteFile(filepath.Join(parts, "debian.sources"), []byte(own), 0o644); err != nil {
				t.Fatal(err)
			}
			// A stale entry of ours (an earlier run's) names the wrong one.
			stale := "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: " + suite + "\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/wrong.gpg\n"
			ours := filepath.Join(parts, "agenthost-test-voices.sources")
			if err := os.WriteFile(ours, []byte(stale), 0o644); err != nil {
				t.Fatal(err)
			}
			entry := run(t, dir, []string{"APT_SOURCES_D=" + parts}, "bash", "-c", "set -euo pipefail\n"+fn+"\nvoices_source "+suite)
			if err := os.WriteFile(ours, []byte(entry), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := runErr(dir, nil, "apt-cache",
				"-o", "Dir::Etc::SourceList=/dev/null", "-o", "Dir::Etc::SourceParts="+parts,
				"-o", "Dir::State::Lists="+filepath.Join(dir, "lists"), "-o", "Dir::Cache="+filepath.Join(dir, "cache"), "policy")
			if err != nil || strings.Contains(errOut, "E:") {
				t.Errorf("apt reads no list with the entry added:\n%s\n%s%s", entry, out, errOut)
			}
		})
	}
}
