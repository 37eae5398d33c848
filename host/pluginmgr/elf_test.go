package pluginmgr_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/pluginmgr"
)

// TestPluginWithoutSectionHeadersIsLoaded: a plugin binary without section
// headers (sstrip, UPX) is started like any other, not taken for a file
// still being written.
func TestPluginWithoutSectionHeadersIsLoaded(t *testing.T) {
	x := startManager(t, nil, func(p *config.Plugins) { p.Debounce = config.Duration(50 * time.Millisecond) })
	b, err := os.ReadFile(faultyBin(t))
	if err != nil {
		t.Fatal(err)
	}
	stripped := filepath.Join(t.TempDir(), "faulty")
	if err := os.WriteFile(stripped, pluginmgr.Sstrip(t, b), 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, stripped, x.dir, "faulty", 0)
	x.waitStatus("faulty", "ready", ready)
	x.running("faulty", "faulty_ok")
}

// TestIncompleteBinaryIsRefusedWithAReason: a binary that stays cut short
// (a copy that died half way) is not waited on for ever: once it has not
// changed for the debounce it is refused at WARN, saying why, and started
// when its missing part arrives.
func TestIncompleteBinaryIsRefusedWithAReason(t *testing.T) {
	x := startManager(t, nil, func(p *config.Plugins) { p.Debounce = config.Duration(50 * time.Millisecond) })
	b, err := os.ReadFile(faultyBin(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(x.dir, "faulty")
	if err := os.WriteFile(path, b[:len(b)/2], 0o755); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !hasLine(x.log.String(), "level=WARN", "plugin=faulty", "incomplete") {
		if time.Now().After(deadline) {
			t.Fatal("no WARN line says the binary is incomplete")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := x.status("faulty"); s.Name != "" && s.PID != 0 {
		t.Fatalf("an incomplete binary was started: %+v", s)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b[len(b)/2:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	x.waitStatus("faulty", "ready", ready)
	x.running("faulty", "faulty_ok")
}

// hasLine reports whether one line of log holds every one of parts.
func hasLine(log string, parts ...string) bool {
	for _, l := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
