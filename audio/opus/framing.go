// Package opus encodes and decodes the speaker's Opus audio (60 ms frames of
// 16 kHz mono by default, through libopus via gopkg.in/hraban/opus.v2) and
// implements the wire framing of Opus packets: each packet preceded by its
// length in 2 bytes, big-endian, several packets possibly in one payload.
//
// The framing functions (AppendPacket, ParsePackets, ...) are plain Go and
// are always available; the codec (Encoder, Decoder) needs cgo and
// libopus/libopusfile (Debian: libopus-dev libopusfile-dev). The package
// knows nothing else about the voice protocol.
package opus

import (
	"errors"
	"fmt"
)

// ByteOrder is the byte order of the 2-byte length prefix.
type ByteOrder uint8

const (
	// BigEndian (network order) is what the speaker sends.
	BigEndian ByteOrder = iota
	// LittleEndian is accepted when big-endian cannot describe a payload.
	LittleEndian
)

func (o ByteOrder) String() string {
	switch o {
	case BigEndian:
		return "big-endian"
	case LittleEndian:
		return "little-endian"
	}
	return fmt.Sprintf("ByteOrder(%d)", uint8(o))
}

// MaxPacketSize is the largest packet a 2-byte length can describe.
const MaxPacketSize = 0xFFFF

// Framing errors.
var (
	// ErrTruncated: a length prefix or the packet it announces runs past
	// the end of the payload.
	ErrTruncated = errors.New("opus: truncated packet framing")
	// ErrEmptyPacket: a length prefix of 0 (an Opus packet has at least
	// its TOC byte).
	ErrEmptyPacket = errors.New("opus: empty packet in framing")
	// ErrPacketTooLarge: a packet longer than MaxPacketSize.
	ErrPacketTooLarge = errors.New("opus: packet too large for a 2-byte length")
)

// AppendPacket appends pkt preceded by its 2-byte length in order.
func AppendPacket(dst, pkt []byte, order ByteOrder) ([]byte, error) {
	switch {
	case len(pkt) == 0:
		return dst, ErrEmptyPacket
	case len(pkt) > MaxPacketSize:
		return dst, fmt.Errorf("%w: %d bytes", ErrPacketTooLarge, len(pkt))
	}
	n := uint16(len(pkt))
	if order == LittleEndian {
		dst = append(dst, byte(n), byte(n>>8))
	} else {
		dst = append(dst, byte(n>>8), byte(n))
	}
	return append(dst, pkt...), nil
}

// AppendPackets appends every packet with its length prefix.
func AppendPackets(dst []byte, pkts [][]byte, order ByteOrder) ([]byte, error) {
	for i, p := range pkts {
		var err error
		if dst, err = AppendPacket(dst, p, order); err != nil {
			return dst, fmt.Errorf("packet %d: %w", i, err)
		}
	}
	return dst, nil
}

// ParsePacketsOrder splits payload into length-prefixed packets read in the
// given byte order. The packets alias payload. An empty payload has no
// packets.
func ParsePacketsOrder(payload []byte, order ByteOrder) ([][]byte, error) {
	var pkts [][]byte
	for off := 0; off < len(payload); {
		if len(payload)-off < 2 {
			return nil, fmt.Errorf("%w: %d stray byte(s) at offset %d", ErrTruncated, len(payload)-off, off)
		}
		var n int
		if order == LittleEndian {
			n = int(payload[off]) | int(payload[off+1])<<8
		} else {
			n = int(payload[off])<<8 | int(payload[off+1])
		}
		off += 2
		if n == 0 {
			return nil, fmt.Errorf("%w at offset %d", ErrEmptyPacket, off-2)
		}
		if n > len(payload)-off {
			return nil, fmt.Errorf("%w: %s length %d at offset %d, %d bytes left", ErrTruncated, order, n, off-2, len(payload)-off)
		}
		pkts = append(pkts, payload[off:off+n:off+n])
		off += n
	}
	return pkts, nil
}

// ParsePackets splits payload into length-prefixed packets. It reads the
// lengths as big-endian; if that does not describe the payload exactly and
// little-endian does, it uses little-endian. It returns the packets (which
// alias payload) and the byte order that fitted, or the big-endian error if
// neither fits.
func ParsePackets(payload []byte) ([][]byte, ByteOrder, error) {
	pkts, err := ParsePacketsOrder(payload, BigEndian)
	if err == nil {
		return pkts, BigEndian, nil
	}
	if le, lerr := ParsePacketsOrder(payload, LittleEndian); lerr == nil {
		return le, LittleEndian, nil
	}
	return nil, BigEndian, err
}
