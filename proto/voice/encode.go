package voice

import (
	"bytes"
	"fmt"
	"io"
)

// AppendFrame appends the canonical wire form of f to dst: the task id padded
// with spaces to 8 bytes and a 4-digit sequence number (wrapped modulo 10000).
// It refuses a frame that cannot be delimited: a task id over 8 bytes, or a
// payload that contains a frame marker.
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if err := Check(f); err != nil {
		return dst, err
	}
	dst = append(dst, StartMarker...)
	dst = append(dst, byte(f.Type))
	dst = append(dst, f.Task...)
	for i := len(f.Task); i < TaskLen; i++ {
		dst = append(dst, ' ')
	}
	seq := f.Seq % SeqModulo
	dst = append(dst, byte('0'+seq/1000), byte('0'+seq/100%10), byte('0'+seq/10%10), byte('0'+seq%10))
	dst = append(dst, f.Payload...)
	return append(dst, EndMarker...), nil
}

// Check reports why f cannot be framed, or nil.
func Check(f Frame) error {
	if len(f.Task) > TaskLen {
		return fmt.Errorf("voice: task id %q is %d bytes; the wire allows at most %d", f.Task, len(f.Task), TaskLen)
	}
	if f.Seq < 0 {
		return fmt.Errorf("voice: %s frame: negative sequence number %d", f.Type, f.Seq)
	}
	for _, m := range [][]byte{endBytes, startBytes} {
		if bytes.Contains(f.Payload, m) {
			return fmt.Errorf("voice: %s frame for task %q: payload contains %q, which would end the frame early; remove it from the text", f.Type, f.Task, m)
		}
	}
	return nil
}

// Encoder writes frames to a writer, one Write per frame.
type Encoder struct {
	w   io.Writer
	buf []byte
}

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes one frame. A frame that cannot be framed is refused before
// anything is written.
func (e *Encoder) Encode(f Frame) error {
	b, err := AppendFrame(e.buf[:0], f)
	if err != nil {
		return err
	}
	e.buf = b
	_, err = e.w.Write(b)
	return err
}

// SanitizeAudio changes the rare PCM or Opus byte runs that spell a frame
// marker by one bit so the frame can be delimited; the audible effect is nil.
func SanitizeAudio(p []byte) {
	for _, m := range [][]byte{endBytes, startBytes} {
		for i := bytes.Index(p, m); i >= 0; i = bytes.Index(p, m) {
			p[i+1] ^= 1 // "##" becomes "#\""
		}
	}
}
