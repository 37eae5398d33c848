package opus

import (
	"bytes"
	"errors"
	"testing"
)

func TestAppendAndParseBigEndian(t *testing.T) {
	pkts := [][]byte{{0x01}, bytes.Repeat([]byte{0xAB}, 300), {0x7F, 0x80}}
	payload, err := AppendPackets(nil, pkts, BigEndian)
	if err != nil {
		t.Fatal(err)
	}
	if payload[0] != 0 || payload[1] != 1 || payload[3] != 0x01 || payload[4] != 0x2C {
		t.Fatalf("prefixes not big-endian: % x", payload[:6])
	}
	got, order, err := ParsePackets(payload)
	if err != nil || order != BigEndian {
		t.Fatalf("ParsePackets: %v, %v", order, err)
	}
	if len(got) != len(pkts) {
		t.Fatalf("%d packets, want %d", len(got), len(pkts))
	}
	for i := range pkts {
		if !bytes.Equal(got[i], pkts[i]) {
			t.Errorf("packet %d differs", i)
		}
	}
}

func TestParseFallsBackToLittleEndian(t *testing.T) {
	// Two packets of 5 and 70 bytes, little-endian: read as big-endian the
	// first length is 0x0500 = 1280, which overruns the 79-byte payload.
	pkts := [][]byte{bytes.Repeat([]byte{1}, 5), bytes.Repeat([]byte{2}, 70)}
	payload, err := AppendPackets(nil, pkts, LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePacketsOrder(payload, BigEndian); err == nil {
		t.Fatal("big-endian parse of a little-endian payload succeeded; the test needs a payload BE cannot fit")
	}
	got, order, err := ParsePackets(payload)
	if err != nil || order != LittleEndian {
		t.Fatalf("got order %v, err %v; want little-endian", order, err)
	}
	if len(got) != 2 || !bytes.Equal(got[0], pkts[0]) || !bytes.Equal(got[1], pkts[1]) {
		t.Fatalf("packets %v", got)
	}
}

func TestParsePrefersBigEndianWhenBothFit(t *testing.T) {
	// 0x00 0x01 then one byte: BE says 1 byte (fits); LE says 256 (does not).
	got, order, err := ParsePackets([]byte{0x00, 0x01, 0x42})
	if err != nil || order != BigEndian || len(got) != 1 || got[0][0] != 0x42 {
		t.Fatalf("got %v %v %v", got, order, err)
	}
	// A single packet of 0x0101 = 257 bytes fits both ways: BE wins.
	p := append([]byte{0x01, 0x01}, bytes.Repeat([]byte{9}, 257)...)
	if _, order, err := ParsePackets(p); err != nil || order != BigEndian {
		t.Fatalf("symmetric length: %v %v", order, err)
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		payload []byte
		want    error
	}{
		"one stray byte":        {[]byte{0x05}, ErrTruncated},
		"prefix without packet": {[]byte{0x00, 0x03, 0xAA}, ErrTruncated},
		"packet then stray":     {[]byte{0x00, 0x01, 0xAA, 0x00}, ErrTruncated},
		"zero length":           {[]byte{0x00, 0x00}, ErrEmptyPacket},
		"second truncated":      {[]byte{0x00, 0x01, 0xAA, 0x00, 0x09, 0x01}, ErrTruncated},
	} {
		t.Run(name, func(t *testing.T) {
			pkts, _, err := ParsePackets(tc.payload)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v (packets %v)", err, tc.want, pkts)
			}
			if pkts != nil {
				t.Errorf("packets returned with an error: %v", pkts)
			}
		})
	}
	if got, _, err := ParsePackets(nil); err != nil || len(got) != 0 {
		t.Errorf("empty payload: %v %v", got, err)
	}
	if _, err := AppendPacket(nil, nil, BigEndian); !errors.Is(err, ErrEmptyPacket) {
		t.Errorf("empty packet: %v", err)
	}
	if _, err := AppendPacket(nil, make([]byte, MaxPacketSize+1), BigEndian); !errors.Is(err, ErrPacketTooLarge) {
		t.Errorf("huge packet: %v", err)
	}
	if b, err := AppendPacket(nil, make([]byte, MaxPacketSize), LittleEndian); err != nil || b[0] != 0xFF || b[1] != 0xFF {
		t.Errorf("max packet: %v", err)
	}
}

func FuzzParsePackets(f *testing.F) {
	be, _ := AppendPackets(nil, [][]byte{{1, 2, 3}, {4}}, BigEndian)
	le, _ := AppendPackets(nil, [][]byte{bytes.Repeat([]byte{7}, 9), {4}}, LittleEndian)
	for _, s := range [][]byte{nil, {0}, {0, 0}, {0, 1, 9}, be, le, {0xFF, 0xFF, 1}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		pkts, order, err := ParsePackets(payload)
		if err != nil {
			if pkts != nil {
				t.Fatalf("packets with error %v", err)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrEmptyPacket) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if order == LittleEndian {
			if _, err := ParsePacketsOrder(payload, BigEndian); err == nil {
				t.Fatal("chose little-endian although big-endian fits")
			}
		}
		// Re-framing the packets in the detected order gives back the
		// payload byte for byte.
		again, err := AppendPackets(nil, pkts, order)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, payload) {
			t.Fatalf("re-framed % x, payload % x", again, payload)
		}
	})
}
