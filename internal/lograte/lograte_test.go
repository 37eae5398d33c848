package lograte_test

import (
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/internal/lograte"
	"github.com/agenthost/agenthost/internal/testbin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lines returns the lines with msg and the number of events they stand
// for: one each, or a count line's repeated=N.
func lines(log, msg string) (n, events int) {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "msg=\""+msg+"\"") && !strings.Contains(line+" ", "msg="+msg+" ") {
			continue
		}
		n++
		if m := regexp.MustCompile(`repeated=(\d+)`).FindStringSubmatch(line); m != nil {
			r, _ := strconv.Atoi(m[1])
			events += r
		} else {
			events++
		}
	}
	return n, events
}

// TestAFloodIsCounted: 1,000 like lines make two (the first, then the
// count at Stop); another message has its own period; lines after Stop go
// out as they come.
func TestAFloodIsCounted(t *testing.T) {
	buf := &testbin.Buffer{}
	l := lograte.New(slog.New(slog.NewTextHandler(buf, nil)), time.Hour)
	for i := range 1000 {
		l.Warn("refused a request", "remote", "10.0.0."+strconv.Itoa(i%200))
	}
	l.Warn("another kind")
	if n, ev := lines(buf.String(), "refused a request"); n != 1 || ev != 1 {
		t.Errorf("before the period ends: %d lines for %d events, want the first only", n, ev)
	}
	l.Stop()
	if n, ev := lines(buf.String(), "refused a request"); n != 2 || ev != 1000 {
		t.Errorf("after Stop: %d lines for %d events, want 2 for 1000:\n%s", n, ev, buf)
	}
	if !strings.Contains(buf.String(), "remote=10.0.0.199 repeated=999") {
		t.Errorf("the count line lacks the last line's attributes:\n%s", buf)
	}
	if n, _ := lines(buf.String(), "another kind"); n != 1 {
		t.Errorf("another message: %d lines, want 1", n)
	}
	l.Warn("refused a request")
	l.Warn("refused a request")
	if n, ev := lines(buf.String(), "refused a request"); n != 4 || ev != 1002 {
		t.Errorf("after Stop, lines go out as they come: %d lines for %d events", n, ev)
	}
}

// TestThePeriodEnds: the count comes when the period ends, without Stop,
// and the next line starts a new period.
func TestThePeriodEnds(t *testing.T) {
	buf := &testbin.Buffer{}
	l := lograte.New(slog.New(slog.NewTextHandler(buf, nil)), 50*time.Millisecond)
	defer l.Stop()
	for range 10 {
		l.Warn("refused")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "repeated=9") {
		if time.Now().After(deadline) {
			t.Fatalf("no count after the period:\n%s", buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.Warn("refused")
	if n, ev := lines(buf.String(), "refused"); n != 3 || ev != 11 {
		t.Errorf("%d lines for %d events, want 3 for 11:\n%s", n, ev, buf)
	}
}
