package voice

import (
	"bytes"
	"io"
	"testing"
)

func FuzzDecode(f *testing.F) {
	f.Add([]byte("##START\x06mcp00001[0000]{\"type\":\"call\"}##END"), uint16(0))
	f.Add([]byte("junk##START\x04task12340000hi##END##START\x03task12340001##END"), uint16(40))
	f.Add([]byte("##START\x02t       0000###END##START##END"), uint16(30))
	f.Add([]byte("##START\x04abc12345[12]x##END"), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		max := DefaultMaxFrame
		if limit > 0 {
			max = int(limit)
		}
		d := NewDecoder(bytes.NewReader(data), WithMaxFrame(max))
		max = d.MaxFrame()
		for i := 0; i <= len(data); i++ {
			fr, err := d.Decode()
			if cap(d.buf) > max+readChunk {
				t.Fatalf("buffer %d exceeds the bound %d", cap(d.buf), max+readChunk)
			}
			if err != nil {
				if IsFrameError(err) {
					continue
				}
				if err != io.EOF && err != io.ErrUnexpectedEOF && !bytes.Contains([]byte(err.Error()), []byte("unexpected EOF")) {
					t.Fatalf("unexpected final error %v", err)
				}
				return
			}
			if n := headerLen + len(fr.Payload) + len(EndMarker); n > max+2 {
				t.Fatalf("frame of %d bytes passed a %d-byte limit", n, max)
			}
			enc, err := AppendFrame(nil, fr)
			if err != nil {
				t.Fatalf("a decoded frame does not re-encode: %v (%q)", err, fr.Payload)
			}
			again, err := NewDecoder(bytes.NewReader(enc), WithMaxFrame(len(enc))).Decode()
			if err != nil || again.Type != fr.Type || again.Task != fr.Task || again.Seq != fr.Seq || !bytes.Equal(again.Payload, fr.Payload) {
				t.Fatalf("decode→encode→decode unstable: %v then %v (%v)", fr, again, err)
			}
		}
		t.Fatalf("decoder made no progress")
	})
}
