package testbin

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use, for capturing the logs of a
// process or a logger while a test reads them.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Line returns the first line that contains every one of parts.
func (l *Buffer) Line(parts ...string) (string, bool) {
	for _, line := range strings.Split(l.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return line, true
		}
	}
	return "", false
}
