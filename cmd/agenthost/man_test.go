package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestManPages builds agenthost(1) and agenthost.yaml(5) as the packages
// do and reads them with man -l: every command is in the first with its
// usage and example, every top-level key of the example configuration in
// the second with its comments, and man has no warning about either.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	example := filepath.Join("..", "..", "agenthost.example.yaml")
	var out, errOut bytes.Buffer
	if err := run([]string{"man", "--example", example, dir}, nil, &out, &errOut); err != nil {
		t.Fatalf("agenthost man: %v\n%s", err, errOut.String())
	}
	cmdPage := readMan(t, filepath.Join(dir, "agenthost.1"))
	for name := range commands {
		if !regexp.MustCompile(`(?m)^   ` + name + `\n`).MatchString(cmdPage) {
			t.Errorf("agenthost(1) has no section for %s", name)
		}
		if !strings.Contains(cmdPage, "usage: agenthost "+name) || !strings.Contains(cmdPage, helps[name].examples[0]) {
			t.Errorf("agenthost(1) lacks the usage or the example of %s", name)
		}
	}
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	confPage := readMan(t, filepath.Join(dir, "agenthost.yaml.5"))
	for key := range keys {
		if !regexp.MustCompile(`(?m)^   ` + key + `\n`).MatchString(confPage) {
			t.Errorf("agenthost.yaml(5) has no section for %s", key)
		}
	}
	// Every comment line of the example is in the page.
	for _, line := range strings.Split(string(b), "\n") {
		if c := strings.TrimSpace(line); strings.HasPrefix(c, "# ") && !strings.Contains(confPage, strings.TrimSpace(strings.TrimPrefix(c, "#"))) {
			t.Errorf("agenthost.yaml(5) lacks the comment %q", c)
			break
		}
	}
}

// readMan renders page with man -l as a reader sees it; a warning fails.
func readMan(t *testing.T, page string) string {
	t.Helper()
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("no man here (apt-get install man-db)")
	}
	cmd := exec.Command("man", "--warnings", "-l", page)
	cmd.Env = append(os.Environ(), "MANWIDTH=100", "MAN_KEEP_FORMATTING=", "LC_ALL=C.UTF-8", "MANPAGER=cat", "PAGER=cat")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("man -l %s: %v\n%s", filepath.Base(page), err, stderr.String())
	}
	return string(out)
}
