// Package resample converts 16-bit PCM between sample rates with libsoxr, the
// SoX resampler library (Debian: libsoxr-dev at build time, libsoxr0 at run time).
//
// It owns only the rate conversion: a streaming, band-limited (anti-aliasing)
// polyphase resampler behind a small Go type. Channel mixing and device I/O
// live in package audio.
//
// A Resampler is not safe for concurrent use; give each stream its own.
package resample

/*
#cgo pkg-config: soxr
#include <stdlib.h>
#include <stdint.h>
#include <soxr.h>

static soxr_t ah_soxr_new(double in_rate, double out_rate, unsigned channels,
                          unsigned long recipe, const char **err) {
	soxr_io_spec_t io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I);
	io.flags |= SOXR_NO_DITHER;              // deterministic output
	soxr_quality_spec_t q = soxr_quality_spec(recipe, 0);
	soxr_runtime_spec_t rt = soxr_runtime_spec(1); // no worker threads
	soxr_error_t e = NULL;
	soxr_t s = soxr_create(in_rate, out_rate, channels, &e, &io, &q, &rt);
	*err = e;
	return s;
}

static const char *ah_soxr_process(soxr_t s, const int16_t *in, size_t ilen, size_t *idone,
                                   int16_t *out, size_t olen, size_t *odone) {
	return soxr_process(s, in, ilen, idone, out, olen, odone);
}

static const char *ah_soxr_flush(soxr_t s, int16_t *out, size_t olen, size_t *odone) {
	return soxr_process(s, NULL, 0, NULL, out, olen, odone);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Quality selects a libsoxr quality recipe. Every level is a proper
// band-limited filter; higher levels have a flatter pass band, a steeper
// transition and more stop-band attenuation, and cost more CPU.
type Quality int

const (
	// High is libsoxr's SOXR_HQ (20-bit precision). It is the default.
	High Quality = iota
	// Low is SOXR_LQ: 16-bit precision, larger roll-off.
	Low
	// Medium is SOXR_MQ: 16-bit precision, medium roll-off.
	Medium
	// VeryHigh is SOXR_VHQ (28-bit precision).
	VeryHigh
)

func (q Quality) recipe() (C.ulong, error) {
	switch q {
	case Low:
		return C.SOXR_LQ, nil
	case Medium:
		return C.SOXR_MQ, nil
	case High:
		return C.SOXR_HQ, nil
	case VeryHigh:
		return C.SOXR_VHQ, nil
	}
	return 0, fmt.Errorf("resample: unknown quality %d", int(q))
}

// String names the quality level.
func (q Quality) String() string {
	switch q {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	case VeryHigh:
		return "very-high"
	}
	return fmt.Sprintf("Quality(%d)", int(q))
}

// ErrClosed is returned by a Resampler used after Close.
var ErrClosed = errors.New("resample: resampler closed")

// Resampler converts a stream of interleaved int16 frames from one rate to
// another. Feed it with Append (or Process) as data arrives and call Flush at
// the end of the stream to get the samples still held in the filter.
type Resampler struct {
	h        *handle
	inRate   int
	outRate  int
	channels int
}

type handle struct{ s C.soxr_t }

// New makes a resampler from inRate to outRate (frames per second) for
// interleaved frames of the given number of channels.
func New(inRate, outRate, channels int, q Quality) (*Resampler, error) {
	if inRate <= 0 || outRate <= 0 {
		return nil, fmt.Errorf("resample: invalid rates %d -> %d", inRate, outRate)
	}
	if channels <= 0 || channels > 32 {
		return nil, fmt.Errorf("resample: invalid channel count %d", channels)
	}
	recipe, err := q.recipe()
	if err != nil {
		return nil, err
	}
	var cerr *C.char
	s := C.ah_soxr_new(C.double(inRate), C.double(outRate), C.unsigned(channels), recipe, &cerr)
	if cerr != nil || s == nil {
		msg := "unknown error"
		if cerr != nil {
			msg = C.GoString(cerr)
		}
		if s != nil {
			C.soxr_delete(s)
		}
		return nil, fmt.Errorf("resample: soxr_create %d -> %d: %s", inRate, outRate, msg)
	}
	h := &handle{s: s}
	r := &Resampler{h: h, inRate: inRate, outRate: outRate, channels: channels}
	runtime.AddCleanup(r, func(h *handle) { h.free() }, h)
	return r, nil
}

func (h *handle) free() {
	if h.s != nil {
		C.soxr_delete(h.s)
		h.s = nil
	}
}

// InRate, OutRate and Channels report the configuration.
func (r *Resampler) InRate() int { return r.inRate }

// OutRate is the output rate in frames per second.
func (r *Resampler) OutRate() int { return r.outRate }

// Channels is the number of interleaved channels per frame.
func (r *Resampler) Channels() int { return r.channels }

// Engine names the libsoxr engine in use (for logs).
func (r *Resampler) Engine() string {
	if r.h.s == nil {
		return ""
	}
	return C.GoString(C.soxr_engine(r.h.s))
}

// Delay is the number of output frames currently held inside the filter.
func (r *Resampler) Delay() float64 {
	if r.h.s == nil {
		return 0
	}
	return float64(C.soxr_delay(r.h.s))
}

// Process converts as much of in as fits into out. Both hold interleaved
// frames; lengths must be multiples of Channels. It returns the number of
// input samples consumed and output samples written (not frames).
func (r *Resampler) Process(in, out []int16) (consumed, produced int, err error) {
	if r.h.s == nil {
		return 0, 0, ErrClosed
	}
	ch := r.channels
	if len(in)%ch != 0 || len(out)%ch != 0 {
		return 0, 0, fmt.Errorf("resample: buffer lengths %d/%d not a multiple of %d channels", len(in), len(out), ch)
	}
	if len(out) == 0 {
		return 0, 0, nil
	}
	var idone, odone C.size_t
	var inp *C.int16_t
	if len(in) > 0 {
		inp = (*C.int16_t)(unsafe.Pointer(&in[0]))
	} else {
		// soxr treats a NULL input as end of stream; an empty, non-NULL
		// buffer means "nothing new yet".
		var zero int16
		inp = (*C.int16_t)(unsafe.Pointer(&zero))
	}
	cerr := C.ah_soxr_process(r.h.s, inp, C.size_t(len(in)/ch), &idone,
		(*C.int16_t)(unsafe.Pointer(&out[0])), C.size_t(len(out)/ch), &odone)
	runtime.KeepAlive(in)
	if cerr != nil {
		return 0, 0, fmt.Errorf("resample: %s", C.GoString(cerr))
	}
	return int(idone) * ch, int(odone) * ch, nil
}

// Append converts all of in and appends the output to dst.
func (r *Resampler) Append(dst, in []int16) ([]int16, error) {
	ch := r.channels
	if len(in)%ch != 0 {
		return dst, fmt.Errorf("resample: input length %d not a multiple of %d channels", len(in), ch)
	}
	// Expected output plus headroom; soxr may release a little more or
	// less than the exact ratio on any one call.
	need := (len(in)/ch*r.outRate/r.inRate + 64) * ch
	for {
		dst = grow(dst, need)
		free := dst[len(dst):cap(dst)]
		free = free[:len(free)/ch*ch]
		c, p, err := r.Process(in, free)
		if err != nil {
			return dst, err
		}
		dst = dst[:len(dst)+p]
		in = in[c:]
		if len(in) == 0 && p < len(free) {
			return dst, nil
		}
		need = len(free) + ch*64
	}
}

// Flush ends the stream: it appends to dst the output still held in the
// filter. After Flush the resampler can be Reset and reused.
func (r *Resampler) Flush(dst []int16) ([]int16, error) {
	if r.h.s == nil {
		return dst, ErrClosed
	}
	ch := r.channels
	for {
		dst = grow(dst, 1024*ch)
		free := dst[len(dst):cap(dst)]
		free = free[:len(free)/ch*ch]
		var odone C.size_t
		cerr := C.ah_soxr_flush(r.h.s, (*C.int16_t)(unsafe.Pointer(&free[0])), C.size_t(len(free)/ch), &odone)
		if cerr != nil {
			return dst, fmt.Errorf("resample: flush: %s", C.GoString(cerr))
		}
		p := int(odone) * ch
		dst = dst[:len(dst)+p]
		if p < len(free) {
			return dst, nil
		}
	}
}

// Reset clears the filter state so that a new, unrelated stream can start.
func (r *Resampler) Reset() error {
	if r.h.s == nil {
		return ErrClosed
	}
	if cerr := C.soxr_clear(r.h.s); cerr != nil {
		return fmt.Errorf("resample: reset: %s", C.GoString(cerr))
	}
	return nil
}

// Close frees the libsoxr state. It is safe to call more than once.
func (r *Resampler) Close() error {
	r.h.free()
	return nil
}

// grow makes sure dst has room for n more elements.
func grow(dst []int16, n int) []int16 {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	nd := make([]int16, len(dst), len(dst)+n+len(dst)/4)
	copy(nd, dst)
	return nd
}
