// Package linewriter turns a byte stream (a child process's stderr, a
// hook's output) into lines for a logger, with a bound on how much of one
// line it holds: a line longer than the bound is passed on in pieces.
package linewriter

import (
	"bytes"
	"sync"
)

// DefaultMax is the longest line passed on whole.
const DefaultMax = 4096

// Writer is an io.Writer that calls Line for every complete line written
// to it, without the newline. It is safe for concurrent use.
type Writer struct {
	line func([]byte)
	max  int

	mu  sync.Mutex
	buf []byte
}

// New returns a Writer that passes each line to line; lines longer than max
// bytes (DefaultMax when max <= 0) are passed on in pieces of max bytes.
// line must not keep the slice.
func New(max int, line func([]byte)) *Writer {
	if max <= 0 {
		max = DefaultMax
	}
	return &Writer{line: line, max: max}
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit()
		p = p[i+1:]
	}
	for len(w.buf) > w.max {
		w.line(w.buf[:w.max])
		w.buf = append(w.buf[:0], w.buf[w.max:]...)
	}
	return n, nil
}

// Flush passes on a last line that has no newline.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit()
	}
}

// emit passes on w.buf (in pieces if long) and empties it; w.mu held.
func (w *Writer) emit() {
	b := bytes.TrimSuffix(w.buf, []byte("\r"))
	for len(b) > w.max {
		w.line(b[:w.max])
		b = b[w.max:]
	}
	w.line(b)
	w.buf = w.buf[:0]
}
