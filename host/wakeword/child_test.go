package wakeword

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestADetectorsLastWordsAreRead: a detector that writes its error line
// and exits at once (a library that cannot be loaded) is reported by that
// line, every time. Found by a full run: the host read stdout from
// StdoutPipe, which Wait closes as soon as the child exits, so the line
// was now and then lost ("read |0: file already closed"). The detector
// here is a stand-in (a shell script): the fault is its timing, which the
// real one meets only now and then.
func TestADetectorsLastWordsAreRead(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "detector")
	script := "#!/bin/sh\necho '{\"type\":\"error\",\"error\":\"cannot load /nonexistent/lib.so\"}'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := start(ctx, bin, nil, slog.New(slog.DiscardHandler), nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/lib.so") {
			lost++
			t.Logf("start: %v", err)
		}
	}
	if lost > 0 {
		t.Errorf("the detector's error line was lost %d times in 200", lost)
	}
}
