package scripts

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// TestEverySecurityDoorNamesATestThatExists: each row of docs/security.md's
// table of doors names at least one test, and every test it names is
// defined in the tree, so the document cannot outlive what proves it.
func TestEverySecurityDoorNamesATestThatExists(t *testing.T) {
	root := testbin.ModuleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			for _, m := range decl.FindAllSubmatch(b, -1) {
				defined[string(m[1])] = true
			}
		}
		return nil
	})
	_, doors, ok := strings.Cut(string(doc), "## The doors")
	if !ok {
		t.Fatal(`docs/security.md has no "## The doors" section`)
	}
	doors, _, _ = strings.Cut(doors, "\n## ")
	named := regexp.MustCompile("`(Test\\w+)`")
	rows := 0
	for _, line := range strings.Split(doors, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| door ") {
			continue
		}
		rows++
		tests := named.FindAllStringSubmatch(line, -1)
		if len(tests) == 0 {
			t.Errorf("a door names no test: %s", line)
		}
		for _, m := range tests {
			if !defined[m[1]] {
				t.Errorf("docs/security.md names %s, which no test file defines", m[1])
			}
		}
	}
	if rows < 10 {
		t.Errorf("only %d doors found in docs/security.md", rows)
	}
}
