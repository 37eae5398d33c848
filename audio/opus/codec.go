//go:build cgo

package opus

import (
	"fmt"
	"time"

	hraban "gopkg.in/hraban/opus.v2"
)

// Defaults of the speaker's uplink: 60 ms frames of 16 kHz mono.
const (
	DefaultRate     = 16000
	DefaultChannels = 1
	DefaultFrame    = 60 * time.Millisecond
)

// SpeechComplexity is the encoder complexity for a speaker's microphone:
// speech for a recogniser at 16 kHz loses nothing audible below libopus's
// default (9 or 10), and the encoder costs half the CPU, which a Pi Zero
// needs (BenchmarkEncodeDecodeSpeech compares the two).
const SpeechComplexity = 5

// maxPacket bounds one encoded packet; libopus never exceeds 1275 bytes per
// 20 ms frame, so 60 ms needs at most 3 × 1275 plus a little framing.
const maxPacket = 4000

// Application is the libopus coding mode.
type Application int

const (
	// VoIP favours speech intelligibility (the default).
	VoIP Application = iota
	// Audio favours faithfulness for music and mixed content.
	Audio
	// LowDelay disables the speech modes for the lowest latency.
	LowDelay
)

func (a Application) lib() (hraban.Application, error) {
	switch a {
	case VoIP:
		return hraban.AppVoIP, nil
	case Audio:
		return hraban.AppAudio, nil
	case LowDelay:
		return hraban.AppRestrictedLowdelay, nil
	}
	return 0, fmt.Errorf("opus: unknown application %d", int(a))
}

// EncoderOptions configure an Encoder. The zero value is 60 ms frames of
// 16 kHz mono speech at libopus's default bitrate.
type EncoderOptions struct {
	Rate     int           // 8000, 12000, 16000, 24000 or 48000; default 16000
	Channels int           // 1 or 2; default 1
	Frame    time.Duration // 2.5, 5, 10, 20, 40 or 60 ms; default 60 ms
	// Bitrate in bits per second; 0 leaves libopus's choice.
	Bitrate int
	// Complexity 1..10; 0 leaves libopus's default (9 or 10).
	Complexity  int
	Application Application
	// DTX lets the encoder send tiny packets during silence.
	DTX bool
}

// Encoder turns fixed-size PCM frames into Opus packets.
type Encoder struct {
	enc     *hraban.Encoder
	samples int // per channel per frame
	chans   int
	buf     []byte
}

func validFrame(rate int, d time.Duration) (int, error) {
	switch d {
	case 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
		20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond:
		return int(int64(rate) * int64(d) / int64(time.Second)), nil
	}
	return 0, fmt.Errorf("opus: frame duration %v not one of 2.5, 5, 10, 20, 40, 60 ms", d)
}

// NewEncoder makes an encoder.
func NewEncoder(o EncoderOptions) (*Encoder, error) {
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Channels == 0 {
		o.Channels = DefaultChannels
	}
	if o.Frame == 0 {
		o.Frame = DefaultFrame
	}
	n, err := validFrame(o.Rate, o.Frame)
	if err != nil {
		return nil, err
	}
	app, err := o.Application.lib()
	if err != nil {
		return nil, err
	}
	enc, err := hraban.NewEncoder(o.Rate, o.Channels, app)
	if err != nil {
		return nil, fmt.Errorf("opus: new encoder (%d Hz, %d ch): %w", o.Rate, o.Channels, err)
	}
	if o.Bitrate > 0 {
		if err := enc.SetBitrate(o.Bitrate); err != nil {
			return nil, fmt.Errorf("opus: bitrate %d: %w", o.Bitrate, err)
		}
	}
	if o.Complexity > 0 {
		if err := enc.SetComplexity(o.Complexity); err != nil {
			return nil, fmt.Errorf("opus: complexity %d: %w", o.Complexity, err)
		}
	}
	if o.DTX {
		if err := enc.SetDTX(true); err != nil {
			return nil, fmt.Errorf("opus: DTX: %w", err)
		}
	}
	return &Encoder{enc: enc, samples: n, chans: o.Channels, buf: make([]byte, maxPacket)}, nil
}

// FrameSamples is the number of int16 values (all channels) Encode takes.
func (e *Encoder) FrameSamples() int { return e.samples * e.chans }

// Encode encodes exactly one frame (FrameSamples interleaved samples) and
// returns a new packet.
func (e *Encoder) Encode(pcm []int16) ([]byte, error) {
	return e.AppendEncode(nil, pcm)
}

// AppendEncode encodes one frame and appends the packet to dst.
func (e *Encoder) AppendEncode(dst []byte, pcm []int16) ([]byte, error) {
	if len(pcm) != e.FrameSamples() {
		return dst, fmt.Errorf("opus: encode %d samples, want exactly %d (one frame)", len(pcm), e.FrameSamples())
	}
	n, err := e.enc.Encode(pcm, e.buf)
	if err != nil {
		return dst, fmt.Errorf("opus: encode: %w", err)
	}
	return append(dst, e.buf[:n]...), nil
}

// AppendEncodeFramed encodes one frame and appends it with its 2-byte
// length prefix in order.
func (e *Encoder) AppendEncodeFramed(dst []byte, pcm []int16, order ByteOrder) ([]byte, error) {
	if len(pcm) != e.FrameSamples() {
		return dst, fmt.Errorf("opus: encode %d samples, want exactly %d (one frame)", len(pcm), e.FrameSamples())
	}
	n, err := e.enc.Encode(pcm, e.buf)
	if err != nil {
		return dst, fmt.Errorf("opus: encode: %w", err)
	}
	return AppendPacket(dst, e.buf[:n], order)
}

// Reset clears the encoder's state, for a new, unrelated stream.
func (e *Encoder) Reset() error { return e.enc.Reset() }

// DecoderOptions configure a Decoder; the zero value is 16 kHz mono.
type DecoderOptions struct {
	Rate     int // output rate; default 16000
	Channels int // output channels; default 1
}

// Decoder turns Opus packets into PCM.
type Decoder struct {
	dec   *hraban.Decoder
	rate  int
	chans int
	buf   []int16
}

// NewDecoder makes a decoder.
func NewDecoder(o DecoderOptions) (*Decoder, error) {
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Channels == 0 {
		o.Channels = DefaultChannels
	}
	dec, err := hraban.NewDecoder(o.Rate, o.Channels)
	if err != nil {
		return nil, fmt.Errorf("opus: new decoder (%d Hz, %d ch): %w", o.Rate, o.Channels, err)
	}
	// 120 ms is the longest packet Opus allows.
	return &Decoder{dec: dec, rate: o.Rate, chans: o.Channels, buf: make([]int16, o.Rate*120/1000*o.Channels)}, nil
}

// Decode decodes one packet into new interleaved samples.
func (d *Decoder) Decode(pkt []byte) ([]int16, error) {
	return d.AppendDecode(nil, pkt)
}

// AppendDecode decodes one packet and appends its samples to dst.
func (d *Decoder) AppendDecode(dst []int16, pkt []byte) ([]int16, error) {
	if len(pkt) == 0 {
		return dst, ErrEmptyPacket
	}
	n, err := d.dec.Decode(pkt, d.buf)
	if err != nil {
		return dst, fmt.Errorf("opus: decode %d-byte packet: %w", len(pkt), err)
	}
	return append(dst, d.buf[:n*d.chans]...), nil
}

// AppendLost appends samples concealing a lost packet of the given
// duration (packet loss concealment), e.g. when a jitter buffer runs dry.
func (d *Decoder) AppendLost(dst []int16, dur time.Duration) ([]int16, error) {
	n := int(int64(d.rate)*int64(dur)/int64(time.Second)) * d.chans
	if n <= 0 || n > len(d.buf) {
		return dst, fmt.Errorf("opus: concealment of %v not possible (2.5 to 120 ms)", dur)
	}
	if err := d.dec.DecodePLC(d.buf[:n]); err != nil {
		return dst, fmt.Errorf("opus: concealment: %w", err)
	}
	return append(dst, d.buf[:n]...), nil
}

// AppendDecodePayload decodes every length-prefixed packet in payload (byte
// order detected as by ParsePackets) and appends the samples to dst.
func (d *Decoder) AppendDecodePayload(dst []int16, payload []byte) ([]int16, error) {
	pkts, _, err := ParsePackets(payload)
	if err != nil {
		return dst, err
	}
	for _, p := range pkts {
		if dst, err = d.AppendDecode(dst, p); err != nil {
			return dst, err
		}
	}
	return dst, nil
}
