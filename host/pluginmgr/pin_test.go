package pluginmgr

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/testbin"
)

// TestPinIsCheckedOnTheFileStarted: the sha256 pin is checked when the
// plugin is started, on the open file that is then executed, not only when
// the binary was noticed: a binary swapped in after that is refused.
func TestPinIsCheckedOnTheFileStarted(t *testing.T) {
	good, err := os.ReadFile(testbin.Build(t, "./cmd/agenthost/testdata/plugins/faulty"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "faulty")
	os.WriteFile(path, good, 0o755)
	hash, err := fileHash(path)
	if err != nil {
		t.Fatal(err)
	}
	p := config.Default().Plugins
	p.SHA256 = map[string]string{"faulty": hash}
	m := New(Options{Plugins: p, RuntimeDir: t.TempDir()}, services.NewRegistry(services.RegistryOptions{}))
	os.MkdirAll(m.socketDir, 0o700)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	inst, err := m.start(ctx, "faulty", path)
	if err != nil {
		t.Fatalf("the pinned binary: %v", err)
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(inst.pid) + "/exe")
	inst.Kill()
	if exe != path {
		t.Fatalf("the process runs %q, want %q", exe, path)
	}

	tmp := filepath.Join(dir, ".faulty.tmp") // swapped in after the binary was noticed
	os.WriteFile(tmp, append(good, 0), 0o755)
	os.Rename(tmp, path)
	if _, err := m.start(ctx, "faulty", path); err == nil || !strings.Contains(err.Error(), "does not match plugins.sha256.faulty") {
		t.Fatalf("a swapped binary: %v", err)
	}
}
