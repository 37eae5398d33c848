// Package audio owns the speaker's sound: capture from a microphone and
// playback to a loudspeaker behind two small interfaces, Source and Sink,
// that carry mono 16-bit samples at the wire rate (16 kHz by default), or,
// for a speaker opened at its own format (Options.Rate and Channels: 48 kHz
// stereo), interleaved frames of it.
//
// Backends: PortAudio (OpenPortAudioSource, OpenPortAudioSink, Devices) and
// files (OpenFileSource for WAV or raw s16le, CreateWAVSink). Devices are
// chosen by name or index, opened at a rate they support and converted to
// the wire format (channels mixed down or up, rates converted by libsoxr,
// see package audio/resample). A device that is missing is retried with
// backoff until it appears or the context ends; a device that fails
// mid-stream is reopened.
//
// Headless ALSA (the `file` plugin, used by tests and by machines without a
// sound card) is not paced by a clock, so pacing is done here: Paced and
// PacedSink wrap any source or sink.
//
// The package knows nothing about the voice protocol. Subpackages: opus
// (codec and wire framing), vad (level meter and energy voice activity
// detection), resample (libsoxr) and audiotest (test helpers).
package audio

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/agenthost/agenthost/audio/resample"
	"github.com/agenthost/agenthost/internal/backoff"
)

// WireRate is the default sample rate of the samples Sources deliver and
// Sinks accept: 16 kHz mono signed 16-bit.
const WireRate = 16000

// Source delivers mono samples at the wire rate. Read blocks until at least
// one sample is available and returns io.EOF at the end of a finite source.
// Close unblocks a pending Read.
type Source interface {
	Read(p []int16) (int, error)
	Close() error
}

// Sink accepts mono samples at the wire rate, or the interleaved frames of
// the format it was opened for (a speaker at its own rate and channels).
// Close flushes what is buffered (and for files finishes the file).
type Sink interface {
	Write(p []int16) (int, error)
	Close() error
}

// Format is a sample rate in frames per second and a channel count.
type Format struct {
	Rate     int
	Channels int
}

func (f Format) String() string { return fmt.Sprintf("%d Hz × %d ch", f.Rate, f.Channels) }

// ErrClosed is returned by a Source or Sink used after Close.
var ErrClosed = errors.New("audio: closed")

// Options configure sources and sinks. The zero value opens the default
// device at 16 kHz.
type Options struct {
	// Device selects the device: "" or "default" for the default device, a
	// decimal index as listed by Devices, or a case-insensitive substring
	// of the device name (an exact name wins over a substring match).
	Device string
	// Rate is the wire rate (default WireRate).
	Rate int
	// Channels is how many channels a sink's Write takes, interleaved
	// (default 1); sources always deliver mono. A PortAudio sink asks the
	// device for Rate and Channels first.
	Channels int

	// DeviceRate forces the rate the device is opened at. 0 tries Rate,
	// then the device's default rate.
	DeviceRate int
	// DeviceChannels forces the device's channel count. 0 tries Channels
	// (mono for a source), then mono, stereo and the device's maximum.
	DeviceChannels int
	// Buffer is the device buffer length (default 20 ms).
	Buffer time.Duration
	// Latency is the suggested device latency (default: the device's
	// default high latency, the robust choice on a Raspberry Pi).
	Latency time.Duration
	// Quality of the rate conversion (default resample.High).
	Quality resample.Quality

	// Retry is the backoff for opening a missing or failed device; a zero
	// Base means no retry (as FailFast).
	Retry backoff.Backoff
	// FailFast returns the first open error instead of retrying.
	FailFast bool
	// OnRetry, if set, is called after each failed open attempt (1-based)
	// with the error, before waiting.
	OnRetry func(attempt int, err error)
	// Logger receives warnings (device lost, retrying). Default slog.Default().
	Logger *slog.Logger
	// OnOpen, if set, is told the device and the format it was opened at,
	// each time it is (re)opened.
	OnOpen func(Device, Format)

	// File sources: Loop restarts at the end instead of returning io.EOF.
	Loop bool
	// File sources: the format of a raw (headerless) file; default mono at
	// Rate. WAV files carry their own format.
	RawFormat Format
}

func (o Options) withDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = WireRate
	}
	if o.Channels <= 0 {
		o.Channels = 1
	}
	if o.Buffer <= 0 {
		o.Buffer = 20 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("component", "audio")
	if o.RawFormat.Rate <= 0 {
		o.RawFormat.Rate = o.Rate
	}
	if o.RawFormat.Channels <= 0 {
		o.RawFormat.Channels = 1
	}
	return o
}

// ReadFull reads exactly len(p) samples from src, like io.ReadFull. It
// returns io.ErrUnexpectedEOF if the source ends after some samples and
// io.EOF if it ends before any.
func ReadFull(src Source, p []int16) (int, error) {
	n := 0
	for n < len(p) {
		m, err := src.Read(p[n:])
		n += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				if n == 0 {
					return 0, io.EOF
				}
				if n < len(p) {
					return n, io.ErrUnexpectedEOF
				}
				return n, nil
			}
			return n, err
		}
	}
	return n, nil
}
