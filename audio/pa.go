package audio

// A minimal cgo binding of PortAudio's blocking API. (The Go binding
// github.com/gordonklaus/portaudio converts a stream id to unsafe.Pointer
// in OpenStream, which -race's checkptr instrumentation rejects from the
// second stream of a process on; the blocking API is small enough to bind
// directly.)

/*
#cgo pkg-config: portaudio-2.0 alsa jack
#include <stdlib.h>
#include <portaudio.h>
#include <alsa/asoundlib.h>
#include <jack/jack.h>

static void ah_silent_alsa(const char *file, int line, const char *fn, int err, const char *fmt, ...) {}
static void ah_silent_jack(const char *msg) {}

// ah_quiet_audio_libs stops ALSA and JACK from printing their probing noise
// ("cannot find card", "jack server is not running", ...) on stderr.
static void ah_quiet_audio_libs(void) {
	snd_lib_error_set_handler(ah_silent_alsa);
	jack_set_error_function(ah_silent_jack);
	jack_set_info_function(ah_silent_jack);
}

static PaError ah_open(void **s, int device, int channels, int input, double rate,
                       unsigned long frames, double latency) {
	PaStreamParameters p;
	p.device = device;
	p.channelCount = channels;
	p.sampleFormat = paInt16;
	p.suggestedLatency = latency;
	p.hostApiSpecificStreamInfo = NULL;
	return Pa_OpenStream(s, input ? &p : NULL, input ? NULL : &p, rate, frames, paNoFlag, NULL, NULL);
}

static PaError ah_supported(int device, int channels, int input, double rate, double latency) {
	PaStreamParameters p;
	p.device = device;
	p.channelCount = channels;
	p.sampleFormat = paInt16;
	p.suggestedLatency = latency;
	p.hostApiSpecificStreamInfo = NULL;
	return Pa_IsFormatSupported(input ? &p : NULL, input ? NULL : &p, rate);
}

static const char *ah_host_error(void) {
	const PaHostErrorInfo *i = Pa_GetLastHostErrorInfo();
	return i && i->errorText ? i->errorText : "";
}
*/
import "C"

import (
	"os"
	"time"
	"unsafe"
)

// paError is a PortAudio error code.
type paError C.PaError

func (e paError) Error() string {
	msg := C.GoString(C.Pa_GetErrorText(C.PaError(e)))
	if C.PaError(e) == C.paUnanticipatedHostError {
		if h := C.GoString(C.ah_host_error()); h != "" {
			msg += ": " + h
		}
	}
	return "PortAudio: " + msg
}

func paErr(code C.PaError) error {
	if code >= 0 {
		return nil
	}
	return paError(code)
}

const (
	paInputOverflowed   = paError(C.paInputOverflowed)
	paOutputUnderflowed = paError(C.paOutputUnderflowed)
)

func paInitialize() error {
	if os.Getenv(VerboseEnv) == "" {
		C.ah_quiet_audio_libs()
	}
	return paErr(C.Pa_Initialize())
}

func paTerminate() error { return paErr(C.Pa_Terminate()) }

// paDevice is what PortAudio tells about a device, plus the latencies the
// package needs to open it.
type paDevice struct {
	Device
	highInLatency, highOutLatency time.Duration
}

func paDevices() ([]paDevice, error) {
	n := C.Pa_GetDeviceCount()
	if n < 0 {
		return nil, paErr(C.PaError(n))
	}
	defIn, defOut := C.Pa_GetDefaultInputDevice(), C.Pa_GetDefaultOutputDevice()
	out := make([]paDevice, 0, int(n))
	for i := C.PaDeviceIndex(0); i < n; i++ {
		info := C.Pa_GetDeviceInfo(i)
		if info == nil {
			continue
		}
		d := paDevice{
			Device: Device{
				Index: int(i), Name: C.GoString(info.name),
				MaxInputChannels: int(info.maxInputChannels), MaxOutputChannels: int(info.maxOutputChannels),
				DefaultRate:  float64(info.defaultSampleRate),
				DefaultInput: i == defIn, DefaultOutput: i == defOut,
			},
			highInLatency:  seconds(info.defaultHighInputLatency),
			highOutLatency: seconds(info.defaultHighOutputLatency),
		}
		if h := C.Pa_GetHostApiInfo(info.hostApi); h != nil {
			d.HostAPI = C.GoString(h.name)
		}
		out = append(out, d)
	}
	return out, nil
}

func seconds(t C.PaTime) time.Duration { return time.Duration(float64(t) * float64(time.Second)) }

// paHandle is an open blocking int16 stream.
type paHandle struct {
	s        unsafe.Pointer // *C.PaStream
	channels int
}

func paSupported(dev, channels int, input bool, rate float64, latency time.Duration) error {
	return paErr(C.ah_supported(C.int(dev), C.int(channels), cbool(input), C.double(rate), C.double(latency.Seconds())))
}

func paOpen(dev, channels int, input bool, rate float64, frames int, latency time.Duration) (*paHandle, error) {
	var s unsafe.Pointer
	err := paErr(C.ah_open(&s, C.int(dev), C.int(channels), cbool(input),
		C.double(rate), C.ulong(frames), C.double(latency.Seconds())))
	if err != nil {
		return nil, err
	}
	return &paHandle{s: s, channels: channels}, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// latency is what PortAudio reports for the open stream: how old the
// newest sample read is, or how long a sample written to a full buffer
// waits before it is heard.
func (h *paHandle) latency(input bool) time.Duration {
	info := C.Pa_GetStreamInfo(h.s)
	if info == nil {
		return 0
	}
	if input {
		return seconds(info.inputLatency)
	}
	return seconds(info.outputLatency)
}

func (h *paHandle) start() error { return paErr(C.Pa_StartStream(h.s)) }
func (h *paHandle) stop() error  { return paErr(C.Pa_StopStream(h.s)) }
func (h *paHandle) abort() error { return paErr(C.Pa_AbortStream(h.s)) }
func (h *paHandle) close() error { return paErr(C.Pa_CloseStream(h.s)) }

// read fills buf (interleaved frames) from the stream.
func (h *paHandle) read(buf []int16) error {
	if len(buf) < h.channels {
		return nil
	}
	return paErr(C.Pa_ReadStream(h.s, unsafe.Pointer(&buf[0]), C.ulong(len(buf)/h.channels)))
}

// write plays buf (interleaved frames).
func (h *paHandle) write(buf []int16) error {
	if len(buf) < h.channels {
		return nil
	}
	return paErr(C.Pa_WriteStream(h.s, unsafe.Pointer(&buf[0]), C.ulong(len(buf)/h.channels)))
}
