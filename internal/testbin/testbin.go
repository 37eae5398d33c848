// Package testbin builds the project's real binaries for end-to-end tests,
// once per test process, into a temporary folder.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
)

// Build compiles the main package at pkg (a path below the module root,
// e.g. "./cmd/voicesim") with the given build tags and returns the binary's path.
func Build(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	return build(t, pkg, false, tags)
}

// ReleaseFlags are the go build flags of release builds, as
// scripts/package.sh and scripts/install.sh build the host and the
// plugins: no file paths, no symbol tables, position-independent (with
// cgo, which a position-independent build needs on armhf).
var ReleaseFlags = []string{"-trimpath", "-ldflags=-s -w", "-buildmode=pie"}

// ReleaseTags are the build tags every release build has: no gRPC tracing
// pages, no libopusfile (only the Opus encoder and decoder are used).
var ReleaseTags = []string{"grpcnotrace", "nolibopusfile"}

// BuildRelease compiles pkg as a release build (see ReleaseFlags), for
// benchmarks that measure what is shipped.
func BuildRelease(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	return build(t, pkg, true, tags)
}

func build(t testing.TB, pkg string, release bool, tags []string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := pkg + " " + strings.Join(tags, ",") + fmt.Sprint(release)
	if p, ok := built[key]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "agenthost-testbin-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	out := filepath.Join(dir, filepath.Base(pkg)+strings.Join(append([]string{""}, tags...), "-"))
	args := []string{"build"}
	if release {
		out += "-release"
		tags = append(append([]string(nil), tags...), ReleaseTags...)
		args = append(args, ReleaseFlags...)
	}
	cmd := exec.Command("go", append(args, "-tags", strings.Join(tags, ","), "-o", out, pkg)...)
	cmd.Dir = ModuleRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	built[key] = out
	return out
}

// ModuleRoot returns the folder holding go.mod.
func ModuleRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testbin: cannot find the module root")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Cleanup removes the built binaries; call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir, built = "", map[string]string{}
	}
}
