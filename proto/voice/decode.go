package voice

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// FrameError reports a malformed frame. The decoder has already skipped it and
// the next Decode continues with the following frame.
type FrameError struct {
	Reason string
}

func (e *FrameError) Error() string { return "voice: malformed frame: " + e.Reason }

// IsFrameError reports whether err is a recoverable *FrameError.
func IsFrameError(err error) bool {
	var fe *FrameError
	return errors.As(err, &fe)
}

var (
	startBytes = []byte(StartMarker)
	endBytes   = []byte(EndMarker)
	markBytes  = []byte("##")
)

const readChunk = 32 << 10

// Decoder reads frames from a byte stream. Frames may be split across reads
// or several may arrive in one; bytes outside frames are skipped and counted.
// Its buffer never grows beyond the frame limit plus one read.
type Decoder struct {
	r        io.Reader
	buf      []byte
	start    int // buffered bytes are buf[start:end]
	end      int
	scan     int // offset from start where the search for the end marker resumes
	max      int
	skipped  int64
	lastTask string
	err      error // sticky read error, returned once the buffer is drained
}

// DecoderOption configures a Decoder.
type DecoderOption func(*Decoder)

// WithMaxFrame bounds the size of one frame, markers included. Values below
// the minimum frame size are raised to it.
func WithMaxFrame(n int) DecoderOption {
	return func(d *Decoder) { d.max = max(n, bracketedHeaderLen+len(EndMarker)) }
}

// NewDecoder returns a decoder reading from r with a 1 MiB frame limit unless
// an option says otherwise.
func NewDecoder(r io.Reader, opts ...DecoderOption) *Decoder {
	d := &Decoder{r: r, max: DefaultMaxFrame}
	for _, o := range opts {
		o(d)
	}
	d.buf = make([]byte, min(d.max+readChunk, 64<<10))
	return d
}

// Reset discards buffered input and state and reads from r, keeping the buffer.
func (d *Decoder) Reset(r io.Reader) {
	d.r, d.start, d.end, d.scan, d.skipped, d.lastTask, d.err = r, 0, 0, 0, 0, "", nil
}

// Skipped returns how many bytes outside frames have been discarded so far.
func (d *Decoder) Skipped() int64 { return d.skipped }

// MaxFrame returns the frame size limit.
func (d *Decoder) MaxFrame() int { return d.max }

// Decode returns the next frame. The payload is a fresh copy the caller owns.
// A *FrameError means one malformed frame was skipped and decoding may go on;
// any other error (io.EOF, io.ErrUnexpectedEOF, a read error) is final.
func (d *Decoder) Decode() (Frame, error) {
	f, err := d.Next()
	if len(f.Payload) > 0 {
		f.Payload = append([]byte(nil), f.Payload...)
	}
	return f, err
}

// Next is Decode without the copy: the payload aliases the decoder's buffer
// and is valid only until the next call.
func (d *Decoder) Next() (Frame, error) {
	for {
		f, ok, err := d.next()
		if ok || err != nil {
			return f, err
		}
		if err := d.fill(); err != nil {
			if err == io.EOF && d.end > d.start && d.partialFrame() {
				return Frame{}, fmt.Errorf("voice: stream ended inside a frame (%d bytes buffered): %w", d.end-d.start, io.ErrUnexpectedEOF)
			}
			return Frame{}, err
		}
	}
}

// partialFrame reports whether the buffered bytes begin a frame.
func (d *Decoder) partialFrame() bool {
	return bytes.HasPrefix(d.buf[d.start:d.end], startBytes)
}

// next tries to cut one frame from the buffer. ok=false, err=nil means more
// input is needed.
func (d *Decoder) next() (f Frame, ok bool, err error) {
	data := d.buf[d.start:d.end]
	if !bytes.HasPrefix(data, startBytes) {
		i := bytes.Index(data, startBytes)
		if i < 0 {
			// Keep a tail that could be the beginning of a split marker.
			keep := min(len(data), len(StartMarker)-1)
			d.discard(len(data) - keep)
			return Frame{}, false, nil
		}
		d.discard(i)
		data = d.buf[d.start:d.end]
	}
	if len(data) < headerLen {
		return Frame{}, false, nil
	}
	hdr := headerLen
	if data[len(StartMarker)+1+TaskLen] == '[' {
		hdr = bracketedHeaderLen
	}
	if d.scan < headerLen {
		d.scan = headerLen
	}
	for {
		j := bytes.Index(data[d.scan:], markBytes)
		if j < 0 {
			d.scan = max(headerLen, len(data)-1)
			return Frame{}, false, d.checkLimit(len(data))
		}
		k := d.scan + j
		rest := data[k:]
		switch {
		case bytes.HasPrefix(rest, endBytes):
			total := k + len(EndMarker)
			if total > d.max {
				d.drop(total)
				return Frame{}, false, d.oversized()
			}
			f, err := d.cut(data[:k], hdr)
			d.drop(total)
			return f, err == nil, err
		case bytes.HasPrefix(rest, startBytes):
			d.drop(k)
			if k > d.max {
				return Frame{}, false, d.oversized()
			}
			return Frame{}, false, &FrameError{Reason: fmt.Sprintf("a new %s began before %s after %d bytes; the truncated frame was dropped", StartMarker, EndMarker, k)}
		case len(rest) < len(StartMarker) && (bytes.HasPrefix(endBytes, rest) || bytes.HasPrefix(startBytes, rest)):
			d.scan = k // a marker may be split across reads
			return Frame{}, false, d.checkLimit(len(data))
		default:
			d.scan = k + 1
		}
	}
}

// checkLimit fails a frame that has grown past the limit without an end marker.
func (d *Decoder) checkLimit(buffered int) error {
	if buffered <= d.max {
		return nil
	}
	// Skip this frame's start marker; the next Decode resynchronises on the
	// following ##START.
	d.drop(len(StartMarker))
	return d.oversized()
}

func (d *Decoder) oversized() error {
	return &FrameError{Reason: fmt.Sprintf("frame exceeds the %d-byte limit; skipped to the next %s (raise server.max_frame if the server really sends frames this large)", d.max, StartMarker)}
}

// cut parses the header of frame (which excludes the end marker).
func (d *Decoder) cut(frame []byte, hdr int) (Frame, error) {
	f := Frame{Type: Type(frame[len(StartMarker)])}
	task := bytes.TrimRight(frame[len(StartMarker)+1:len(StartMarker)+1+TaskLen], " ")
	if string(task) == d.lastTask {
		f.Task = d.lastTask
	} else {
		f.Task = string(task)
		d.lastTask = f.Task
	}
	if len(frame) < hdr || (hdr == bracketedHeaderLen && frame[hdr-1] != ']') {
		return Frame{}, &FrameError{Reason: fmt.Sprintf("%s frame for task %q: sequence %q opens a bracket it does not close", f.Type, f.Task, frame[len(StartMarker)+1+TaskLen:min(len(frame), hdr)])}
	}
	seq := frame[len(StartMarker)+1+TaskLen : hdr]
	if hdr == bracketedHeaderLen {
		seq = seq[1 : len(seq)-1]
	}
	for _, c := range seq {
		if c < '0' || c > '9' {
			return Frame{}, &FrameError{Reason: fmt.Sprintf("%s frame for task %q: sequence %q is not 4 decimal digits", f.Type, f.Task, seq)}
		}
		f.Seq = f.Seq*10 + int(c-'0')
	}
	if p := frame[hdr:]; len(p) > 0 {
		f.Payload = p
	}
	return f, nil
}

// discard drops n bytes that lie outside any frame.
func (d *Decoder) discard(n int) {
	d.skipped += int64(n)
	d.drop(n)
}

func (d *Decoder) drop(n int) {
	d.start += n
	d.scan = 0
	if d.start == d.end {
		d.start, d.end = 0, 0
	}
}

// fill reads more input, compacting or growing the buffer within its bound.
func (d *Decoder) fill() error {
	if d.err != nil {
		return d.err
	}
	if d.start > 0 && (d.end == len(d.buf) || d.start > len(d.buf)/2) {
		d.end = copy(d.buf, d.buf[d.start:d.end])
		d.start = 0
	}
	if d.end == len(d.buf) {
		limit := d.max + readChunk
		if len(d.buf) >= limit {
			return fmt.Errorf("voice: decoder buffer full at %d bytes", len(d.buf)) // unreachable: checkLimit fires first
		}
		grown := make([]byte, min(2*len(d.buf), limit))
		copy(grown, d.buf[:d.end])
		d.buf = grown
	}
	n, err := d.r.Read(d.buf[d.end:])
	d.end += n
	if err != nil {
		d.err = err
		if n > 0 {
			return nil
		}
		return err
	}
	return nil
}
